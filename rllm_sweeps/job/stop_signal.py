"""A request to stop (SIGTERM from a scheduler or `scancel`, SLURM's SIGUSR2 warning, Ctrl-C): the job
stops at the next step boundary, saves a checkpoint and exits; outside the loop, at once."""

from __future__ import annotations

import signal
import sys
from typing import Any


class StopRequested:
    """SIGTERM/SIGINT/SIGUSR2 -> stop at the next step boundary (checkpoint, then exit)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR2)

    def __init__(self) -> None:
        self.signum: int | None = None
        self.in_training = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequested:
        for sig in self.SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, frame: Any) -> None:
        # A scheduler often signals twice (SLURM's warning SIGUSR2, then submitit's SIGTERM):
        # keep heading for the step boundary. Only a person pressing Ctrl-C twice means "now".
        again = self.signum is not None and signum == signal.SIGINT == self.signum
        self.signum = signum
        print(f"\nreceived {signal.Signals(signum).name}: stopping after this step", file=sys.stderr, flush=True)
        if not self.in_training or again:
            # Outside the loop there is no step boundary to wait for.
            raise KeyboardInterrupt(signal.Signals(signum).name)

    def __bool__(self) -> bool:
        return self.signum is not None


__all__ = ["StopRequested"]
