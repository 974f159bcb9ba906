"""From overrides to a config that is safe to run: compose, reconcile, validate."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable

from omegaconf import DictConfig, OmegaConf

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
    issues = unknown_key_issues(base, parsed.values)
    if issues:
        raise ConfigError(issues, where)


def finalize(cfg: DictConfig, overrides: Iterable[str], where: str = "", notify: Notify = _stderr) -> DictConfig:
    """Reconcile common/native names and validate, in place. Raises ConfigError."""
    explicit = parse_overrides(overrides).explicit_keys
    result = reconcile(cfg, explicit)
    issues = [ConfigIssue(c.split("=", 1)[0], c) for c in result.conflicts]
    if not issues:
        # A bad value that came in through a native name is reported under both names.
        origin = {common: f" (set through {native}={value!r})" for common, native, value in result.adopted}
        issues = [ConfigIssue(i.key, i.message + origin.get(i.key, "")) for i in validate(cfg, explicit)]
    if issues:
        raise ConfigError(issues, where)
    for common, native, _ in result.adopted:
        value = OmegaConf.select(cfg, common)
        value = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
        notify(f"note: {native} is SkyRL's name for {common}; using {common}={value!r}")
    return cfg


def load_config(overrides: Iterable[str] = (), where: str = "", notify: Notify = _stderr) -> DictConfig:
    """The validated config for these overrides (what a job runs with)."""
    overrides = list(overrides)
    check_override_keys(overrides, where)
    return finalize(compose_config(overrides), overrides, where, notify)
