"""validate.validate() taken apart, for a sweep's many jobs: the common keys' checks run per job (cheap);
the engine's and SkyRL's native checks run once per distinct subtree they read (cached), on the plain tree,
without the OmegaConf round trip that costs validate() ~15 ms a call.

A job composed the fast way differs from its base only at known paths (`changed`): what holds of the base
elsewhere is worked out once per (base, changed) (a _Shape): which common rules and native enums read a
changed path (only those run per job), which paths key each cache.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rllm_sweeps.config.composed_base import Base
from rllm_sweeps.config.data_files import data_file_issues
from rllm_sweeps.config.engine_settings import engine_checks_read, engine_issues
from rllm_sweeps.config.rules import CROSS_RULES, RULES, CrossRule
from rllm_sweeps.config.validate import (
    NATIVE_ENUMS,
    check_common,
    check_jax,
    check_native_train,
    cross_rule_issue,
    rule_issue,
    skyrl_validate_cfg,
)
from rllm_sweeps.data.check import data_issues
from rllm_sweeps.data.settings import data_by_path
from rllm_sweeps.keymap import KEY_MAPPINGS
from rllm_sweeps.native_keys import SKYRL_JAX, SKYRL_NODE, SKYRL_TRAIN, SKYRL_TRAIN_PREFIX
from rllm_sweeps.plain_tree import plain_get_or_none, related
from rllm_sweeps.problems import ConfigIssue

_CACHE_ENTRIES = 10_000  # per cache of check results: a sweep of any size stays in bounded memory
_RECHECK = object()  # a check that reads a changed path: run per job


@dataclass
class _Shape:
    """What validating the jobs that differ from one base at the same paths needs, worked out once."""

    rules: list[tuple[str, Any]]  # (key, _RECHECK or the base's issue): RULES in order, those that matter
    cross: list[tuple[CrossRule, Any]]  # the same for CROSS_RULES
    engine_paths: tuple[str, ...]  # the changed paths engine_issues() reads: its cache key
    native_paths: tuple[str, ...]  # the changed paths under skyrl: the native checks' cache key
    jax_paths: tuple[str, ...]  # those the JAX checks read (skyrl.jax, skyrl.engine)
    native_rel: list[str]  # the changed paths under skyrl.train., relative to it
    whole_train: bool  # skyrl or skyrl.train itself changed: its type checks run on the whole tree
    native_enums: tuple[str, ...]  # the NATIVE_ENUMS keys a changed path touches


def _shape(base: Base, changed: frozenset[str]) -> _Shape:
    assert base.plain is not None
    plain = base.plain

    def reads_changed(key: str) -> bool:
        return any(related(key, c) for c in changed)

    rules = [(k, _RECHECK if reads_changed(k) else rule_issue(plain, k)) for k in RULES]
    bad = {i.key for _, i in rules if isinstance(i, ConfigIssue)}
    cross = [
        (r, _RECHECK if any(reads_changed(k) for k in r.keys) else cross_rule_issue(r, plain, bad)) for r in CROSS_RULES
    ]
    ordered = sorted(changed)
    root = SKYRL_TRAIN  # skyrl.train
    rel = [c[len(SKYRL_TRAIN_PREFIX) :] for c in ordered if c.startswith(SKYRL_TRAIN_PREFIX)]
    return _Shape(
        rules=[(k, i) for k, i in rules if i is not None],
        cross=[(r, i) for r, i in cross if i is not None],
        engine_paths=tuple(c for c in ordered if engine_checks_read(c)),
        native_paths=tuple(c for c in ordered if related(c, SKYRL_NODE)),
        jax_paths=tuple(c for c in ordered if related(c, SKYRL_JAX) or related(c, "skyrl.engine")),
        native_rel=rel,
        whole_train=any(related(c, root) and not c.startswith(SKYRL_TRAIN_PREFIX) for c in ordered),
        native_enums=tuple(k for k in NATIVE_ENUMS if any(related(k, r) for r in rel)),
    )


class CachedValidator:
    """Validates resolved configs, with the results of the expensive checks cached per distinct input."""

    def __init__(self) -> None:
        self._native: dict[tuple[Any, ...], list[ConfigIssue]] = {}
        self._jax: dict[tuple[Any, ...], list[ConfigIssue]] = {}
        self._engine: dict[tuple[Any, ...], list[ConfigIssue]] = {}
        self._workflow: dict[Any, list[ConfigIssue]] = {}
        self._shapes: dict[tuple[int, frozenset[str]], _Shape] = {}  # bases live as long as their composer
        self.native_checks = 0  # how many times SkyRL's checks ran (cache misses)

    def validate(
        self,
        plain: dict[str, Any],
        base: Base | None = None,
        changed: Iterable[str] = (),
        explicit: Iterable[str] = (),
    ) -> list[ConfigIssue]:
        """validate.validate() of a resolved config: the same issues (the order may differ).

        With `base` and `changed` (the dotted paths where `plain` may differ from
        base.plain), the common rules and SkyRL's type checks run on what reads the
        changed paths only (the rest is the base's); SkyRL's own validate_cfg runs once
        per distinct native subtree, the JAX checks once per distinct skyrl.jax.
        """
        shape = None
        if base is not None and base.plain is not None:
            changed = frozenset(changed)
            shape = self._shapes.get((id(base), changed))
            if shape is None:
                shape = self._shapes[(id(base), changed)] = _shape(base, changed)
        issues = check_common(plain) if shape is None else _common(plain, shape)
        issues += data_file_issues(plain)  # cached by each file's stat
        workflow_key = _token([plain.get("workflow"), data_by_path(plain)])  # data by path: data/task.py
        if workflow_key not in self._workflow:
            from rllm_sweeps.data.task import workflow_problems  # as validate() does: imported when used

            _bounded(self._workflow)
            self._workflow[workflow_key] = [ConfigIssue(k, m) for k, m in workflow_problems(plain)]
        issues += self._workflow[workflow_key]
        issues += data_issues(plain)  # once per distinct dataset (data/check.py caches)
        skyrl = plain.get(SKYRL_NODE) or {}
        if not isinstance(skyrl, dict):
            return issues
        run_skyrl = not issues
        explicit = frozenset(explicit)
        engine_key = (_differences(plain, base, shape.engine_paths if shape else ()), explicit)
        if engine_key not in self._engine:
            _bounded(self._engine)
            self._engine[engine_key] = engine_issues(plain, explicit)
        issues += self._engine[engine_key]
        key = (_differences(plain, base, shape.native_paths if shape else ()), run_skyrl)
        if key not in self._native:
            _bounded(self._native)
            self.native_checks += 1
            train_issues: list[ConfigIssue] = []
            if "train" in skyrl:
                train, engine = skyrl["train"], skyrl.get("engine")
                train_issues = _native_types(train, engine, base, shape)
                if not train_issues and run_skyrl:
                    train_issues = skyrl_validate_cfg(train, engine)
            self._native[key] = train_issues
        train_issues = self._native[key]
        jax_key = _differences(plain, base, shape.jax_paths if shape else ())
        if jax_key not in self._jax:
            _bounded(self._jax)
            self._jax[jax_key] = check_jax(skyrl["jax"]) if "jax" in skyrl and skyrl.get("engine") == "jax" else []
        jax_issues = self._jax[jax_key]
        if train_issues:
            # A bad common key already shows up through its interpolated native keys: say it once.
            bad_common = {i.key for i in issues}
            shadowed = {m.native for m in KEY_MAPPINGS if m.common in bad_common}
            issues += [i for i in train_issues if i.key not in shadowed]
        return issues + jax_issues


def _common(plain: dict[str, Any], shape: _Shape) -> list[ConfigIssue]:
    """check_common(plain): the rules that read a changed path run, the others are the base's."""
    issues = []
    for key, known in shape.rules:
        issue = rule_issue(plain, key) if known is _RECHECK else known
        if issue is not None:
            issues.append(issue)
    if shape.cross:
        bad = {i.key for i in issues}
        for rule, known in shape.cross:
            issue = cross_rule_issue(rule, plain, bad) if known is _RECHECK else known
            if issue is not None:
                issues.append(issue)
    return issues


def _differences(plain: dict[str, Any], base: Base | None, paths: tuple[str, ...]) -> tuple[Any, ...]:
    """What a check that reads `paths` of the changed ones sees of `plain`, as a small cache key: the
    base and the values at those paths, or (no base) a digest of the whole config."""
    if base is None or base.plain is None:
        return (hashlib.blake2b(_dumps(plain).encode(), digest_size=16).digest(),)
    return (id(base), paths, tuple(_token(plain_get_or_none(plain, c)) for c in paths))


def _native_types(train: dict[str, Any], engine: Any, base: Base | None, shape: _Shape | None) -> list[ConfigIssue]:
    """check_native_train(run_skyrl=False) of `train`, from the base's and the changed leaves'."""
    base_train = plain_get_or_none(base.plain, SKYRL_TRAIN) if base is not None else None
    if base is None or shape is None or not isinstance(base_train, dict) or shape.whole_train:
        return check_native_train(train, engine, run_skyrl=False)
    if base.native_types is None:
        base.native_types = check_native_train(base_train, engine, run_skyrl=False)
    rel = shape.native_rel
    if not rel:
        return list(base.native_types)
    partial: dict[str, Any] = {}
    for path in rel:
        node, out = train, partial
        parts = path.split(".")
        for i, part in enumerate(parts):
            if not isinstance(node, dict) or part not in node:
                break
            value = node[part]
            if i == len(parts) - 1 or not isinstance(value, dict):
                out[part] = value  # a leaf, or a list: checked whole
                break
            out = out.setdefault(part, {})
            node = value

    def touched(issue: ConfigIssue) -> bool:
        key = issue.key[len(SKYRL_TRAIN_PREFIX) :] if issue.key.startswith(SKYRL_TRAIN_PREFIX) else issue.key
        return any(related(key, c) for c in rel)

    # The enums no changed path touches would only give issues dropped here: not checked.
    fresh = check_native_train(partial, engine, run_skyrl=False, enums=shape.native_enums)
    return [i for i in base.native_types if not touched(i)] + [i for i in fresh if touched(i)]


def _bounded(cache: dict[Any, Any]) -> None:
    if len(cache) >= _CACHE_ENTRIES:
        cache.clear()


def _token(value: Any) -> Any:
    """A value as a cache key: equal only for the same value of the same type (1, 1.0, True differ)."""
    if type(value) in (str, int, float, bool, type(None)):
        return repr(value)  # the repr of each of these types is told from the others'
    return ("json", _dumps(value))


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)
