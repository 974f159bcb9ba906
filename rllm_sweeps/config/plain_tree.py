"""Plain config trees (resolved: dicts, lists, scalars): dotted keys, and jobs' copy-on-write copies of a base."""

from __future__ import annotations

import copy
from collections.abc import Sequence
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


def own_copy(value: Any) -> Any:
    """A value of a job's own, not shared with the base or another job (scalars are immutable)."""
    return value if type(value) in (str, int, float, bool, type(None)) else copy.deepcopy(value)


class CopyOnWriteTree:
    """A plain tree that shares the base's nodes until a path under them is written."""

    def __init__(self, base: dict[str, Any]) -> None:
        self.root = dict(base)
        self._copied: dict[TreePath, Any] = {(): self.root}

    def set(self, path: TreePath, value: Any) -> None:
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

    def get(self, path: Sequence[str | int]) -> Any:
        node: Any = self.root
        for part in path:
            if isinstance(node, list):
                part = int(part)
            node = node[part]
        return node
