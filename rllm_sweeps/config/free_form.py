"""SkyRL's free-form dictionaries: the config fields SkyRL types as ``Dict[str, Any]`` (vLLM's
``engine_init_kwargs``, ``chat_template_kwargs``, Megatron's ``transformer_config_kwargs``, ...).

SkyRL hands such a dictionary on unchanged (to vLLM, the tokenizer's chat template, Megatron), so any
key goes in it. The list is derived from SkyRL's own dataclasses (:func:`dict_field_paths`), never
written by hand; config/native.py caches it. Hydra's struct mode would refuse a key a dictionary does
not hold yet (a traceback for ``key={a: b}``): an override inside one is written ``++`` (add or set)
by config/spelling.py, so ``key.sub=v``, ``+key.sub=v`` and ``key={sub: v}`` all reach SkyRL as typed.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any


def _is_dict(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if tp is dict or origin is dict:
        return True
    if origin is typing.Union or str(origin) == "types.UnionType":  # Optional[Dict[...]]
        return any(_is_dict(a) for a in typing.get_args(tp) if a is not type(None))
    return False


def _dataclass_of(tp: Any) -> Any:
    """The dataclass a field holds (Optional[X] too), or None."""
    if dataclasses.is_dataclass(tp):
        return tp
    for arg in typing.get_args(tp):
        if dataclasses.is_dataclass(arg):
            return arg
    return None


def dict_field_paths(config_type: Any, prefix: str = "") -> list[str]:
    """Dotted paths of every field typed as a dictionary in a (nested) config dataclass."""
    out: list[str] = []
    hints = typing.get_type_hints(config_type)
    for f in dataclasses.fields(config_type):
        tp = hints.get(f.name, f.type)
        path = prefix + f.name
        if _is_dict(tp):
            out.append(path)
        elif (inner := _dataclass_of(tp)) is not None:
            out += dict_field_paths(inner, path + ".")
    return sorted(out)


def free_form_root(rel: str, paths: frozenset[str]) -> str | None:
    """The free-form dictionary `rel` (relative to skyrl.train) is or lies in, or None."""
    for path in paths:
        if rel == path or rel.startswith(path + "."):
            return path
    return None


__all__ = ["dict_field_paths", "free_form_root"]
