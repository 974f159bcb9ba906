"""A composed config's interpolations: what each reads, and which to evaluate again when a job sets some keys."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from omegaconf import AnyNode, DictConfig, ListConfig, OmegaConf

from rllm_sweeps.config.native import RESOLVER_READS
from rllm_sweeps.config.private_api import NodeReference, child_node, interpolation_parts, is_none, raw_value
from rllm_sweeps.keymap import BY_NATIVE, RESOLVER
from rllm_sweeps.plain_tree import TreePath, related


@dataclass(frozen=True)
class Interpolation:
    path: TreePath
    dotted: str
    deps: tuple[str, ...] | None  # config keys it reads; None = unknown (always re-evaluated)
    ref: tuple[str, ...] | None  # a plain `${a.b}`: the path it copies


@dataclass
class Reevaluation:
    """What setting a set of keys does to a base: which interpolations to evaluate again, and how."""

    fast: bool  # False: the shortcut cannot prove the job's config equal (the exact path composes it)
    refs: list[Interpolation]  # `${key}` copies, in dependency order
    omega: list[Interpolation]  # evaluated by OmegaConf
    dirty: frozenset[str]  # dotted paths whose values may differ from the base's


def classify(raw: str, path: TreePath, is_any_node: bool) -> Interpolation:
    """The interpolation `raw` at `path`: the keys it reads (None when a resolver may read anything), and
    whether it is a plain copy of one key (only an untyped node's: a typed one converts the value)."""
    dotted = ".".join(map(str, path))
    nodes: list[str] = []
    unknown = False
    try:
        for part in interpolation_parts(raw):
            if isinstance(part, NodeReference):
                if part.key.startswith(".") or "${" in part.key or "[" in part.key:
                    unknown = True
                nodes.append(part.key)
                continue
            quoted = len(part.args) > 1 and part.args[0] == part.args[-1] and part.args[0] in "'\""
            native = part.args[1:-1] if quoted else None
            if part.name == RESOLVER and native in BY_NATIVE:
                nodes.append(BY_NATIVE[native].common)  # keymap's resolver reads the common key
            elif part.name in RESOLVER_READS:
                nodes.extend(RESOLVER_READS[part.name])  # our own resolvers say what they read
            else:
                unknown = True  # a resolver may read anything (oc.env, oc.select, ...)
    except Exception:
        unknown = True
    is_ref = not unknown and is_any_node and len(nodes) == 1 and raw == "${" + nodes[0] + "}"
    return Interpolation(
        path=path,
        dotted=dotted,
        deps=None if unknown else tuple(nodes),
        ref=tuple(nodes[0].split(".")) if is_ref else None,
    )


def find_interpolations(cfg: DictConfig) -> list[Interpolation]:
    """Every interpolation in `cfg` (unresolved), outside None containers."""
    found: list[Interpolation] = []

    def walk(node: DictConfig | ListConfig, path: TreePath) -> None:
        keys: Iterable[Any] = node.keys() if isinstance(node, DictConfig) else range(len(node))
        for k in keys:
            child = child_node(node, k)
            if OmegaConf.is_interpolation(child):
                found.append(classify(raw_value(child), (*path, k), type(child) is AnyNode))
            elif isinstance(child, DictConfig | ListConfig) and not is_none(child):
                walk(child, (*path, k))

    walk(cfg, ())
    return found


def reevaluation(interps: list[Interpolation], keys: frozenset[str]) -> Reevaluation:
    """Which of `interps` setting `keys` may change (transitively), and how to evaluate them again: all by
    OmegaConf when one is more than a plain copy, else as copies in dependency order (not fast: a cycle)."""
    changed = set(keys)
    candidates = [i for i in interps if not any(i.dotted == k or i.dotted.startswith(k + ".") for k in keys)]
    dirty: list[Interpolation] = []
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
        return Reevaluation(fast=True, refs=[], omega=dirty, dirty=frozenset(changed))  # OmegaConf evaluates them all
    refs = in_dependency_order(dirty)
    if refs is None:
        return Reevaluation(fast=False, refs=[], omega=[], dirty=frozenset(changed))
    return Reevaluation(fast=True, refs=refs, omega=[], dirty=frozenset(changed))


def in_dependency_order(interps: list[Interpolation]) -> list[Interpolation] | None:
    """Interpolations ordered so that each comes after those it reads (None: a cycle)."""
    ordered: list[Interpolation] = []
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
