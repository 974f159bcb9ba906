"""The config hash: what identifies a job's training configuration (resume, sweeps).

Keys that change where or how results are reported, not what is trained, are left out,
together with their native mirrors from the key map.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Iterable
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
    """_dumps(value), without building an encoder for a leaf (a job's hash encodes a few)."""
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


class HashTemplate:
    """config_hash for many configs that equal one base but at a few paths (a sweep's jobs): the
    canonical JSON of everything else is written once, with holes where those paths are, and a
    config's hash encodes only its own values there. `drop` paths are left out as well (a point's
    hash: the job's config without its seed); they are removed from dicts only, as _strip_seed.

        template = HashTemplate(base, changed={"trainer.lr", ...}, drop=("trainer.seed",))
        template.hash(job_plain) == config_hash(job_plain less the drop paths)

    The caller vouches that the configs equal `base` outside `changed` (the fast composition's
    copy-on-write tree writes nowhere else). ValueError when a path cannot be a hole (it is not
    in the base; a drop path or a NOT_HASHED key lies inside a changed value): hash those configs
    with config_hash.
    """

    def __init__(self, base: dict[str, Any], changed: Iterable[str], drop: Iterable[str] = ()) -> None:
        hashed = _without(base, _not_hashed_tree())
        holes = {h for h in (_hole(base, hashed, path) for path in changed) if h is not None}
        holes = {h for h in holes if not any(h[: len(o)] == o for o in holes if o != h)}  # outermost only
        for hole in holes:
            if _not_hashed_below(hole):
                raise ValueError(f"{'.'.join(hole)} holds keys the hash leaves out")
        drops = set()
        for path in drop:
            parts = tuple(path.split("."))
            if any(parts[: len(h)] == h and parts != h for h in holes):
                raise ValueError(f"{path} is inside a changed value")
            if _dict_path(hashed, parts):
                drops.add(parts)
        self._holes = holes - drops
        self._parts: list[tuple[str, ...]] = []  # the holes, in the order the text has them
        self._text: list[str] = [""]  # constant text before each hole, then after the last
        self._write(hashed, (), drops)
        self._head = hashlib.sha256(self._text[0].encode())  # hash() starts from a copy
        self._tail = [t.encode() for t in self._text[1:]]

    def _write(self, node: Any, path: tuple[str, ...], drops: set[tuple[str, ...]]) -> None:
        """Append `node`'s canonical JSON to the template: text, and a hole per changed path."""
        if path in self._holes:
            self._parts.append(path)
            self._text.append("")
            return
        inside = [h for h in (*self._holes, *drops) if h[: len(path)] == path and h != path]
        if not inside:
            self._text[-1] += _dumps(node)
            return
        if not all(isinstance(k, str) for k in node):
            raise ValueError(f"{'.'.join(path)}: keys that are not all strings")
        self._text[-1] += "{"
        first = True
        for key in sorted(node):
            child = (*path, key)
            if child in drops:
                continue
            self._text[-1] += ("" if first else ",") + _quoted(key) + ":"
            first = False
            self._write(node[key], child, drops)
        self._text[-1] += "}"

    def values(self, plain: dict[str, Any]) -> list[str]:
        """The canonical JSON of `plain`'s value at each hole (KeyError/TypeError: a hole is missing)."""
        out = []
        for path in self._parts:
            node: Any = plain
            for part in path:
                node = node[part]
            out.append(_leaf(node))
        return out

    def text(self, plain: dict[str, Any]) -> str:
        """The canonical JSON config_hash takes of `plain`."""
        out = [self._text[0]]
        for value, after in zip(self.values(plain), self._text[1:], strict=True):
            out += (value, after)
        return "".join(out)

    def hash(self, plain: dict[str, Any], length: int = 12) -> str:
        """config_hash's hash of `plain`: sha256(text(plain)), the text before the first hole hashed once."""
        digest = self._head.copy()
        for value, after in zip(self.values(plain), self._tail, strict=True):
            digest.update(value.encode())
            digest.update(after)
        return digest.hexdigest()[:length]


def _hole(base: dict[str, Any], hashed: dict[str, Any], dotted: str) -> tuple[str, ...] | None:
    """Where a config that may differ from `base` at `dotted` differs in the hashed tree: the
    path, cut at the first list (a list is re-encoded whole); None when the hash does not see it."""
    parts = dotted.split(".")
    node: Any = hashed
    for i, part in enumerate(parts):
        if not isinstance(node, dict):
            return tuple(parts[:i])
        if part not in node:
            if _dict_path(base, tuple(parts[: i + 1])):
                return None  # a NOT_HASHED key
            raise ValueError(f"{dotted} is not a key of the base")
        node = node[part]
    return tuple(parts)


def _not_hashed_below(path: tuple[str, ...]) -> bool:
    """True if a NOT_HASHED path lies strictly inside `path` (a value there is not hashed whole)."""
    node: Any = _not_hashed_tree()
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return isinstance(node, dict)


def _dict_path(tree: Any, path: tuple[str, ...]) -> bool:
    """True if `path` leads to a value through dicts only."""
    for part in path:
        if not isinstance(tree, dict) or part not in tree:
            return False
        tree = tree[part]
    return True


def config_hash(cfg: DictConfig | dict[str, Any], length: int = 12) -> str:
    """The hash of a config's canonical JSON, without the NOT_HASHED keys (HashTemplate: the
    same hash, faster, for many configs that differ from one base at a few paths)."""
    plain = OmegaConf.to_container(cfg, resolve=True) if OmegaConf.is_config(cfg) else cfg
    plain = _without(plain, _not_hashed_tree())  # type: ignore[arg-type]
    return _sha(_dumps(plain), length)


def _sha(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]
