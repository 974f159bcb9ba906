"""validate.validate() taken apart, for a sweep's many jobs: the common keys' checks run per job (cheap);
the engine's and SkyRL's native checks run once per distinct subtree they read (cached), on the plain tree,
without the OmegaConf round trip that costs validate() ~15 ms a call."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any

from rllm_sweeps.config.composed_base import Base
from rllm_sweeps.config.issues import ConfigIssue
from rllm_sweeps.config.plain_tree import plain_get, plain_get_or_none, related
from rllm_sweeps.config.validate import NATIVE_PREFIX, check_common, check_jax, check_native_train, skyrl_validate_cfg
from rllm_sweeps.engines import engine_checks_read, engine_issues
from rllm_sweeps.keymap import KEY_MAPPINGS

_CACHE_ENTRIES = 10_000  # per cache of check results: a sweep of any size stays in bounded memory


class CachedValidator:
    """Validates resolved configs, with the results of the expensive checks cached per distinct input."""

    def __init__(self) -> None:
        self._native: dict[tuple[Any, ...], tuple[list[ConfigIssue], list[ConfigIssue]]] = {}
        self._engine: dict[tuple[Any, ...], list[ConfigIssue]] = {}
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
        base.plain), SkyRL's type checks run on the changed leaves only (they are per
        leaf); SkyRL's own validate_cfg and the JAX checks run once per distinct native
        subtree.
        """
        issues = check_common(plain)
        skyrl = plain.get("skyrl") or {}
        if not isinstance(skyrl, dict):
            return issues
        run_skyrl = not issues
        explicit = frozenset(explicit)
        engine_key = (_differences(plain, base, changed, engine_checks_read), explicit)
        if engine_key not in self._engine:
            _bounded(self._engine)
            self._engine[engine_key] = engine_issues(plain, explicit)
        issues += self._engine[engine_key]
        key = (_differences(plain, base, changed, lambda path: related(path, "skyrl")), run_skyrl)
        if key not in self._native:
            _bounded(self._native)
            self.native_checks += 1
            train_issues: list[ConfigIssue] = []
            if "train" in skyrl:
                train, engine = skyrl["train"], skyrl.get("engine")
                train_issues = _native_types(train, engine, base, changed)
                if not train_issues and run_skyrl:
                    train_issues = skyrl_validate_cfg(train, engine)
            jax_issues = check_jax(skyrl["jax"]) if "jax" in skyrl and skyrl.get("engine") == "jax" else []
            self._native[key] = (train_issues, jax_issues)
        train_issues, jax_issues = self._native[key]
        if train_issues:
            # A bad common key already shows up through its interpolated native keys: say it once.
            bad_common = {i.key for i in issues}
            shadowed = {m.native for m in KEY_MAPPINGS if m.common in bad_common}
            issues += [i for i in train_issues if i.key not in shadowed]
        return issues + jax_issues


def _differences(
    plain: dict[str, Any], base: Base | None, changed: Iterable[str], read: Callable[[str], bool]
) -> tuple[Any, ...]:
    """What a check reading the paths `read` accepts sees of `plain`, as a small cache key: the
    base and the values where `plain` differs from it, or (no base) a digest of the whole config."""
    if base is None or base.plain is None:
        return (hashlib.blake2b(_dumps(plain).encode(), digest_size=16).digest(),)
    values = tuple((c, _dumps(plain_get_or_none(plain, c))) for c in sorted(changed) if read(c))
    return (id(base), values)


def _native_types(train: dict[str, Any], engine: Any, base: Base | None, changed: Iterable[str]) -> list[ConfigIssue]:
    """check_native_train(run_skyrl=False) of `train`, from the base's and the changed leaves'."""
    root = NATIVE_PREFIX.rstrip(".")  # skyrl.train
    changed = list(changed)
    try:
        base_train = plain_get(base.plain, root) if base is not None else None
    except KeyError:
        base_train = None
    whole = any(related(c, root) and not c.startswith(NATIVE_PREFIX) for c in changed)  # skyrl or skyrl.train
    if base is None or not isinstance(base_train, dict) or whole:
        return check_native_train(train, engine, run_skyrl=False)
    if base.native_types is None:
        base.native_types = check_native_train(base_train, engine, run_skyrl=False)
    rel = [c[len(NATIVE_PREFIX) :] for c in changed if c.startswith(NATIVE_PREFIX)]
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
        key = issue.key[len(NATIVE_PREFIX) :] if issue.key.startswith(NATIVE_PREFIX) else issue.key
        return any(related(key, c) for c in rel)

    fresh = [i for i in check_native_train(partial, engine, run_skyrl=False) if touched(i)]
    return [i for i in base.native_types if not touched(i)] + fresh


def _bounded(cache: dict[Any, Any]) -> None:
    if len(cache) >= _CACHE_ENTRIES:
        cache.clear()


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)
