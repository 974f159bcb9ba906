"""Every job's config, composed and validated fast, equal to what load_config() gives.

load_config() costs ~0.25 s per job (Hydra composes twice, SkyRL's tree goes through
OmegaConf twice), so 1,000 jobs would take minutes. A sweep's jobs differ only in a few
values, so:

1. Hydra composes once per distinct combination of config-group choices (task=...,
   backend=...), and the base overrides are applied with Hydra's own function;
2. a job's values are written into that composition's resolved tree, copy on write,
   and only the interpolations that depend on the swept keys are evaluated again:
   `${key}` by a lookup in the job's tree, anything else (resolvers, string
   interpolation) by OmegaConf on the base config, with the job's values set and then
   restored;
3. validation is validate.validate()'s, taken apart: the common keys' checks run per job
   (cheap); SkyRL's native checks run once per distinct native subtree (cached), on the
   plain tree, without the OmegaConf round trip that costs validate() ~15 ms a call.

Whatever the shortcut cannot prove equal takes the exact path (a copy of the base
composition, Hydra's override application, load.finalize): overrides of SkyRL-native
keys of the key map (reconciliation), dict values, interpolations as values, `+`/`++`
overrides, typed (structured-config) nodes, and bases that need reconciliation.
tests/test_sweep_plan.py checks the shortcut against load_config().
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import OverrideType
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.nodes import AnyNode

from rllm_sweeps.config.compose import compose_config
from rllm_sweeps.config.load import finalize
from rllm_sweeps.config.native import RESOLVER_READS
from rllm_sweeps.config.overrides import all_keys, did_you_mean, parse_overrides
from rllm_sweeps.config.validate import (
    NATIVE_PREFIX,
    ConfigError,
    ConfigIssue,
    check_common,
    check_jax,
    check_native_train,
    skyrl_validate_cfg,
)
from rllm_sweeps.engines import engine_checks_read, engine_issues
from rllm_sweeps.jobhash import CanonicalJson
from rllm_sweeps.keymap import BY_NATIVE, KEY_MAPPINGS, RESOLVER, is_planted, reconcile

Path = tuple[str | int, ...]
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


# ---- interpolations --------------------------------------------------------------------


@dataclass(frozen=True)
class _Interp:
    path: Path
    dotted: str
    deps: tuple[str, ...] | None  # config keys it reads; None = unknown (always re-evaluated)
    ref: tuple[str, ...] | None  # a plain `${a.b}`: the path it copies


def related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _classify(raw: str, path: Path, is_any_node: bool) -> _Interp:
    from omegaconf.grammar.gen.OmegaConfGrammarParser import OmegaConfGrammarParser as G
    from omegaconf.grammar_parser import parse

    dotted = ".".join(map(str, path))
    nodes: list[str] = []
    unknown = False

    def walk(ctx: Any) -> None:
        nonlocal unknown
        if isinstance(ctx, G.InterpolationNodeContext):
            key = ctx.getText()[2:-1]
            if key.startswith(".") or "${" in key or "[" in key:
                unknown = True
            nodes.append(key)
        elif isinstance(ctx, G.InterpolationResolverContext):
            name = ctx.resolverName().getText()
            args = ctx.sequence()
            arg = args.getText() if args is not None else ""
            native = arg[1:-1] if len(arg) > 1 and arg[0] == arg[-1] and arg[0] in "'\"" else None
            if name == RESOLVER and native in BY_NATIVE:
                nodes.append(BY_NATIVE[native].common)  # keymap's resolver reads the common key
            elif name in RESOLVER_READS:
                nodes.extend(RESOLVER_READS[name])  # our own resolvers say what they read
            else:
                unknown = True  # a resolver may read anything (oc.env, oc.select, ...)
        for i in range(ctx.getChildCount()):
            child = ctx.getChild(i)
            if hasattr(child, "getChildCount"):
                walk(child)

    try:
        walk(parse(raw))
    except Exception:
        unknown = True
    is_ref = not unknown and is_any_node and len(nodes) == 1 and raw == "${" + nodes[0] + "}"
    return _Interp(
        path=path,
        dotted=dotted,
        deps=None if unknown else tuple(nodes),
        ref=tuple(nodes[0].split(".")) if is_ref else None,
    )


def _find_interps(cfg: DictConfig) -> list[_Interp]:
    found: list[_Interp] = []

    def walk(node: DictConfig | ListConfig, path: Path) -> None:
        keys: Iterable[Any] = node.keys() if isinstance(node, DictConfig) else range(len(node))
        for k in keys:
            child = node._get_node(k)
            if child._is_interpolation():
                found.append(_classify(child._value(), (*path, k), type(child) is AnyNode))
            elif isinstance(child, DictConfig | ListConfig) and not child._is_none():
                walk(child, (*path, k))

    walk(cfg, ())
    return found


# ---- copy-on-write plain trees ---------------------------------------------------------


class _Cow:
    """A plain tree that shares the base's nodes until a path under them is written."""

    def __init__(self, base: dict[str, Any]) -> None:
        self.root = dict(base)
        self._copied: dict[Path, Any] = {(): self.root}

    def set(self, path: Path, value: Any) -> None:
        node = self.root
        for i in range(len(path) - 1):
            sub = path[: i + 1]
            nxt = self._copied.get(sub)
            if nxt is None:
                orig = node[path[i]]
                nxt = dict(orig) if isinstance(orig, dict) else list(orig)
                node[path[i]] = nxt
                self._copied[sub] = nxt
            node = nxt
        node[path[-1]] = value

    def delete(self, path: Path) -> None:
        self.set(path, None)
        parent = self.get(path[:-1])
        del parent[path[-1]]

    def get(self, path: Sequence[str | int]) -> Any:
        node: Any = self.root
        for part in path:
            if isinstance(node, list):
                part = int(part)
            node = node[part]
        return node


