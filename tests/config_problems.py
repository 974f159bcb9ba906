"""Helpers for the config tests: compose quietly, and the problems of a config that must not run."""

from __future__ import annotations

import pytest

from rllm_sweeps.config.load import load_config
from rllm_sweeps.problems import ConfigError


def quiet(_: str) -> None:
    pass


def problems(overrides: list[str]) -> dict[str, str]:
    """The message of every problem of `overrides`, by key (the config must be refused)."""
    with pytest.raises(ConfigError) as info:
        load_config(overrides, notify=quiet)
    return {i.key: i.message for i in info.value.issues}
