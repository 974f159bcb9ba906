"""From overrides to a config that is safe to run: compose, reconcile, validate."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable

from omegaconf import DictConfig

from rllm_sweeps.config.compose import compose_config
from rllm_sweeps.config.overrides import parse_overrides, unknown_key_issues
from rllm_sweeps.config.validate import ConfigError, ConfigIssue, validate
from rllm_sweeps.keymap import reconcile

Notify = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def check_override_keys(overrides: Iterable[str], where: str = "") -> None:
    """Reject overrides of unknown keys (all at once) before anything else composes."""
    parsed = parse_overrides(overrides)
    base = compose_config([o.input_line for o in parsed.groups])
    issues = unknown_key_issues(base, parsed.values, where)
    if issues:
        raise ConfigError(issues, where)


def finalize(cfg: DictConfig, overrides: Iterable[str], where: str = "", notify: Notify = _stderr) -> DictConfig:
    """Reconcile common/native names and validate, in place. Raises ConfigError."""
    explicit = parse_overrides(overrides).explicit_keys
    result = reconcile(cfg, explicit)
    issues = [ConfigIssue(c.split("=", 1)[0], c) for c in result.conflicts]
    if not issues:
        issues = validate(cfg)
    if issues:
        raise ConfigError(issues, where)
    for common, native, value in result.adopted:
        notify(f"note: {native} is SkyRL's name for {common}; using {common}={value!r}")
    return cfg


def load_config(overrides: Iterable[str] = (), where: str = "", notify: Notify = _stderr) -> DictConfig:
    """The validated config for these overrides (what a job runs with)."""
    overrides = list(overrides)
    check_override_keys(overrides, where)
    return finalize(compose_config(overrides), overrides, where, notify)