def plain_get(tree: Any, key: str) -> Any:
    node = tree
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(key)
    return node


def plain_get_or_none(tree: Any, key: str) -> Any:
    try:
        return plain_get(tree, key)
    except KeyError:
        return None


def value_is_plain(value: Any) -> bool:
    """No dicts (Hydra merges those) and no interpolations (OmegaConf resolves those)."""
    if isinstance(value, str):
        return "${" not in value
    if isinstance(value, list):
        return all(value_is_plain(v) for v in value)
    return not isinstance(value, dict)


# ---- one composition of config groups --------------------------------------------------


@dataclass
class _Analysis:
    """What a set of swept keys does to a base: which interpolations to evaluate again."""

    fast: bool
    refs: list[_Interp]  # `${key}` copies, in dependency order
    omega: list[_Interp]  # evaluated by OmegaConf
    dirty: set[str]  # dotted paths whose values may differ from the base's


class Base:
    """The config of one combination of config-group choices, with the base overrides."""

    def __init__(self, groups: tuple[str, ...], cfg: DictConfig) -> None:
        self.groups = groups
        self.cfg = cfg  # the working copy: jobs set values on it and restore them
        self.known_keys = set(all_keys(cfg))
        self.needs_reconcile = any(not is_planted(cfg, m) for m in KEY_MAPPINGS)
        try:
            self.plain: dict[str, Any] | None = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
        except Exception:
            self.plain = None  # an interpolation that does not resolve: the exact path reports it
        self.interps = _find_interps(cfg)
        self._analyses: dict[frozenset[str], _Analysis] = {}
        self._targets: dict[str, bool] = {}
        self.native_types: list[ConfigIssue] | None = None  # SkyRL type checks of the base's tree
        self._canonical: CanonicalJson | None = None

    @property
    def canonical(self) -> CanonicalJson | None:
        """The hash's canonical JSON of this base's subtrees, computed once (jobs share them)."""
        if self._canonical is None and self.plain is not None:
            self._canonical = CanonicalJson(self.plain)
        return self._canonical

    def _target_ok(self, key: str) -> bool:
        """Can a job's value go straight into the tree at `key`? (an untyped leaf or a list)."""
        if key not in self._targets:
            ok = key not in BY_NATIVE
            node: Any = self.cfg
            parts = key.split(".")
            for i, part in enumerate(parts):
                if not ok:
                    break
                if not isinstance(node, DictConfig) or node._is_none() or node._is_interpolation():
                    ok = False
                    break
                if part not in node:
                    ok = False
                    break
                child = node._get_node(part)
                if i == len(parts) - 1:
                    is_list = isinstance(child, ListConfig) and not child._is_interpolation() and not child._is_none()
                    ok = type(child) is AnyNode or is_list
                node = child
            self._targets[key] = ok
        return self._targets[key]

    def analysis(self, keys: frozenset[str]) -> _Analysis:
        if keys in self._analyses:
            return self._analyses[keys]
        fast = self.plain is not None and not self.needs_reconcile and all(self._target_ok(k) for k in keys)
        changed = set(keys)
        candidates = [i for i in self.interps if not any(i.dotted == k or i.dotted.startswith(k + ".") for k in keys)]
        dirty: list[_Interp] = []
        grew = True
        while grew:
            grew = False
            for interp in candidates:
                if interp in dirty:
                    continue
                if interp.deps is None or any(related(d, c) for d in interp.deps for c in changed):
                    dirty.append(interp)
                    changed.add(interp.dotted)
                    grew = True
        if any(i.ref is None for i in dirty):
            refs, omega = [], dirty  # OmegaConf evaluates them all, consistently
        else:
            refs, omega = _in_dependency_order(dirty), []
            if refs is None:
                fast, refs = False, []
        result = _Analysis(fast=fast, refs=refs, omega=omega, dirty=changed)
        self._analyses[keys] = result
        return result

    def node_parent(self, path: Path) -> tuple[Any, str | int]:
        node: Any = self.cfg
        for part in path[:-1]:
            node = node._get_node(part)
        return node, path[-1]


