"""Every problem at once, each with a did-you-mean: the collector the sweep parsers share, and
the hints that every unknown name (a key, a setting, a sampler) gets.

    problems = Problems()
    problems("conf/sweep/x.yaml: method", f"unknown method 'gird'{did_you_mean('gird', METHODS)}")
    problems.raise_if_any(SweepError)   # SweepError listing every problem, each naming its source

Users fix a sweep or a config in one pass when they see every mistake together, so parsers
collect instead of raising at the first one. What every check reports is defined here too, below
all of them: one problem (`ConfigIssue`) and a config or sweep that must not run (`ConfigError`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigIssue:
    key: str
    message: str

    def __str__(self) -> str:
        return self.message


class RecordError(ValueError):
    """A record of a sweep directory that does not read (records/model.py): which file, which field,
    what was expected. Here, with ConfigError, so that entry points catch it without importing pydantic."""


class ConfigError(ValueError):
    """A config that must not run; `issues` lists every problem found."""

    def __init__(self, issues: list[ConfigIssue], where: str = "") -> None:
        self.issues = issues
        self.where = where
        super().__init__(str(self))

    def __str__(self) -> str:
        head = f"Invalid configuration{' in ' + self.where if self.where else ''}"
        if len(self.issues) == 1:
            return f"{head}: {self.issues[0]}"
        return f"{head} ({len(self.issues)} problems):\n" + "\n".join(f"  - {i}" for i in self.issues)


Problem = Callable[[str, str], None]  # report one problem: (where it came from, what is wrong)


class Problems:
    """Collects problems as ConfigIssue("where", "where: message"), in the order found."""

    def __init__(self) -> None:
        self.issues: list[ConfigIssue] = []

    def __call__(self, where: str, message: str) -> None:
        self.issues.append(ConfigIssue(where, f"{where}: {message}"))

    def extend(self, issues: Iterable[ConfigIssue]) -> None:
        """Problems another check already worded (a nested parser's, a sweep file's loader's)."""
        self.issues += issues

    def raise_if_any(self, error: type[ConfigError] = ConfigError) -> None:
        if self.issues:
            raise error(self.issues)


def close_matches(word: str, known: Iterable[str], *, n: int, cutoff: float) -> list[str]:
    """The at most `n` names of `known` that look like `word` (difflib's ratio >= `cutoff`), best first."""
    return difflib.get_close_matches(word, list(known), n=n, cutoff=cutoff)


def hint(matches: Iterable[str]) -> str:
    """The hint for these matches: "; did you mean 'a' or 'b'?", or "" for none."""
    matches = list(matches)
    return "; did you mean " + " or ".join(f"'{m}'" for m in matches) + "?" if matches else ""


def did_you_mean(word: str, known: Iterable[str], *, n: int = 2, cutoff: float = 0.6) -> str:
    """The hint for a misspelt name among a few (settings, fields, samplers): up to `n` close
    names, or "" when none is close."""
    return hint(close_matches(word, known, n=n, cutoff=cutoff))


def did_you_mean_key(key: str, known: Iterable[str]) -> str:
    """The hint for a misspelt config key among thousands: up to three close keys of the same
    depth (trainer.lrr -> trainer.lr), else of any depth, else keys with the same last part
    (lr -> trainer.lr); "." when nothing comes close, so that the caller's sentence ends."""
    known = list(known)
    depth = key.count(".")
    same_depth = [k for k in known if k.count(".") == depth]
    matches = close_matches(key, same_depth, n=3, cutoff=0.75) or close_matches(key, known, n=3, cutoff=0.75)
    if not matches:
        leaf = key.rsplit(".", 1)[-1]
        matches = [k for k in known if k.rsplit(".", 1)[-1] == leaf][:3]
    return hint(matches) or "."


def first_line(err: BaseException) -> str:
    """An exception's message in one line (its first), or its type's name where it has none: a
    library's reason inside a one-line refusal."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
