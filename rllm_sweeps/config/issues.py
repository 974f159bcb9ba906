"""What a config check reports: one problem (`ConfigIssue`) and a config that must not run
(`ConfigError`). Kept apart from validate.py so that the checks it calls (engine_settings.py) can
report issues without importing the validator back."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigIssue:
    key: str
    message: str

    def __str__(self) -> str:
        return self.message


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
