"""Every job's config, composed and validated fast, equal to what load_config() gives.

load_config() costs ~0.3 s per job (a Hydra composition of the whole tree, SkyRL's
included, and validation), so 1,000 jobs would take minutes. A sweep's jobs differ only in a few
values, so:

1. Hydra composes once per distinct combination of config-group choices (task=...,
   backend=...), and the base overrides are applied with Hydra's own function
   (composed_base.py);
2. a job's values are written into that composition's resolved tree, copy on write,
   and only the interpolations that depend on the swept keys are evaluated again
   (interpolations.py): `${key}` by a lookup in the job's tree, anything else
   (resolvers, string interpolation) by OmegaConf on the base config, with the job's
   values set and then restored;
3. validation is validate.validate()'s, taken apart and cached (cached_validation.py).

Whatever the shortcut cannot prove equal takes the exact path (a copy of the base
composition, Hydra's override application, load.finalize): overrides of SkyRL-native
keys of the key map (reconciliation), dict values, interpolations as values, `+`/`++`
overrides, typed (structured-config) nodes, and bases that need reconciliation.
tests/test_sweep_plan.py checks the shortcut against load_config().
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import OverrideType
from omegaconf import AnyNode, DictConfig, OmegaConf

from rllm_sweeps.config.cached_validation import CachedValidator
from rllm_sweeps.config.compose import compose_config
from rllm_sweeps.config.composed_base import Base
from rllm_sweeps.config.defaults_rule import DECIDING_KEYS, apply_default_rules
from rllm_sweeps.config.interpolations import Reevaluation
from rllm_sweeps.config.load import config_notes, finalize
from rllm_sweeps.config.overrides import all_keys, parse_overrides, unread_added_key
from rllm_sweeps.config.private_api import apply_overrides, child_node, raw_value
from rllm_sweeps.config.reconcile import reconcile
from rllm_sweeps.plain_tree import CopyOnWriteTree, own_copy, related, value_is_plain
from rllm_sweeps.problems import ConfigError, ConfigIssue, did_you_mean_key

_PARSER = OverridesParser.create()


@dataclass(frozen=True)
class Setting:
    """One value a job sets on top of its base: a parameter's choice, or the seed."""

    key: str
    value: Any
    text: str  # as written right of `=`
    prefix: str = ""  # "", "+", "++"

    @property
    def override(self) -> str:
        return f"{self.prefix}{self.key}={self.text}"


@dataclass
class JobConfig:
    plain: dict[str, Any] | None  # the resolved config; None when it could not be composed
    issues: list[ConfigIssue]
    notes: list[str] = field(default_factory=list)
    exact_path: bool = False  # True: composed the slow, exact way
    changed: frozenset[str] | None = None  # composed the fast way: the paths where `plain` may differ from the base's


