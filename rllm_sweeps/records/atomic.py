"""Writing a record so that readers see the old one or the new one, never half of one (result.json,
plan.json, a report): a temporary file beside it, then a rename."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# A record is as readable as a file open() creates (0644 under the usual umask): colleagues on
# shared storage read a sweep's results. mkstemp's temporary file alone would be 0600.
RECORD_MODE = 0o666 & ~_umask()


@contextlib.contextmanager
def open_atomic(path: Path, *, binary: bool = False) -> Iterator[IO[Any]]:
    """A file to write in pieces (a large plan.json; `binary`: a file fetched from an object store,
    records/store.py) that readers see whole or not at all: it replaces `path` when the block ends
    without an error."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, RECORD_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> Path:
    """Write a file so that readers see the old one or the new one, never half of one."""
    with open_atomic(path) as f:
        f.write(text)
    return path


def write_json_atomic(path: Path, data: Any) -> Path:
    """JSON, atomically (write_text_atomic)."""
    return write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True, default=str))
