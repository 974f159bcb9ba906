"""A plan's jobs kept on disk, not in memory: a sequence of PlannedJob over a temporary file.

A run plans (and validates) every job before it launches any; holding 100,000 jobs as
Python objects would take about a gigabyte, so the planner appends each job here as one
JSON line and keeps only its offset (8 bytes). Reading is by index or in order; the
file goes away with the object (an unnamed temporary file).
"""

from __future__ import annotations

import json
import os
import tempfile
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str)  # json.dumps's, built once (not per item)


class JobSpool(Sequence[Any]):
    """Items (PlannedJob, or anything `encode`/`decode` turn into a dict and back), in order."""

    def __init__(self, encode: Callable[[Any], dict[str, Any]], decode: Callable[[dict[str, Any]], Any]) -> None:
        self._encode, self._decode = encode, decode
        self._file = tempfile.TemporaryFile("w+b")
        self._offsets = array("q")
        self._end = 0

    def append(self, item: Any) -> None:
        line = _ENCODER.encode(self._encode(item)).encode() + b"\n"
        self._file.write(line)  # always at the end: reads use pread, which moves no file position
        self._offsets.append(self._end)
        self._end += len(line)

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        self._file.flush()
        start = self._offsets[index]
        end = self._offsets[index + 1] if index + 1 < len(self) else self._end
        return self._decode(json.loads(os.pread(self._file.fileno(), end - start, start)))

    def __iter__(self) -> Iterator[Any]:
        for line in self.lines():
            yield self._decode(json.loads(line))

    def lines(self) -> Iterator[bytes]:
        """The items' JSON texts, in order (to write them out without decoding them)."""
        self._file.flush()
        fd, left, pos, rest = self._file.fileno(), len(self), 0, b""
        while left:
            chunk = os.pread(fd, 1 << 20, pos)
            if not chunk:
                raise OSError("the plan's spool file ended early")
            pos += len(chunk)
            *complete, rest = (rest + chunk).split(b"\n")
            yield from complete[:left]
            left -= min(left, len(complete))
