"""Compose the config tree outside of a Hydra app (tests, the CLI, the sweeper), with Hydra's own
loader over the user's search path (config/source.py): what the app's Hydra composes, nothing else."""

from __future__ import annotations

from hydra import compose
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig

from rllm_sweeps.config import native
from rllm_sweeps.config.private_api import start_hydra
from rllm_sweeps.config.source import CONF_DIR, CONFIG_NAME, ConfigSource, current_source


def compose_config(
    overrides: list[str] | tuple[str, ...] = (), source: ConfigSource | None = None, with_hydra: bool = False
) -> DictConfig:
    """The composed (not yet reconciled or validated) config for these overrides, with `source`'s
    search path (default: this process's, config/source.py); with_hydra: and Hydra's own node
    (`hydra.launcher`, `hydra.runtime.choices`), as the app composes it.

    Works inside a running Hydra app too (the sweeper plans from within `train.py -m`):
    the app's Hydra instance is set aside for the composition and put back after.
    """
    native.register()
    source = source or current_source()
    global_hydra = GlobalHydra.instance()
    app_hydra = global_hydra.hydra if global_hydra.is_initialized() else None
    global_hydra.clear()
    try:
        start_hydra(source)
        return compose(source.config_name, overrides=source.with_searchpath(overrides), return_hydra_config=with_hydra)
    finally:
        GlobalHydra.instance().clear()
        if app_hydra is not None:
            GlobalHydra.instance().initialize(app_hydra)


__all__ = ["CONFIG_NAME", "CONF_DIR", "compose_config"]
