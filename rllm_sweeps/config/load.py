"""From overrides to a config that is safe to run: compose, reconcile, validate."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable

from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.config.compose import compose_config
from rllm_sweeps.config.override_values import is_sweep
from rllm_sweeps.config.overrides import parse_overrides, unknown_choice_issues, unknown_key_issues
from rllm_sweeps.config.reconcile import reconcile
from rllm_sweeps.config.spelling import canonical_overrides
from rllm_sweeps.config.validate import validate
from rllm_sweeps.keymap import KEY_MAPPINGS
from rllm_sweeps.native_keys import SKYRL_TRAIN
from rllm_sweeps.override_text import split_override
from rllm_sweeps.problems import ConfigError, ConfigIssue

Notify = Callable[[str], None]


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def unknown_overrides(overrides: list[str], where: str = "") -> tuple[list[ConfigIssue], list[str]]:
    """(issues, lines) of the overrides whose keys do not exist (all at once, with suggestions);
    a line Hydra cannot parse raises ConfigError: nothing composes without it."""
    try:
        parsed = parse_overrides(overrides)
    except Exception as err:  # Hydra's override grammar: one line, not a traceback
        raise ConfigError([syntax_issue(overrides, err)], where) from None
    choices = unknown_choice_issues(parsed.groups)
    if choices:  # nothing composes with them
        raise ConfigError(choices, where)
    # A group swept with -m (task=a,b) is not one composition: its choices were checked above, and
    # the sweeper composes and checks each job with its own. Hydra's own groups (hydra/launcher=NAME)
    # hold no key of the job's, and may come from the user's search path (--config-dir): Hydra composes them.
    own = [o for o in parsed.groups if not o.is_sweep_override() and not o.key_or_group.startswith("hydra/")]
    base = compose_config([o.input_line for o in own])
    issues = unknown_key_issues(base, parsed.values)
    bad = {i.key for i in issues}
    return issues, [o.input_line for o in parsed.values if o.key_or_group in bad]


def check_override_keys(overrides: Iterable[str], where: str = "") -> None:
    """Reject overrides of unknown keys (all at once) before anything else composes."""
    issues, _ = unknown_overrides(canonical_overrides(overrides), where)  # notes: load_config gives them
    if issues:
        raise ConfigError(issues, where)


def syntax_issue(overrides: Iterable[str], err: BaseException) -> ConfigIssue:
    """The first override Hydra cannot parse, with Hydra's reason."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for line in overrides:
        try:
            parser.parse_override(line)
        except Exception as bad:
            reason = str(bad).strip().splitlines()[0]
            return ConfigIssue(
                line, f"cannot parse the override '{line}': {reason} (Hydra's override syntax: KEY=VALUE)"
            )
    return ConfigIssue("?", f"cannot parse the overrides: {str(err).strip().splitlines()[0]}")


def finalize(
    cfg: DictConfig, overrides: Iterable[str], where: str = "", notify: Notify = _stderr, check: bool = True
) -> DictConfig:
    """Reconcile common/native names and validate (unless `check` is False: the same overrides
    were validated already in this process), in place. Raises ConfigError."""
    from rllm_sweeps.config.defaults_rule import apply_default_rules

    explicit = parse_overrides(overrides).explicit_keys
    result = reconcile(cfg, explicit)
    apply_default_rules(cfg, explicit)
    issues = [ConfigIssue(c.split("=", 1)[0], c) for c in result.conflicts]
    if check:
        # Every problem at once: a conflict's keys aside (which of their values counts is the question).
        conflicting = {i.key for i in issues}
        conflicting |= {m.native for m in KEY_MAPPINGS if m.common in conflicting}
        # A bad value that came in through a native name is reported under both names.
        origin = {common: f" (set through {native}={value!r})" for common, native, value in result.adopted}
        issues += [
            ConfigIssue(i.key, i.message + origin.get(i.key, ""))
            for i in validate(cfg, explicit)
            if i.key not in conflicting and not (conflicting and i.key == SKYRL_TRAIN)
        ]
    if issues:
        raise ConfigError(issues, where)
    for common, native, _ in result.adopted:
        value = OmegaConf.select(cfg, common)
        value = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
        notify(f"note: {native} is SkyRL's name for {common}; using {common}={value!r}")
    # Said by every job, a sweep's too (validated by its sweeper, check=False), once in its output.
    for note in config_notes(OmegaConf.to_container(cfg, resolve=True), explicit):
        notify(note)
    return cfg


def config_notes(plain: dict, explicit: Iterable[str]) -> list[str]:
    """What a valid config's job says once: settings that change nothing here (engine_settings.py) and the
    defaults decided by the rule where SkyRL's and rLLM's differ (defaults_rule.py)."""
    from rllm_sweeps.config.defaults_rule import default_rule_notes
    from rllm_sweeps.config.engine_settings import unused_notes
    from rllm_sweeps.config.gpu_trainer_rules import gpu_trainer_notes

    return unused_notes(plain, explicit) + default_rule_notes(plain, explicit) + gpu_trainer_notes(plain)


def sweep_without_m(sweeps: list[str]) -> ConfigIssue:
    """One job's command holding a sweep's values: the commonest slip, said in one line."""
    key = split_override(sweeps[0]).key
    return ConfigIssue(
        key,
        f"{' '.join(sweeps)} is a sweep (one job per value): did you mean -m? (python train.py -m ...); "
        f"for one job, a list value is {key}=[a,b], a string {key}='a,b'",
    )


def _composed(overrides: list[str], where: str) -> DictConfig:
    """Hydra's composition, its refusal (a value a node cannot take) one line naming the override."""
    import re

    try:
        return compose_config(overrides)
    except Exception as err:
        texts = [str(e).strip().splitlines()[0] for e in (err, err.__cause__) if e is not None and str(e).strip()]
        found = re.search(r"override \+*([^=\s]+)=", texts[0] if texts else "")
        key = found.group(1) if found else "?"
        raise ConfigError([ConfigIssue(key, f"{key}: " + ": ".join(texts))], where) from None


def load_config(overrides: Iterable[str] = (), where: str = "", notify: Notify = _stderr) -> DictConfig:
    """The validated config for these overrides (what a job runs with), in any of the three
    spellings (config/spelling.py)."""
    overrides = canonical_overrides(overrides, notify)
    if sweeps := [o for o in overrides if is_sweep(o)]:  # Hydra's answer is a traceback
        raise ConfigError([sweep_without_m(sweeps)], where)
    cfg = None
    if not any(o.startswith("+") for o in overrides):  # a `+` key composes, read or not: checked below
        try:
            # The config is in struct mode throughout: if it composes, every key exists. One
            # composition instead of two in the usual case; any failure takes the path below, which
            # finds every problem at once (or raises the same error again).
            cfg = compose_config(overrides)
        except Exception:
            cfg = None
    if cfg is not None:
        return finalize(cfg, overrides, where, notify)
    unknown, lines = unknown_overrides(overrides, where)
    if not unknown:
        return finalize(_composed(overrides, where), overrides, where, notify)
    # Every problem at once: the rest of the command line is composed and checked too.
    rest = [o for o in overrides if o not in lines]
    try:
        finalize(compose_config(rest), rest, where, notify=lambda _: None)
    except ConfigError as err:
        raise ConfigError(unknown + err.issues, where) from None
    raise ConfigError(unknown, where)
