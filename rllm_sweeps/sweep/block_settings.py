"""A sweep's settings block (`pbt:`, `confirm:`): the file's mapping with the command line's
`sweep.<block>.KEY` settings on top, each value with where it was written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rllm_sweeps.problems import did_you_mean

Located = dict[str, tuple[Any, str]]  # setting -> (value, where it was written)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def block_settings(
    block: Any, where: str, parts: Mapping[str, tuple[Any, str]], fields: Sequence[str], name: str, problem: Any
) -> Located:
    """`block`'s settings with `parts` on top; a block that is no mapping or an unknown setting goes to
    `problem(where, message)` (the block is then read as empty, the setting ignored by the caller)."""
    if block is None:
        block = {}
    if not isinstance(block, Mapping):
        problem(where, f"{name} is a mapping of {', '.join(fields)}; got {block!r}")
        block = {}
    raw: Located = {str(k): (v, f"{where}.{k}") for k, v in block.items()}
    raw.update(parts)
    for key, (_, at) in raw.items():
        if key not in fields:
            problem(
                at, f"unknown {name} setting '{key}'{did_you_mean(key, fields, n=1)} (settings: {', '.join(fields)})"
            )
    return raw


__all__ = ["Located", "block_settings", "is_int"]
