"""Compose the config tree (conf/) outside of a Hydra app: tests, the CLI, the sweeper."""

from __future__ import annotations

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig

from rllm_sweeps.config import native
from rllm_sweeps.config.paths import REPO_ROOT, checkout_file

CONF_DIR = REPO_ROOT / "conf"
CONFIG_NAME = "config"


def compose_config(overrides: list[str] | tuple[str, ...] = ()) -> DictConfig:
    """The composed (not yet reconciled or validated) config for these overrides.

    Works inside a running Hydra app too (the sweeper plans from within `train.py -m`):
    the app's Hydra instance is set aside for the composition and put back after.
    """
    native.register()
    global_hydra = GlobalHydra.instance()
    app_hydra = global_hydra.hydra if global_hydra.is_initialized() else None
    global_hydra.clear()
    try:
        with initialize_config_dir(str(checkout_file(CONF_DIR)), version_base=None):
            return compose(CONFIG_NAME, overrides=list(overrides))
    finally:
        if app_hydra is not None:
            GlobalHydra.instance().initialize(app_hydra)
