"""Compose the config tree (conf/) outside of a Hydra app: tests, the CLI, the sweeper."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from rllm_sweeps.config import native

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
CONFIG_NAME = "config"


def compose_config(overrides: list[str] | tuple[str, ...] = ()) -> DictConfig:
    """The composed (not yet reconciled or validated) config for these overrides."""
    native.register()
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        return compose(CONFIG_NAME, overrides=list(overrides))
