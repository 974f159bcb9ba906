"""One sweeper per sweep directory: a file lock (SWEEP_DIR/sweeper.lock) held for the sweeper's life.

A second sweeper on the same directory would launch its jobs again as new generations and fence
off the first one's (which then report "superseded" failures): it is refused at once instead,
naming the running one. The kernel drops the lock when its holder dies, however it dies, so a rerun
after a crash takes it over; the file keeps the last holder's pid and host.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from rllm_sweeps.records.layout import SweepPaths


class SweeperBusy(RuntimeError):
    """Another live sweeper holds this sweep directory (the message names it)."""


def hold_sweep_dir(sweep_dir: Path) -> IO[str]:
    """Take SWEEP_DIR/sweeper.lock for this process's life, or raise SweeperBusy at once."""
    path = SweepPaths(sweep_dir).sweeper_lock
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        owner = handle.read().strip() or "pid unknown"
        handle.close()
        raise SweeperBusy(
            f"another sweeper ({owner}) is running this sweep ({path.parent}): wait for it to end, "
            f"or stop it (Ctrl-C or kill; its jobs checkpoint) and run this command again to resume"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {os.uname().nodename}\n")
    handle.flush()
    return handle
