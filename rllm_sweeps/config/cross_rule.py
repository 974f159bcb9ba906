"""A rule over several config keys (rules.py's, gpu_trainer_rules.py's); validate.py applies them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class CrossRule:
    """A rule over several keys: `keys` (common keys or native paths) are named in the message.

    `holds(*values)` says whether the values of `keys` are fine; `explain(*values)`, where given,
    adds what fits the values at hand to `message` (say, the nearest allowed values)."""

    keys: tuple[str, ...]
    holds: Callable[..., bool]
    message: str
    explain: Callable[..., str] | None = None

    def describe(self, *values: object) -> str:
        return self.message + (self.explain(*values) if self.explain is not None else "")


__all__ = ["CrossRule"]
