"""Where a sweep's records are stored: `hydra.sweep.dir` as a path, or as a `pyarrow.fs` URI (the
storage abstraction Ray Train's `storage_path` uses), opened by `pyarrow.fs.FileSystem.from_uri`.

A URI of local files (`file:///shared/sweeps/lr`, a shared mount) is that directory. A URI of an object
store (`s3://`, `gs://`, `abfs://`, `hdfs://`) is used through a mirror on the sweeper's machine and
staging directories on the nodes (records/store.py), with the Ray-cluster launcher (docs/RAY.md, "Storage").
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from rllm_sweeps.problems import ConfigError, ConfigIssue, first_line
from rllm_sweeps.records.layout import JOBS_DIR
from rllm_sweeps.records.store import CHECKPOINTS, StoreSync, mirror_dir

KEY = "hydra.sweep.dir"


def is_uri(given: str) -> bool:
    """A URI (`SCHEME://...`, `file:/...`) rather than a path (a path has no scheme)."""
    return "://" in given or given.startswith("file:")


@dataclass(frozen=True)
class SweepStorage:
    """Where the sweeper reads and writes a sweep (`path`), and the object store that holds it where
    it is on one (`store_uri`; `path` is then the sweeper's mirror of it)."""

    path: Path
    store_uri: str | None = None


def locate(given: str) -> SweepStorage:
    """The sweep directory `given` (a path or a URI); ConfigError naming hydra.sweep.dir where pyarrow
    cannot open the URI."""
    if not is_uri(given):
        return SweepStorage(Path(given).resolve())
    from pyarrow import fs

    try:
        filesystem, path = fs.FileSystem.from_uri(given)
    except (ValueError, OSError) as err:  # pyarrow's ArrowInvalid is a ValueError; a store it cannot reach, OSError
        issue = ConfigIssue(KEY, f"{KEY}={given}: pyarrow.fs cannot open it: {first_line(err)} (docs/RAY.md)")
        raise ConfigError([issue]) from None
    if isinstance(filesystem, fs.LocalFileSystem):
        return SweepStorage(Path(path).resolve())
    return SweepStorage(mirror_dir(given), given)


def fetch_records(store: StoreSync, *, own_files_only: bool = False) -> int:
    """The store's records into the sweeper's mirror, never the checkpoints (`own_files_only`: the
    sweep's own files, none of its jobs'); how many files were fetched. ConfigError naming
    hydra.sweep.dir where the store does not answer."""
    skip = frozenset({CHECKPOINTS, JOBS_DIR} if own_files_only else {CHECKPOINTS})
    try:
        return store.pull(skip=skip)
    except OSError as err:
        issue = ConfigIssue(KEY, f"{KEY}={store.uri}: the store does not answer: {first_line(err)}")
        raise ConfigError([issue]) from None


def readable_sweep_dir(given: str) -> Path:
    """The sweep directory `given` (a path or a URI) as a local directory to read (`rllm-sweeps status`,
    `report`): an object store's sweep is fetched into this machine's mirror of it first, its
    records without the checkpoints. ConfigError naming what could not be read."""
    storage = locate(given)
    if storage.store_uri is None:
        return storage.path
    fetched = fetch_records(StoreSync(storage.store_uri, storage.path))
    print(f"{given}: fetched {fetched} files into {storage.path}", file=sys.stderr)
    return storage.path
