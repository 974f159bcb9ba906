"""Where a sweep's records are stored: `hydra.sweep.dir` as a path, or as a `pyarrow.fs` URI (the
storage abstraction Ray Train's `storage_path` uses), opened by `pyarrow.fs.FileSystem.from_uri`.

Jobs and the sweeper write and read the records as files at a path, so a URI must name a file system
pyarrow opens as local files (`file:///shared/sweeps/lr`: a shared mount); an object store
(`s3://`, `gs://`, `hdfs://`) is refused with the reason (docs/RAY.md, "Storage").
"""

from __future__ import annotations

from pathlib import Path

from rllm_sweeps.problems import ConfigError, ConfigIssue

KEY = "hydra.sweep.dir"


def is_uri(given: str) -> bool:
    """A URI (`SCHEME://...`, `file:/...`) rather than a path (a path has no scheme)."""
    return "://" in given or given.startswith("file:")


def sweep_dir_path(given: str) -> Path:
    """The absolute local path of the sweep directory `given` (a path or a URI); ConfigError naming
    hydra.sweep.dir where pyarrow cannot open the URI or opens it as other than local files."""
    if not is_uri(given):
        return Path(given).resolve()
    from pyarrow import fs

    try:
        filesystem, path = fs.FileSystem.from_uri(given)
    except (ValueError, OSError) as err:  # pyarrow's ArrowInvalid is a ValueError; a store it cannot reach, OSError
        reason = str(err).strip().splitlines()[0]
        issue = ConfigIssue(KEY, f"{KEY}={given}: pyarrow.fs cannot open it: {reason} (docs/RAY.md)")
        raise ConfigError([issue]) from None
    if not isinstance(filesystem, fs.LocalFileSystem):
        raise ConfigError(
            [
                ConfigIssue(
                    KEY,
                    f"{KEY}={given}: pyarrow.fs opens it as {filesystem.type_name}, and a sweep's records are "
                    "written as files: mount it on every node and the sweeper's machine and give the mount "
                    "(a path or file:///...) (docs/RAY.md)",
                )
            ]
        )
    return Path(path).resolve()
