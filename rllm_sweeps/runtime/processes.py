"""The processes of one Ray node, read from Linux's /proc.

A node is a session (``setsid``) led by our ``ray start`` process; processes are named by
(pid, start time) so a recycled PID is never mistaken for one of ours, and zombies count as dead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Mapping
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class _Stat:
    state: str
    ppid: int
    pgrp: int
    session: int
    starttime: int


def _stat(pid: int) -> _Stat | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes().decode(errors="replace")
    except OSError:
        return None
    rest = raw[raw.rfind(")") + 2 :].split()
    # fields after comm: state(3) ppid(4) pgrp(5) session(6) ... starttime(22)
    return _Stat(rest[0], int(rest[1]), int(rest[2]), int(rest[3]), int(rest[19]))


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot; with the pid, names a process), None if gone."""
    st = _stat(pid)
    return None if st is None else st.starttime


def pid_alive(pid: int, starttime: int | None = None) -> bool:
    """True if ``pid`` runs and is not a zombie (and, if given, still has the
    same start time, i.e. was not recycled)."""
    st = _stat(pid)
    if st is None or st.state in ("Z", "X", "x"):
        return False
    return starttime is None or st.starttime == starttime


def _all_stats() -> dict[int, _Stat]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                out[int(name)] = st
    return out


def cluster_processes(session_id: int, extra: Mapping[int, int] | None = None) -> dict[int, int]:
    """Live (non-zombie) processes of one node: members of session
    ``session_id``, their descendants, and any ``extra`` {pid: starttime}
    still alive.  Returns {pid: starttime}."""
    stats = _all_stats()
    found = {
        pid: st.starttime for pid, st in stats.items() if st.session == session_id and st.state not in ("Z", "X", "x")
    }
    # descendants that might have left the session (setsid)
    children: dict[int, list[int]] = {}
    for pid, st in stats.items():
        children.setdefault(st.ppid, []).append(pid)
    stack = list(found)
    while stack:
        for c in children.get(stack.pop(), []):
            st = stats[c]
            if c not in found and st.state not in ("Z", "X", "x"):
                found[c] = st.starttime
                stack.append(c)
    for pid, start in (extra or {}).items():
        st = stats.get(pid)
        if st is not None and st.starttime == start and st.state not in ("Z", "X", "x"):
            found[pid] = start
    found.pop(os.getpid(), None)
    return found


def signal_all(procs: Mapping[int, int], sig: int) -> None:
    """Send ``sig`` to each {pid: starttime} that is still that same process."""
    for pid, start in procs.items():
        if pid_alive(pid, start):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


def wait_gone(procs: Mapping[int, int], timeout: float) -> dict[int, int]:
    """Wait up to ``timeout`` s for ``procs`` to end; returns those still alive."""
    deadline = time.monotonic() + timeout
    while True:
        left = {p: s for p, s in procs.items() if pid_alive(p, s)}
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)
