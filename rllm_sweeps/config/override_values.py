"""Values as Hydra writes them: a typed value <-> the text right of `=` in an override.

A job is a list of overrides (`trainer.lr=0.0003`) that Hydra parses again in the job's
process, so every value the planner writes must parse back to exactly the value it
planned (type included: the string "1e-4" is not the float 1e-4). The sweep writes its
override texts (which also name run directories) here, and config/spelling.py the overrides
it puts in place of one SkyRL reads differently.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Quote, QuotedString
from hydra.errors import HydraException

from rllm_sweeps.config.private_api import override_value_text

_PARSER = OverridesParser.create()


def parse_value(text: str) -> Any:
    """The value Hydra gives `key=TEXT` (raises HydraException if TEXT is not a value)."""
    return _PARSER.parse_override(f"k={text}").value()


def is_sweep(override: str) -> bool:
    """Whether Hydra reads this override as a sweep (`k=a,b`, `k=range(...)`): several jobs, -m only."""
    try:
        return _PARSER.parse_override(override).is_sweep_override()
    except HydraException:
        return False  # not an override Hydra parses: its own message says why, where it is composed


def same(a: Any, b: Any) -> bool:
    """Equal and of the same types, recursively (1, 1.0 and True are three different values)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@functools.lru_cache(maxsize=4096)
def _format_str(value: str) -> str:
    candidates = [
        override_value_text(value),  # escapes , : = ( ) [ ] { } and spaces
        QuotedString(text=value, quote=Quote.single).with_quotes(),
        QuotedString(text=value, quote=Quote.double).with_quotes(),
    ]
    for text in candidates:
        try:
            if same(parse_value(text), value):
                return text
        except HydraException:
            continue
    raise ValueError(f"{value!r} cannot be written as a Hydra override value")


def format_value(value: Any) -> str:
    """The override text for a value; `parse_value(format_value(v))` gives v back."""
    if isinstance(value, str):
        return _format_str(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{format_value(str(k))}:{format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool) or value is None:
        return override_value_text(value).lower()
    if isinstance(value, int | float):
        return override_value_text(value)
    raise ValueError(f"{value!r} ({type(value).__name__}) cannot be written as a Hydra override value")
