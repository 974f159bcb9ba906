"""How every record of a sweep directory is written and read: through its pydantic model alone.

A record is a pydantic dataclass (`pydantic.dataclasses.dataclass`: positional construction,
`dataclasses.replace` and frozen records as before), or a pydantic BaseModel where the record has
open-ended fields (a metrics row's metrics, by name), with a `schema_version` field whose default
is the version this code writes: that default is the record's one definition of its version.
A versioned record lists, in `MIGRATIONS`, one function per older version that turns a record
of that version into one of the next, so a sweep directory written by an older release reads
(and resumes) under this one. A file with no `schema_version` is version 0: what the releases
before versioned records wrote.

A file that does not validate is one `RecordError` naming the file, the field and what was
expected, never a KeyError. The models' JSON Schemas are published (`rllm-sweeps schema`,
records/schemas.py): the sweep directory is an interface other tools read.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from rllm_sweeps.problems import RecordError
from rllm_sweeps.records.atomic import write_text_atomic

# One step of a record's history: the JSON of version k in, the JSON of version k + 1 out.
Migration = Callable[[dict[str, Any]], dict[str, Any]]
VERSION_FIELD = "schema_version"


def same_shape(data: dict[str, Any]) -> dict[str, Any]:
    """A migration where only the version stamp is new (version 0 -> 1 of most records)."""
    return data


@functools.cache
def adapter[R](cls: type[R]) -> TypeAdapter[R]:
    return TypeAdapter(cls)


def _fields(cls: type) -> dict[str, Any]:
    """The model's fields (a pydantic dataclass's or a BaseModel's: both have them here)."""
    return getattr(cls, "__pydantic_fields__", None) or {f.name: f for f in dataclasses.fields(cls)}


def version_of(cls: type) -> int:
    """The schema version this code writes for `cls` (its `schema_version` field's default)."""
    return int(_fields(cls)[VERSION_FIELD].default)


def dump(record: Any) -> Any:
    """The record as JSON data (enums as their strings, paths as text, tuples as lists)."""
    return adapter(type(record)).dump_python(record, mode="json")


def dumps(record: Any, indent: int | None = 2) -> str:
    return json.dumps(dump(record), indent=indent, sort_keys=indent is not None)


def migrate(cls: type, data: Any, source: str) -> Any:
    """`data` (a record of `cls`, of any version this code knows) in today's shape."""
    if not isinstance(data, dict) or VERSION_FIELD not in _fields(cls):
        return data
    current, version = version_of(cls), data.get(VERSION_FIELD, 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise RecordError(f"{source}: field '{VERSION_FIELD}': expected a whole number >= 0, got {version!r}")
    if version > current:
        raise RecordError(
            f"{source}: written by a newer rllm-sweeps ({cls.__name__} schema {version}; this one reads up to "
            f"{current}): upgrade rllm-sweeps to read it"
        )
    migrations: Mapping[int, Migration] = cls.MIGRATIONS  # every versioned record declares its own
    for step in range(version, current):
        try:
            data = {**migrations[step](dict(data)), VERSION_FIELD: step + 1}
        except RecordError as err:  # a migration says what it cannot do; the file is named here
            raise RecordError(f"{source}: {err}") from None
    return data


def load[R](cls: type[R], data: Any, source: str) -> R:
    """A record of `cls` from its JSON data, migrated from an older version where it is one.
    `source` names where the data came from (a file, a file's line), for the error."""
    data = migrate(cls, data, source)
    try:
        return adapter(cls).validate_python(data)
    except ValidationError as err:
        raise RecordError(describe(err, cls, source)) from None


def describe(err: ValidationError, cls: type, source: str) -> str:
    """The first problem of a validation error, in one line: the file, the field, what was expected."""
    first = err.errors(include_url=False)[0]
    field = ".".join(str(part) for part in first["loc"]) or "(the whole record)"
    got = "nothing" if first["type"] == "missing" else f"{first['input']!r:.80}"
    more = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{source}: not a valid {cls.__name__}: field '{field}': {first['msg'].lower()}, got {got}{more}"


def parse[R](cls: type[R], text: str, source: str) -> R:
    """A record of `cls` from its JSON text."""
    return load(cls, json_data(text, source), source)


def json_data(text: str, source: str) -> Any:
    """A record's JSON text as data, before its model reads it (a migration that needs more than
    records/ knows adds to it first: report/sweepdir.py's plan of schema 1)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise RecordError(f"{source}: not valid JSON ({err})") from None


def json_lines(path: Path, after_a_cut_line: str) -> Iterator[tuple[Any, str]]:
    """Each line of a .jsonl record file as (its JSON data, "path:line"), oldest first; none for a
    missing file. A line that is not JSON (cut short by a kill) is skipped (`after_a_cut_line="skip"`:
    several writers append, and a later one's lines follow it) or ends the file (`"end"`: one writer)."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return
    for n, line in enumerate(text.splitlines(), 1):
        source = f"{path}:{n}"
        try:
            data = json_data(line, source)
        except RecordError:
            if after_a_cut_line == "end":
                return
            continue
        yield data, source


def read_record[R](cls: type[R], path: Path) -> R:
    """The record of `cls` at `path`. FileNotFoundError when there is none (the caller says what
    that means); RecordError when it does not read."""
    return parse(cls, Path(path).read_text(), str(path))


def write_record(path: Path, record: Any) -> Path:
    """The record at `path`, atomically (readers see the old one or the new one)."""
    return write_text_atomic(Path(path), dumps(record) + "\n")


def line_of(record: Any) -> str:
    """The record as one line of a .jsonl file (attempts.jsonl, metrics.jsonl)."""
    return json.dumps(dump(record), sort_keys=True) + "\n"


__all__ = [
    "Migration",
    "RecordError",
    "dump",
    "dumps",
    "json_data",
    "json_lines",
    "line_of",
    "load",
    "parse",
    "read_record",
    "same_shape",
    "version_of",
    "write_record",
]
