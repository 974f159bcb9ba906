"""Data files opened through the ``datasets`` library: parquet, jsonl or json, as Arrow tables memory-mapped
from ``datasets``' cache (built once per file and reused by every job of the machine), so a job holds the
rows it reads, not the whole dataset. ``Examples`` is a split (several files, over-long rows left out) as
the loop's sequence of examples."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rllm_sweeps.data.formats import DataFormat, FormatSpec, detect, is_rllm_verl_copy, to_example
from rllm_sweeps.problems import first_line

BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json"}


class DataFileError(ValueError):
    """A file that cannot be used; the message names it and says why."""


def datasets_cache() -> Path:
    from rllm_sweeps.cachedir import cache_dir

    return cache_dir() / "datasets"


def open_rows(path: str) -> Any:
    """The file's rows as a ``datasets.Dataset`` backed by a memory-mapped Arrow file."""
    import datasets

    full = Path(path).expanduser()
    builder = BUILDERS.get(full.suffix.lower())
    if builder is None:
        raise DataFileError(f"{path}: expected a .parquet, .jsonl or .json file")
    if not full.is_file():
        raise DataFileError(f"{path}: no such file")
    if not os.access(full, os.R_OK):
        raise DataFileError(f"{path}: not readable (permissions)")
    if _no_rows(full):
        raise EmptyFileError(f"{path} has no rows")
    datasets.disable_progress_bars()
    logging.getLogger("datasets").setLevel(logging.CRITICAL)  # its reader logs what the error below says
    try:
        return datasets.load_dataset(builder, data_files=[str(full)], split="train", cache_dir=str(datasets_cache()))
    except Exception as err:  # pyarrow's or the json reader's reason, in one line
        reason = first_line(err)
        cause = err.__cause__ or err.__context__
        if cause is not None and str(cause).strip():
            reason = str(cause).strip().splitlines()[0]
        raise DataFileError(f"{path}: cannot be read as {builder}: {reason}") from None


class EmptyFileError(DataFileError):
    """A file without rows (``datasets`` cannot read an empty parquet file)."""


def _no_rows(path: Path) -> bool:
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(path).metadata.num_rows == 0
        except Exception:  # not parquet: the reader says why
            return False
    with path.open("rb") as f:
        return not f.read(1 << 16).strip() and path.stat().st_size < 1 << 16


@dataclass
class DataFile:
    """One opened file and its format."""

    path: str
    rows: Any  # datasets.Dataset
    spec: FormatSpec
    rllm_copy: bool  # rLLM's verl copy: the rows are in extra_info

    @classmethod
    def open(cls, path: str) -> DataFile:
        rows = open_rows(path)
        spec = detect(rows.column_names)  # FormatError names the missing column
        copy = spec.format is DataFormat.VERL and len(rows) > 0 and is_rllm_verl_copy(rows[0])
        return cls(path, rows, spec, copy)

    def describe(self) -> str:
        what = "rLLM's verl copy (rows read from extra_info)" if self.rllm_copy else f"{self.spec.format.value} format"
        return f"{self.path}: {what}, {len(self.rows):,} rows"

    def prompts(self, batch_size: int = 4096, rows: np.ndarray | None = None) -> Iterator[list[Any]]:
        """The prompts (of ``rows`` when given), in batches (only the prompt's column is read)."""
        column = "extra_info" if self.rllm_copy else self.spec.prompt
        table = self.rows.select_columns([column])
        for batch in (table if rows is None else table.select(rows)).iter(batch_size=batch_size):
            values = batch[column]
            if self.rllm_copy:
                values = [v.get("question", v.get("prompt")) for v in values]
            yield values

    def example(self, index: int, default_env: str) -> dict[str, Any]:
        return to_example(self.spec, self.rows[int(index)], default_env)


class Examples(Sequence):
    """A split's examples: the files' rows in order, less the rows left out (``kept``: their global indices)."""

    def __init__(self, files: list[DataFile], kept: np.ndarray, default_env: str) -> None:
        self.files = files
        self.kept = kept
        self.default_env = default_env
        self._starts = np.cumsum([0] + [len(f.rows) for f in files])

    def __len__(self) -> int:
        return len(self.kept)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        row = int(self.kept[i])
        f = int(np.searchsorted(self._starts, row, side="right")) - 1
        return self.files[f].example(row - int(self._starts[f]), self.default_env)


__all__ = ["BUILDERS", "DataFile", "DataFileError", "EmptyFileError", "Examples", "datasets_cache", "open_rows"]
