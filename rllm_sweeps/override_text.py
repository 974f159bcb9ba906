"""A Hydra override's text taken apart, in one place: `[prefix]key[=value]`.

    split_override("+trainer.lr=1e-4")   # OverrideText(prefix="+", key="trainer.lr", value="1e-4")
    split_override("~skyrl.jax")         # OverrideText(prefix="~", key="skyrl.jax", value=None)
    override_key("++a.b=1")              # "a.b"
    set_value("+hydra.run.dir=/x", "hydra.run.dir")   # "/x"; None for a delete or another key

The prefix is the run of `+` and `~` the text starts with, as written ("", "+", "++" and "~" are
Hydra's; a caller that checks a sweep file's keys reports any other). Hydra's parser reads the rest
(sweep syntax, the value's type); this serves the places that need only the key, before Hydra runs
or without it. Standard library only: every layer imports it.
"""

from __future__ import annotations

from typing import NamedTuple


class OverrideText(NamedTuple):
    prefix: str  # "", "+" (add), "++" (add or override), "~" (delete); as written
    key: str  # the key or config group, as written (`group@package` included)
    value: str | None  # after the first "="; None: no "=" (a delete `~key`, or no override)

    @property
    def deletes(self) -> bool:
        return "~" in self.prefix


def split_prefix(element: str) -> tuple[str, str]:
    """An override's left side (or a sweep file's parameter key) -> (prefix, key): "+a.b" -> ("+", "a.b")."""
    key = element.lstrip("+~")
    return element[: len(element) - len(key)], key


def split_override(text: str) -> OverrideText:
    left, eq, value = text.partition("=")
    prefix, key = split_prefix(left)
    return OverrideText(prefix, key, value if eq else None)


def override_key(text: str) -> str:
    """The key (or group) an override names, without its prefix: `+trainer.lr=1e-4` -> `trainer.lr`."""
    return split_override(text).key


def set_value(text: str, key: str) -> str | None:
    """The value the override sets `key` to (`key=V`, `+key=V`, `++key=V`); None when it sets
    another key, deletes it, or has no value."""
    parts = split_override(text)
    return parts.value if parts.key == key and not parts.deletes else None


__all__ = ["OverrideText", "override_key", "set_value", "split_override", "split_prefix"]
