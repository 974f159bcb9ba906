"""Plain config trees (resolved: dicts, lists, scalars): dotted keys (the one home of their helpers), and
jobs' copy-on-write copies of a base. Below config and data, which both read plain trees."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

TreePath = tuple[str | int, ...]  # a node's path in a tree: dict keys and list indices


def related(a: str, b: str) -> bool:
    """True if dotted keys `a` and `b` are the same node or one is inside the other."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def plain_get(tree: Any, key: str) -> Any:
    """The value at dotted `key` (list indices as digits); KeyError if there is none."""
    node = tree
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(key)
    return node


def plain_get_or_none(tree: Any, key: str, default: Any = None) -> Any:
    """The value at dotted `key`, or `default` if there is none."""
    try:
        return plain_get(tree, key)
    except KeyError:
        return default


def leaves(tree: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of every leaf of a plain tree (an empty mapping is a leaf)."""
    if isinstance(tree, dict) and tree:
        for key, value in tree.items():
            yield from leaves(value, f"{prefix}{key}.")
    else:
        yield prefix.rstrip("."), tree


def value_is_plain(value: Any) -> bool:
    """No dicts (Hydra merges those) and no interpolations (OmegaConf resolves those)."""
    if isinstance(value, str):
        return "${" not in value
    if isinstance(value, list):
        return all(value_is_plain(v) for v in value)
    return not isinstance(value, dict)


def own_copy(value: Any) -> Any:
    """A value of a job's own, not shared with the base or another job (scalars are immutable)."""
    return value if type(value) in (str, int, float, bool, type(None)) else copy.deepcopy(value)


class CopyOnWriteTree:
    """A plain tree that shares the base's nodes until a path under them is written."""

    def __init__(self, base: dict[str, Any]) -> None:
        self.root = dict(base)
        self._own = {id(self.root)}  # the nodes copied (held by the tree: their ids stay theirs)

    def set(self, path: TreePath, value: Any) -> None:
        node: Any = self.root
        for part in path[:-1]:
            child = node[part]
            if id(child) not in self._own:
                child = dict(child) if isinstance(child, dict) else list(child)
                node[part] = child
                self._own.add(id(child))
            node = child
        node[path[-1]] = value

    def get(self, path: Sequence[str | int]) -> Any:
        node: Any = self.root
        for part in path:
            if isinstance(node, list):
                part = int(part)
            node = node[part]
        return node
