"""SkyRL's native trainer tree, taken from the installed SkyRL and wired to the key map.

Registered in Hydra's ConfigStore as `skyrl_native/planted` (conf/backend/skyrl.yaml
includes it), so every native key exists in the composed config and can be overridden
by its full path without `+`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.keymap import KEY_MAPPINGS

NATIVE_ROOT = "skyrl"


@contextlib.contextmanager
def quiet_skyrl() -> Iterator[None]:
    """Silence SkyRL's loguru notices (e.g. "no vLLM" on import): noise for a config tool."""
    from loguru import logger

    logger.disable("skyrl")
    try:
        yield
    finally:
        logger.enable("skyrl")


@functools.cache
def skyrl_train_defaults() -> dict[str, Any]:
    """SkyRLTrainConfig() as a plain dict (SkyRL's own defaults, about 420 leaves)."""
    with quiet_skyrl():
        from skyrl.train.config import SkyRLTrainConfig, get_config_as_yaml_str

        return OmegaConf.to_container(OmegaConf.create(get_config_as_yaml_str(SkyRLTrainConfig())))


def planted_tree() -> DictConfig:
    """The native subtree (relative to `skyrl`) with the key map's interpolations planted."""
    tree = OmegaConf.create({"train": skyrl_train_defaults(), "jax": {}})
    prefix = NATIVE_ROOT + "."
    for mapping in KEY_MAPPINGS:
        path = mapping.native.removeprefix(prefix)
        OmegaConf.update(tree, path, mapping.interpolation(), merge=False, force_add=True)
    return tree


def register() -> None:
    """Make `skyrl_native/planted` available to Hydra (idempotent)."""
    ConfigStore.instance().store(group="skyrl_native", name="planted", node=planted_tree())
