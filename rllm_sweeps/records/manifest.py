"""manifest.json: which sweep a directory holds, the command that made it, and every later one.

    {"sweep_id": "1a2b3c4d", "family": "5e6f7a8b", "command": [...], "created_at": 1733.0,
     "launcher": "local", "study": {...}, "history": [{"command": [...], "at": 1734.0, "launcher": "local"}]}

Append-only: the first invocation writes it; a later one (a resume, an extension by a larger
budget) appends to `history` and changes nothing else. `family` is the sweep's id without what an
extension may change (sweep/ownership.py); a directory belongs to the sweeps of one family.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rllm_sweeps.records.atomic import write_json_atomic
from rllm_sweeps.records.layout import SweepPaths


@dataclass(frozen=True)
class Invocation:
    """One command run on the sweep after the first."""

    command: list[str]
    at: float
    launcher: str
    sweep_id: str


@dataclass(frozen=True)
class SweepManifest:
    sweep_id: str
    command: list[str]
    created_at: float
    launcher: str
    family: str | None = None  # None: written before families were recorded
    study: dict[str, Any] | None = None  # method optuna: where the study is (the report opens it)
    history: list[Invocation] = field(default_factory=list)

    @classmethod
    def read(cls, sweep_dir: Path) -> SweepManifest | None:
        """The directory's manifest, None without one (or one that does not read)."""
        path = SweepPaths(sweep_dir).manifest
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("sweep_id") is None:
            return None
        history = [
            Invocation(
                [str(c) for c in h.get("command") or []],
                float(h.get("at") or 0),
                str(h.get("launcher") or ""),
                str(h.get("sweep_id") or ""),
            )
            for h in data.get("history") or []
            if isinstance(h, dict)
        ]
        study = data.get("study")
        return cls(
            sweep_id=str(data["sweep_id"]),
            command=[str(c) for c in data.get("command") or []],
            created_at=float(data.get("created_at") or 0),
            launcher=str(data.get("launcher") or ""),
            family=str(data["family"]) if data.get("family") is not None else None,
            study=study if isinstance(study, dict) else None,
            history=history,
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.study is None:
            del out["study"]
        if self.family is None:
            del out["family"]
        return out


def record_invocation(
    sweep_dir: Path,
    *,
    sweep_id: str,
    family: str | None,
    command: list[str],
    launcher: str,
    study: dict[str, Any] | None = None,
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
    write_json_atomic(SweepPaths(sweep_dir).manifest, manifest.to_dict())
    return manifest
