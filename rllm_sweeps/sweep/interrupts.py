"""Ctrl-C (SIGINT) on the sweeper, never lost. Python raises the KeyboardInterrupt in whatever code runs
when the signal lands, and where that is a finalizer (urllib3 closing a connection pool that the
garbage collector found, under Ray's job client) it only prints "Exception ignored" and the sweep runs
on. So the handler also records the signal, and the runner's loop raises it again (`check`)."""

from __future__ import annotations

import signal
import threading

_received = threading.Event()


def _on_sigint(signum: int, frame: object) -> None:
    _received.set()
    raise KeyboardInterrupt


def install() -> None:
    """Ctrl-C raises KeyboardInterrupt (even where the shell started this process ignoring SIGINT:
    `cmd &`, nohup) and is remembered for `check`."""
    _received.clear()
    signal.signal(signal.SIGINT, _on_sigint)


def check() -> None:
    """Raise the KeyboardInterrupt of a Ctrl-C that a finalizer swallowed (once)."""
    if _received.is_set():
        _received.clear()
        raise KeyboardInterrupt
