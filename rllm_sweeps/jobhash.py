"""The config hash: what identifies a job's training configuration (resume, sweeps).

Keys that change where or how results are reported, not what is trained, are left out,
together with their native mirrors from the key map.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.keymap import KEY_MAPPINGS

NOT_HASHED = (
    "hydra",
    "sweep",
    "resources",
    "trainer.logger",
    "trainer.project_name",
    "trainer.experiment_name",
    "trainer.resume_mode",
)


@functools.cache
def _not_hashed_paths() -> tuple[str, ...]:
    natives = [m.native for m in KEY_MAPPINGS if any(_under(m.common, p) for p in NOT_HASHED)]
    return (*NOT_HASHED, *natives)


@functools.cache
def _not_hashed_tree() -> dict[str, Any]:
    """_not_hashed_paths() as a tree: {"trainer": {"logger": None, ...}, "resources": None, ...}."""
    tree: dict[str, Any] = {}
    for path in sorted(_not_hashed_paths(), key=lambda p: p.count(".")):
        *parents, leaf = path.split(".")
        node: Any = tree
        for part in parents:
            node = node.setdefault(part, {})
            if node is None:
                break  # a parent is dropped whole already
        else:
            node[leaf] = None
    return tree


def _under(key: str, prefix: str) -> bool:
    return key == prefix or key.startswith(prefix + ".")


def _without(tree: dict[str, Any], drop: dict[str, Any]) -> dict[str, Any]:
    """`tree` less the `drop` paths: the dicts on the way are copied, every other subtree is shared."""
    if not any(k in tree for k in drop):
        return tree
    out = dict(tree)
    for key, below in drop.items():
        if key not in out:
            continue
        if below is None:
            del out[key]
        elif isinstance(out[key], dict):
            out[key] = _without(out[key], below)
    return out


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


_quoted = json.encoder.encode_basestring_ascii  # json.dumps's own string encoder


def _leaf(value: Any) -> str:
    """_dumps(value) of a leaf, without building an encoder (jobs re-encode ~100 leaves each)."""
    kind = type(value)
    if kind is str:
        return _quoted(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    if value is None:
        return "null"
    return _dumps(value)


class CanonicalJson:
    """The canonical JSON config_hash takes, for many configs that share subtrees with one base
    (a sweep's jobs, copied from the base only along the paths they change): the text of each
    of the base's subtrees and leaves is computed once and found again by identity.

    The base's subtrees are held (so identities stay valid) and must not be mutated.
    """

    def __init__(self, base: dict[str, Any] | None = None) -> None:
        # id -> (node, its text, its '"key":text' items by key, in sorted order)
        self._known: dict[int, tuple[Any, str, dict[Any, str]]] = {}
        self._base = _without(base, _not_hashed_tree()) if base is not None else None  # as config_hash sees it
        if self._base is not None:
            self._remember(self._base)

    def _remember(self, node: Any) -> str:
        items: dict[Any, str] = {}
        if isinstance(node, dict) and all(isinstance(k, str) for k in node):
            items = {k: f"{_quoted(k)}:{self._remember(node[k])}" for k in sorted(node)}
            text = "{" + ",".join(items.values()) + "}"
        elif isinstance(node, list):
            text = "[" + ",".join(self._remember(v) for v in node) + "]"
        else:
            return _leaf(node)
        self._known[id(node)] = (node, text, items)
        return text

    def dumps(self, node: Any, scratch: dict[int, tuple[Any, str]] | None = None) -> str:
        """json.dumps(node, sort_keys=True, separators=(",", ":"), default=str), the same text.

        `scratch` remembers the texts of `node`'s own dicts (and holds them, so their identities
        stay theirs) for another call on a config that shares them: a job's config and its
        point's (without the seed). They must not change while it is in use."""
        return self._dumps(node, self._base, {} if scratch is None else scratch)

    def _dumps(self, node: Any, like: Any, scratch: dict[int, tuple[Any, str]]) -> str:
        # `like`: the base's node at the same path; `node` is a copy of it (a few children
        # replaced, added or dropped) or unrelated to it.
        known = self._known.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        seen = scratch.get(id(node))
        if seen is not None and seen[0] is node:
            return seen[1]
        text = self._encode(node, like, scratch)
        if isinstance(node, dict | list):
            scratch[id(node)] = (node, text)
        return text

    def _encode(self, node: Any, like: Any, scratch: dict[int, tuple[Any, str]]) -> str:
        if isinstance(node, dict):
            same = self._known.get(id(like)) if isinstance(like, dict) else None
            items = same[2] if same is not None and same[0] is like else {}
            if items and node.keys() == items.keys():  # the same keys: re-encode the replaced values only
                changed = [k for k, v in node.items() if v is not like[k]]
                if not changed:
                    return same[1]  # type: ignore[index]
                fresh = dict(items)
                for k in changed:
                    fresh[k] = f"{_quoted(k)}:{self._dumps(node[k], like[k], scratch)}"
                return "{" + ",".join(fresh.values()) + "}"
            out = []
            try:
                for k in sorted(node):
                    value = node[k]
                    item = items.get(k)
                    if item is None or like[k] is not value:
                        item = f"{_quoted(k)}:{self._dumps(value, like.get(k) if items else None, scratch)}"
                    out.append(item)
            except TypeError:  # keys that are not all strings: json's own rules
                return _dumps(node)
            return "{" + ",".join(out) + "}"
        if isinstance(node, list):
            return "[" + ",".join(self._dumps(v, None, scratch) for v in node) + "]"
        return _leaf(node)


def config_hash(
    cfg: DictConfig | dict[str, Any],
    length: int = 12,
    canonical: CanonicalJson | None = None,
    scratch: dict[int, tuple[Any, str]] | None = None,
) -> str:
    """The hash of a config's canonical JSON, without the NOT_HASHED keys. `canonical` (the
    planner's, one per base) and `scratch` (see CanonicalJson.dumps) only make it faster."""
    plain = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else cfg
    plain = _without(plain, _not_hashed_tree())  # type: ignore[arg-type]
    text = canonical.dumps(plain, scratch) if canonical is not None else _dumps(plain)
    return hashlib.sha256(text.encode()).hexdigest()[:length]
