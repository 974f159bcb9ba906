"""A sweep directory on an object store (`s3://`, `gs://`, `abfs://`, `hdfs://`: a `pyarrow.fs` URI that is
not local files), used through local copies, as Ray Train uses its `storage_path`.

Jobs and the sweeper write their records as local files (appends, atomic renames, file locks), which an
object store does not offer. So each side works in a directory of its own disk and moves whole files
through `pyarrow.fs` (`FileSystem.from_uri`, `copy_files`):
- the sweeper works in a mirror on its machine (`mirror_dir`); it pulls the store into it when it starts,
  pushes a job's directory before submitting it, pulls it while the job runs and when it ends, and
  pushes what it wrote itself at the end (sweep/run.py, launchers/ray_cluster.py);
- a job pulls its directory into a staging directory on its node, runs there, and pushes what changed
  every few seconds and when it ends (launchers/ray_task.py).
One side writes a job's files at a time (the job while its attempt runs, the sweeper otherwise), so a
transfer replaces a file whole and never merges two writers. Checkpoints go between the job's store
directory and the nodes only: the sweeper never pulls them.

A push sends a checkpoint's data before the files that make it count (its trainer state, `latest`), and
the records (metrics, result) last, read after the checkpoints were listed: a job resumed from the
store finds complete checkpoints, and metrics at least as far as the newest of them (rows past it are
dropped on resume: records/metrics.py).
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from rllm_sweeps.cachedir import cache_dir
from rllm_sweeps.problems import first_line
from rllm_sweeps.records.atomic import open_atomic
from rllm_sweeps.records.layout import LATEST_FILE, TRAINER_STATE_FILE, JobPaths, dir_name

if TYPE_CHECKING:
    from pyarrow import fs

_JOB = JobPaths(Path())
# Never moved: scratch, secrets (a job's Ray token), and any lock (`*.lock`: a job's, the sweeper's, the
# generation's) or file written under a temporary name (`*.tmp`).
NOT_SYNCED = frozenset({_JOB.work.name, _JOB.ray_auth_token.name})
NOT_SYNCED_SUFFIXES = (".lock", ".tmp")
CHECKPOINTS = _JOB.checkpoints.name
# The files that make a checkpoint count (training/checkpoints.py).
CHECKPOINT_MARKERS = frozenset({TRAINER_STATE_FILE, LATEST_FILE})
# Records are small and may be rewritten at the same size within the store's one-second clock:
# a pull fetches a file under this size every time, a larger one where its size or time changed.
ALWAYS_FETCHED_BYTES = 1 << 20
TRANSFER_THREADS = 8  # files moved at a time (a checkpoint is many files)
FETCH_CHUNK_BYTES = 1 << 20


STORE_TRIES = 3  # an object store that does not answer is asked again, STORE_RETRY_S apart
STORE_RETRY_S = 2.0


def patiently[T](action: Callable[[], T], what: str, *, tries: int) -> T:
    """`action`, asked again where the store does not answer (OSError: pyarrow's S3, GCS, ... client),
    each failure printed in one line; the last one raised."""
    for attempt in range(1, tries + 1):
        try:
            return action()
        except OSError as err:
            print(f"[store] could not {what} (try {attempt} of {tries}): {first_line(err)}", flush=True)
            if attempt == tries:
                raise
            time.sleep(STORE_RETRY_S)
    raise AssertionError("unreachable: tries >= 1")


def mirror_dir(uri: str) -> Path:
    """Where the sweeper keeps its copy of the sweep stored at `uri`: one directory per stored path,
    named after it (the query, which holds the endpoint and options, left out)."""
    parts = urlsplit(uri)
    return cache_dir() / "store-mirrors" / dir_name(f"{parts.scheme}_{parts.netloc}{parts.path}".rstrip("/"))


def child_uri(uri: str, relative: str) -> str:
    """The URI of `relative` (a POSIX path) under the directory at `uri`, its query kept."""
    parts = urlsplit(uri)
    path = str(PurePosixPath(parts.path or "/") / relative) if relative else parts.path
    return urlunsplit(parts._replace(path=path))


@dataclass
class Stamp:
    local: tuple[int, int]  # (size, mtime_ns) of the local copy when it was last sent or fetched
    stored: tuple[int, int]  # (size, mtime_ns) of the stored copy then


def _synced(relative: PurePosixPath) -> bool:
    return not any(part in NOT_SYNCED or part.endswith(NOT_SYNCED_SUFFIXES) for part in relative.parts)


def _push_order(relative: PurePosixPath) -> int:
    """0: a checkpoint's data; 1: what makes a checkpoint count; 2: the records, read last."""
    if CHECKPOINTS not in relative.parts:
        return 2
    return 1 if relative.name in CHECKPOINT_MARKERS else 0


@dataclass
class StoreSync:
    """A directory at `uri` on an object store and its copy at `local`: what was moved, by relative path."""

    uri: str
    local: Path
    stamps: dict[str, Stamp] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from pyarrow import fs

        self.filesystem, self.base = fs.FileSystem.from_uri(self.uri)
        self._local_fs = fs.LocalFileSystem()

    def stored_path(self, relative: str) -> str:
        return f"{self.base.rstrip('/')}/{relative}" if relative else self.base

    def stored_files(self, under: str = "") -> dict[str, fs.FileInfo]:
        """Every stored file under `under`, by path relative to the directory."""
        from pyarrow import fs

        selector = fs.FileSelector(self.stored_path(under), recursive=True, allow_not_found=True)
        prefix = self.base.rstrip("/") + "/"
        return {
            info.path.removeprefix(prefix): info
            for info in self.filesystem.get_file_info(selector)
            if info.type == fs.FileType.File
        }

    def pull(self, under: str = "", *, skip: frozenset[str] = frozenset()) -> int:
        """Fetch what changed in the store under `under` (a directory relative to this one) into the
        local copy, TRANSFER_THREADS files at a time, each written under a temporary name and renamed;
        directories named in `skip` (e.g. checkpoints) are left where they are. How many files were
        fetched."""
        wanted: list[tuple[str, fs.FileInfo]] = []
        for relative, info in sorted(self.stored_files(under).items()):
            rel = PurePosixPath(relative)
            if not _synced(rel) or skip.intersection(rel.parts[:-1]):
                continue
            target, stamp = self.local / relative, self.stamps.get(relative)
            stored = (info.size or 0, info.mtime_ns or 0)
            if target.is_file() and stamp is not None and stamp.local == _local_stamp(target):
                if stamp.stored == stored and stored[0] >= ALWAYS_FETCHED_BYTES:
                    continue
            wanted.append((relative, info))

        def fetch(item: tuple[str, fs.FileInfo]) -> tuple[str, Stamp]:
            relative, info = item
            target = self.local / relative
            self._fetch(info.path, target)
            return relative, Stamp(_local_stamp(target), (info.size or 0, info.mtime_ns or 0))

        with ThreadPoolExecutor(TRANSFER_THREADS) as pool:  # pyarrow's clients wait without the GIL
            self.stamps.update(pool.map(fetch, wanted))
        return len(wanted)

    def _fetch(self, stored: str, target: Path) -> None:
        """One file, written as a record is (records/atomic.py): a reader of the local copy never sees
        half of it, and it is as readable as the sweep's other records."""
        with self.filesystem.open_input_stream(stored) as source, open_atomic(target, binary=True) as out:
            shutil.copyfileobj(source, out, FETCH_CHUNK_BYTES)

    def push(self, under: str = "", *, everything: bool = False) -> int:
        """Send what changed locally under `under` since it was last moved (`everything`: every
        record, changed or not; a checkpoint's files still only where changed), in the order the
        module's docstring gives; a file moved before and gone locally is deleted from the store
        (pruned checkpoints). How many files were sent."""
        root = self.local / under if under else self.local
        listed: dict[int, list[str]] = {0: [], 1: [], 2: []}
        for path in sorted(root.rglob("*")):
            rel = PurePosixPath(path.relative_to(self.local).as_posix())
            if _synced(rel) and path.is_file():
                listed[_push_order(rel)].append(str(rel))
        # What makes a checkpoint count is read now, as listed: the `latest` sent names a checkpoint
        # whose data was listed with it and is sent before it (a newer `latest` waits for the next push).
        markers = [(relative, snap) for relative in listed[1] if (snap := self._snapshot(relative)) is not None]
        data = [(relative, now) for relative in listed[0] if (now := self._changed(relative, False)) is not None]
        with ThreadPoolExecutor(TRANSFER_THREADS) as pool:  # pyarrow's clients wait without the GIL
            sent = sum(pool.map(lambda item: self._send(*item), data))
        for relative, (before, content) in markers:
            stamp = self.stamps.get(relative)
            if stamp is None or stamp.local != before:
                sent += self._send(relative, before, content)
        for relative in listed[2]:
            if (before := self._changed(relative, everything)) is not None:
                sent += self._send(relative, before)
        prefix = f"{under.rstrip('/')}/" if under else ""
        for relative in [r for r in self.stamps if r.startswith(prefix) and not (self.local / r).exists()]:
            with contextlib.suppress(FileNotFoundError):
                self.filesystem.delete_file(self.stored_path(relative))
            del self.stamps[relative]
        return sent

    def _changed(self, relative: str, everything: bool) -> tuple[int, int] | None:
        """The local file's stamp where it is to be sent (changed since it was last moved, or
        `everything`); None where not, or where it is gone (a pruned checkpoint)."""
        try:
            now = _local_stamp(self.local / relative)
        except FileNotFoundError:
            return None
        stamp = self.stamps.get(relative)
        return now if everything or stamp is None or stamp.local != now else None

    def _snapshot(self, relative: str) -> tuple[tuple[int, int], bytes] | None:
        """A small file's stamp and content, read together now; None where it is gone."""
        path = self.local / relative
        try:
            return _local_stamp(path), path.read_bytes()
        except FileNotFoundError:
            return None

    def _send(self, relative: str, before: tuple[int, int], content: bytes | None = None) -> int:
        """One file (or `content` in its place), recorded with its local stamp from before it was read:
        a change made while it was sent is sent next time."""
        from pyarrow import fs

        target = self.stored_path(relative)
        try:
            if content is not None:
                with self.filesystem.open_output_stream(target) as out:
                    out.write(content)
            else:
                source = str(self.local / relative)
                fs.copy_files(source, target, source_filesystem=self._local_fs, destination_filesystem=self.filesystem)
        except FileNotFoundError:  # removed while it was sent
            return 0
        info = self.filesystem.get_file_info(target)
        self.stamps[relative] = Stamp(before, (info.size or 0, info.mtime_ns or 0))
        return 1

    def read_stored(self, relative: str) -> bytes | None:
        """One stored file's content, or None where there is none."""
        try:
            with self.filesystem.open_input_stream(self.stored_path(relative)) as got:
                return got.read()
        except FileNotFoundError:
            return None


def _local_stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return (st.st_size, st.st_mtime_ns)