def _in_dependency_order(interps: list[_Interp]) -> list[_Interp] | None:
    """Interpolations ordered so that each comes after those it reads (None: a cycle)."""
    ordered: list[_Interp] = []
    pending = list(interps)
    while pending:
        ready = [
            i for i in pending if not any(related(d, o.dotted) for d in (i.deps or ()) for o in pending if o is not i)
        ]
        if not ready:
            return None
        ordered += ready
        pending = [i for i in pending if i not in ready]
    return ordered


# ---- the composer ----------------------------------------------------------------------


class JobComposer:
    """Composes and validates the configs of a sweep's jobs (see the module's docstring)."""

    def __init__(self, base_overrides: Sequence[str] = ()) -> None:
        self.base_overrides = list(base_overrides)
        parsed = parse_overrides(self.base_overrides)
        self._group_lines = [o.input_line for o in parsed.groups]
        self._hydra_lines = [o.input_line for o in parsed.hydra]
        self._values = parsed.values
        self._explicit = frozenset(parsed.explicit_keys)  # named by the user: engines.py refuses unread ones
        self._bases: dict[tuple[str, ...], Base | ConfigError] = {}
        self._group_cfgs: dict[tuple[str, ...], tuple[DictConfig, set[str]] | ConfigError] = {}
        self._native: dict[tuple[str, bool], tuple[list[ConfigIssue], list[ConfigIssue]]] = {}
        self._engine: dict[tuple[Any, ...], list[ConfigIssue]] = {}
        self.stats = {"fast": 0, "exact": 0, "native_checks": 0}

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
            if o.type in (OverrideType.ADD, OverrideType.FORCE_ADD) or o.key_or_group in known:
                continue
            hint = did_you_mean(o.key_or_group, known)
            issues.append(ConfigIssue(o.input_line, f"override '{o.input_line}': unknown key '{o.key_or_group}'{hint}"))
        if issues:
            raise ConfigError(issues)
        cfg = copy.deepcopy(cfg)
        try:
            ConfigLoaderImpl._apply_overrides_to_config(self._values, cfg)
        except Exception as err:
            raise ConfigError([ConfigIssue("?", f"cannot apply the overrides: {_first_line(err)}")]) from None
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
        if analysis.fast and all(not s.prefix and value_is_plain(s.value) for s in settings):
            try:
                plain = self._fast_plain(base, settings, analysis)
            except Exception:
                plain = None
            if plain is not None:
                self.stats["fast"] += 1
                explicit = self._explicit | keys
                issues = self.validate(plain, base, analysis.dirty, explicit) if validate else []
                return JobConfig(plain=plain, issues=issues)
        self.stats["exact"] += 1
        return self._exact(base, settings, overrides, validate)

    def _fast_plain(self, base: Base, settings: Sequence[Setting], analysis: _Analysis) -> dict[str, Any]:
        assert base.plain is not None
        tree = _Cow(base.plain)
        for s in settings:
            tree.set(tuple(s.key.split(".")), _copy(s.value))
        for interp in analysis.refs:
            tree.set(interp.path, _copy(tree.get(interp.ref)))  # type: ignore[arg-type]
        if analysis.omega:
            restore: list[tuple[Any, str | int, Any]] = []
            try:
                for s in settings:
                    parent, leaf = base.node_parent(tuple(s.key.split(".")))
                    node = parent._get_node(leaf)
                    restore.append((parent, leaf, node._value() if type(node) is AnyNode else node))
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
            ConfigLoaderImpl._apply_overrides_to_config(_PARSER.parse_overrides(lines), cfg)
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

    # -- validation --------------------------------------------------------------------

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
        engine_key = (self._differences(plain, base, changed, engine_checks_read), explicit)
        if engine_key not in self._engine:
            _bounded(self._engine)
            self._engine[engine_key] = engine_issues(plain, explicit)
        issues += self._engine[engine_key]
        key = (self._differences(plain, base, changed, lambda path: related(path, "skyrl")), run_skyrl)
        if key not in self._native:
            _bounded(self._native)
            self.stats["native_checks"] += 1
            train_issues: list[ConfigIssue] = []
            if "train" in skyrl:
                train, engine = skyrl["train"], skyrl.get("engine")
                train_issues = self._native_types(train, engine, base, changed)
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

    @staticmethod
    def _differences(
        plain: dict[str, Any], base: Base | None, changed: Iterable[str], read: Callable[[str], bool]
    ) -> tuple[Any, ...]:
        """What a check reading the paths `read` accepts sees of `plain`, as a small cache key: the
        base and the values where `plain` differs from it, or (no base) a digest of the whole config."""
        if base is None or base.plain is None:
            return (hashlib.blake2b(_dumps(plain).encode(), digest_size=16).digest(),)
        values = tuple((c, _dumps(plain_get_or_none(plain, c))) for c in sorted(changed) if read(c))
        return (id(base), values)

    def _native_types(
        self, train: dict[str, Any], engine: Any, base: Base | None, changed: Iterable[str]
    ) -> list[ConfigIssue]:
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


_CACHE_ENTRIES = 10_000  # per cache of check results: a sweep of any size stays in bounded memory


def _bounded(cache: dict[Any, Any]) -> None:
    if len(cache) >= _CACHE_ENTRIES:
        cache.clear()


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _copy(value: Any) -> Any:
    """A value of a job's own, not shared with the base or another job (scalars are immutable)."""
    return value if type(value) in (str, int, float, bool, type(None)) else copy.deepcopy(value)


def _first_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0]


__all__ = ["Base", "JobComposer", "JobConfig", "Setting"]
