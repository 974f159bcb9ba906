"""Termination signals as an exception, held back while a teardown runs."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any


class Terminated(SystemExit):
    """Raised in the main thread when a termination signal arrives (exit code
    128 + signum if uncaught); ``with`` blocks unwind, so clusters stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


_teardown_depth = 0
# re-entrant: the Python-level handler runs in the main thread, possibly while
# that same thread is inside one of the short critical sections below
_teardown_lock = threading.RLock()
_pending_signal: int | None = None


@contextlib.contextmanager
def defer_signals() -> Iterator[None]:
    """While a teardown runs, our handler records the signal instead of
    raising into the middle of the teardown; it is raised afterwards."""
    global _teardown_depth, _pending_signal
    with _teardown_lock:
        _teardown_depth += 1
    try:
        yield
    finally:
        with _teardown_lock:
            _teardown_depth -= 1
            pending = _pending_signal if _teardown_depth == 0 else None
            if pending is not None:
                _pending_signal = None
        if pending is not None:
            if threading.current_thread() is threading.main_thread():
                raise Terminated(pending)
            os.kill(os.getpid(), pending)  # re-deliver: the main thread raises


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    global _pending_signal
    with _teardown_lock:
        if _teardown_depth > 0:
            _pending_signal = signum
            return
    raise Terminated(signum)


def install_sigterm_handler(
    signals: Sequence[int] = (signal.SIGTERM, signal.SIGHUP),
) -> dict[int, Any]:
    """Make termination signals raise :class:`Terminated` in the main thread
    (so ``with`` blocks holding a Ray node tear it down); a signal arriving during a
    teardown is held until it finishes.  Returns the previous handlers."""
    previous = {}
    for sig in signals:
        previous[sig] = signal.signal(sig, _raise_terminated)
    return previous


@contextlib.contextmanager
def sigterm_raises(
    signals: Sequence[int] = (signal.SIGTERM, signal.SIGHUP),
) -> Iterator[None]:
    """Context manager form of :func:`install_sigterm_handler` (restores the
    previous handlers on exit).  Main thread only."""
    previous = install_sigterm_handler(signals)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
