"""manifest.json: which sweep a directory holds, the command that made it, and every later one.

    {"sweep_id": "1a2b3c4d", "family": "5e6f7a8b", "command": [...], "created_at": 1733.0,
     "launcher": "local", "study": {...}, "history": [{"command": [...], "at": 1734.0, "launcher": "local"}]}

Append-only: the first invocation writes it; a later one (a resume, an extension by a larger
budget) appends to `history` and changes nothing else. `family` is the sweep's id without what an
extension may change (sweep/ownership.py); a directory belongs to the sweeps of one family.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import ClassVar

from pydantic.dataclasses import dataclass

from rllm_sweeps.records.layout import SweepPaths
from rllm_sweeps.records.model import Migration, read_record, same_shape, write_record

MANIFEST_SCHEMA_VERSION = 1  # 0: the same shape, before records were versioned


@dataclass(frozen=True)
class Invocation:
    """One command run on the sweep after the first."""

    command: list[str]
    at: float
    launcher: str
    sweep_id: str = ""


@dataclass(frozen=True)
class StudyLocation:
    """Where an Optuna sweep's study is (the report opens it from here)."""

    storage: str  # the storage URL (study.py)
    study_name: str


@dataclass(frozen=True)
class SweepManifest:
    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: same_shape}

    sweep_id: str
    command: list[str]
    created_at: float
    launcher: str
    family: str | None = None  # None: written before families were recorded
    study: StudyLocation | None = None  # method optuna: where the study is
    history: list[Invocation] = field(default_factory=list)
    schema_version: int = MANIFEST_SCHEMA_VERSION

    @classmethod
    def read(cls, sweep_dir: Path) -> SweepManifest | None:
        """The directory's manifest, None without one; RecordError for one that does not read."""
        try:
            return read_record(cls, SweepPaths(sweep_dir).manifest)
        except FileNotFoundError:
            return None


def record_invocation(
    sweep_dir: Path,
    *,
    sweep_id: str,
    family: str | None,
    command: list[str],
    launcher: str,
    study: StudyLocation | None = None,
) -> SweepManifest:
    """Write the manifest of a new sweep, or append this command to an existing one's history."""
    now = time.time()
    previous = SweepManifest.read(sweep_dir)
    if previous is None:
        manifest = SweepManifest(sweep_id, list(command), now, launcher, family, study)
    else:
        entry = Invocation(list(command), now, launcher, sweep_id)
        manifest = SweepManifest(
            previous.sweep_id,
            previous.command,
            previous.created_at,
            previous.launcher,
            previous.family or family,
            previous.study or study,
            [*previous.history, entry],
        )
    write_record(SweepPaths(sweep_dir).manifest, manifest)
    return manifest
