"""Seconds per phase of a step: ``with timer.phase("optim"): ...`` around a call, read once at the end."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class PhaseTimer:
    """Wall time since creation, and the seconds spent in each named phase (summed over its blocks)."""

    def __init__(self) -> None:
        self._start = time.perf_counter()
        self._seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def add(self, name: str, seconds: float) -> None:
        """Count time measured elsewhere (the rollout client's own time in ``backend.sample``)."""
        self._seconds[name] = self._seconds.get(name, 0.0) + seconds

    def __getitem__(self, name: str) -> float:
        """Seconds spent in ``name`` (0.0 if it never ran)."""
        return self._seconds.get(name, 0.0)

    def elapsed(self) -> float:
        return time.perf_counter() - self._start


__all__ = ["PhaseTimer"]