class JobComposer:
    """Composes and validates the configs of a sweep's jobs (see the module's docstring)."""

    def __init__(self, base_overrides: Sequence[str] = ()) -> None:
        self.base_overrides = list(base_overrides)
        parsed = parse_overrides(self.base_overrides)
        self._group_lines = [o.input_line for o in parsed.groups]
        self._hydra_lines = [o.input_line for o in parsed.hydra]
        self._values = parsed.values
        self._explicit = frozenset(parsed.explicit_keys)  # named by the user: engine_settings.py refuses unread ones
        self._bases: dict[tuple[str, ...], Base | ConfigError] = {}
        self._group_cfgs: dict[tuple[str, ...], tuple[DictConfig, set[str]] | ConfigError] = {}
        self.validator = CachedValidator()
        self.stats = {"fast": 0, "exact": 0}

    # -- bases -------------------------------------------------------------------------

    def base(self, groups: Sequence[str] = ()) -> Base:
        """The base for these group choices (e.g. ["task=math"]); raises ConfigError."""
        key = tuple(groups)
        if key not in self._bases:
            try:
                self._bases[key] = self._compose_base(key)
            except ConfigError as err:
                self._bases[key] = err
        base = self._bases[key]
        if isinstance(base, ConfigError):
            raise base
        return base

    def group_config(self, groups: Sequence[str] = ()) -> tuple[DictConfig, set[str]]:
        """Hydra's composition of these group choices (no value overrides yet) and its keys."""
        key = tuple(groups)
        if key not in self._group_cfgs:
            lines = self._group_lines + list(key) + self._hydra_lines
            try:
                cfg = compose_config(lines)
            except Exception as err:  # unknown group option, bad defaults
                what = " ".join(lines) or "the defaults"
                issue = ConfigIssue(" ".join(key) or "?", f"cannot compose {what}: {_first_line(err)}")
                self._group_cfgs[key] = ConfigError([issue])
            else:
                self._group_cfgs[key] = (cfg, set(all_keys(cfg)))
        found = self._group_cfgs[key]
        if isinstance(found, ConfigError):
            raise found
        return found

    def _compose_base(self, groups: tuple[str, ...]) -> Base:
        cfg, known = self.group_config(groups)
        issues = []
        for o in self._values:
            if o.key_or_group in known:
                continue
            if o.type in (OverrideType.ADD, OverrideType.FORCE_ADD):
                if (unread := unread_added_key(o.key_or_group, known)) is not None:
                    issues.append(ConfigIssue(o.input_line, f"override '{o.input_line}': {unread}"))
                continue
            hint = did_you_mean_key(o.key_or_group, known)
            issues.append(ConfigIssue(o.input_line, f"override '{o.input_line}': unknown key '{o.key_or_group}'{hint}"))
        if issues:
            raise ConfigError(issues)
        cfg = copy.deepcopy(cfg)
        try:
            apply_overrides(self._values, cfg)
        except Exception as err:
            raise ConfigError([ConfigIssue("?", f"cannot apply the overrides: {_first_line(err)}")]) from None
        apply_default_rules(cfg, self._explicit)  # as load.finalize: the jobs' shortcut starts from it
        return Base(groups, cfg)

    # -- one job -----------------------------------------------------------------------

    def job(
        self, base: Base, settings: Sequence[Setting], overrides: Sequence[str], validate: bool = True
    ) -> JobConfig:
        """The resolved, validated config of a job: `settings` on top of `base`.

        `overrides` are the job's complete overrides (what reconciliation treats as set
        on purpose, on the exact path). validate=False composes (and reconciles) only: a
        preview that does not load SkyRL's validators (seconds of imports in a new process).
        """
        keys = frozenset(s.key for s in settings)
        analysis = base.analysis(keys)
        rule_free = not keys & DECIDING_KEYS  # a rule's outcome (defaults_rule.py) may change: the exact path
        if analysis.fast and rule_free and all(not s.prefix and value_is_plain(s.value) for s in settings):
            try:
                plain = self._fast_plain(base, settings, analysis)
            except Exception:
                plain = None
            if plain is not None:
                self.stats["fast"] += 1
                explicit = self._explicit | keys
                issues = self.validator.validate(plain, base, analysis.dirty, explicit) if validate else []
                notes = config_notes(plain, explicit) if validate and not issues else []  # as load.finalize's
                return JobConfig(plain=plain, issues=issues, notes=notes, changed=analysis.dirty)
        self.stats["exact"] += 1
        return self._exact(base, settings, overrides, validate)

    def _fast_plain(self, base: Base, settings: Sequence[Setting], analysis: Reevaluation) -> dict[str, Any]:
        assert base.plain is not None
        tree = CopyOnWriteTree(base.plain)
        for s in settings:
            tree.set(tuple(s.key.split(".")), own_copy(s.value))
        for interp in analysis.refs:
            tree.set(interp.path, own_copy(tree.get(interp.ref)))  # type: ignore[arg-type]
        if analysis.omega:
            restore: list[tuple[Any, str | int, Any]] = []
            try:
                for s in settings:
                    parent, leaf = base.node_parent(tuple(s.key.split(".")))
                    node = child_node(parent, leaf)
                    restore.append((parent, leaf, raw_value(node) if type(node) is AnyNode else node))
                    parent[leaf] = s.value
                for interp in analysis.omega:
                    parent, leaf = base.node_parent(interp.path)
                    value = parent[leaf]
                    if OmegaConf.is_config(value):
                        value = OmegaConf.to_container(value, resolve=True)
                    tree.set(interp.path, value)
            finally:
                for parent, leaf, old in reversed(restore):
                    parent[leaf] = old
        return tree.root

    def _exact(self, base: Base, settings: Sequence[Setting], overrides: Sequence[str], validate: bool) -> JobConfig:
        cfg = copy.deepcopy(base.cfg)
        lines = [s.override for s in settings]
        try:
            apply_overrides(_PARSER.parse_overrides(lines), cfg)
        except Exception as err:
            issue = ConfigIssue("?", f"cannot apply the overrides: {_first_line(err)}")
            return JobConfig(None, [issue], exact_path=True)
        notes: list[str] = []
        if not validate:  # reconciliation only (load.finalize without validate())
            result = reconcile(cfg, parse_overrides(overrides).explicit_keys)
            if result.conflicts:
                return JobConfig(None, [ConfigIssue(c.split("=", 1)[0], c) for c in result.conflicts], exact_path=True)
            return JobConfig(OmegaConf.to_container(cfg, resolve=True), [], exact_path=True)  # type: ignore[arg-type]
        try:
            finalize(cfg, overrides, notify=notes.append)
        except ConfigError as err:
            return JobConfig(None, list(err.issues), notes, exact_path=True)
        plain = OmegaConf.to_container(cfg, resolve=True)
        return JobConfig(plain, [], notes, exact_path=True)  # type: ignore[arg-type]

    # -- values without a job config ---------------------------------------------------

    def readable(self, base: Base, setting_keys: frozenset[str], keys: Iterable[str]) -> bool:
        """True if `keys` of a job that sets `setting_keys` on `base` can be read without
        composing it: each is either set by the job (with a plain value: the caller checks)
        or untouched by the job's values and the interpolations they reach."""
        analysis = base.analysis(setting_keys)
        if not analysis.fast:
            return False
        return all(key in setting_keys or not any(related(key, d) for d in analysis.dirty) for key in keys)


def _first_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0]


__all__ = ["JobComposer", "JobConfig", "Setting"]
