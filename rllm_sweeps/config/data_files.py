"""A task's data files, checked with the config: they exist and their header parses (a jsonl's
first line, a parquet file's schema; not every row). A missing or corrupt file is then refused by
the dry run and the planner, before a job starts, not by every job of a sweep at run time."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from rllm_sweeps.problems import ConfigIssue


def is_data_path_key(name: str) -> bool:
    """task.dataset's keys that name a file: `path`, `val_path`, `train_path`, ..."""
    return name == "path" or name.endswith("_path")


def data_file_issues(plain: dict[str, Any]) -> list[ConfigIssue]:
    dataset = (plain.get("task") or {}).get("dataset") or {}
    issues = []
    for name, value in dataset.items():
        if not is_data_path_key(str(name)) or not isinstance(value, str) or not value or "://" in value:
            continue
        key = f"task.dataset.{name}"
        path = Path(value).expanduser()
        try:
            stat = path.stat()
        except OSError:
            issues.append(ConfigIssue(key, f"{key}={value!r} is invalid: there is no file {path.absolute()}"))
            continue
        if path.is_file() and (problem := _header_problem(str(path.absolute()), stat.st_mtime_ns, stat.st_size)):
            issues.append(ConfigIssue(key, f"{key}={value!r} is invalid: {problem}"))
    return issues


@functools.lru_cache(maxsize=64)  # a sweep's jobs share their files: read each header once
def _header_problem(path: str, mtime_ns: int, size: int) -> str | None:
    """Why the file's header does not parse, or None (the file's stat keys the cache)."""
    if not os.access(path, os.R_OK):
        return f"{path} cannot be read by this user"
    suffix = Path(path).suffix
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            pq.read_schema(path)
        except Exception as err:
            return f"{path} is not a readable parquet file ({str(err).splitlines()[0]})"
    elif suffix == ".jsonl":
        with open(path, errors="replace") as f:
            first = next((line for line in f if line.strip()), None)
        if first is None:
            return f"{path} is empty"
        try:
            row = json.loads(first)
        except json.JSONDecodeError as err:
            return f"{path}: line 1 is not JSON ({err.msg}); a .jsonl file holds one JSON object per line"
        if not isinstance(row, dict):
            return f"{path}: line 1 is not a JSON object (one row per line, each an object)"
    elif size == 0:
        return f"{path} is empty"
    return None
