"""Whether this process may create and write a directory: asked before a job or a sweep writes,
so that a read-only place is one line naming it, not a PermissionError's traceback."""

from __future__ import annotations

import os
from pathlib import Path


def unwritable(directory: Path) -> str | None:
    """Why `directory` (to be created if missing, then written in) cannot be, or None: the
    nearest existing directory on its path must let this user write and enter it."""
    probe = Path(os.path.abspath(directory))
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a directory, so {directory} cannot be made"
    if not os.access(probe, os.W_OK | os.X_OK):
        what = (
            f"{directory} cannot be written"
            if probe == Path(os.path.abspath(directory))
            else f"{directory} cannot be made"
        )
        return f"permission denied: {what} ({probe} is not writable by this user)"
    return None
