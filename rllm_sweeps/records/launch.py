"""A job's launch record: what a sweep's job needs from its sweeper, beside its command.

    JOB_DIR/launch.<generation>.json
    {"generation": 2, "validated": "3f2a...", "metrics": [{"name": "val_reward_mean", "goal": "maximize"}],
     "trial": {"storage": "/abs/optuna.journal", "study": "s", "trial": 4, "replica": 0, "replicas": 3,
               "pruner": {"cls": "MedianPruner", "options": {}}}}        (trial: null outside Optuna)

The sweeper writes it before each attempt (sweep/runner.py); the job's environment names it in
one variable, `RLLM_SWEEPS_LAUNCH` (a process must be told where to look; everything else is here,
typed). The job reads it once, at its start (`current_launch`).

One file per generation, never rewritten: the generation fences off an earlier attempt still
running somewhere (a node SLURM lost touch with, records/attempts.py). Were the record rewritten
for each attempt, such an attempt reading it late would take the newer attempt's generation and
write over its records; its own file keeps the generation it was launched as.

Writing an attempt's file removes those older than the previous attempt's: the attempt the sweeper
gave up on just now may yet start (or be requeued by SLURM) and must read that it is stale; one
superseded twice over was cancelled twice, and should it start all the same, it finds no record
and stops before writing anything (app.py's pre-flight). A job directory holds two at most.

A job run by hand (no sweep) has none: it is judged by the default metric, is never fenced,
reports to no trial, and validates its config itself. Standard library and records/ only.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rllm_sweeps.records.atomic import write_json_atomic
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.metrics import DEFAULT_GOAL, DEFAULT_METRIC
from rllm_sweeps.records.plan import Metric
from rllm_sweeps.study import TrialAddress

LAUNCH_ENV = "RLLM_SWEEPS_LAUNCH"  # the path of the job's launch record: the one variable a sweep sets


@dataclass(frozen=True)
class PrunerSettings:
    """The Optuna pruner of the sweep's study, as the sweeper builds it (sweep/optuna_settings.py:
    the class in optuna.pruners, its keyword arguments with our defaults): each job builds the same."""

    cls: str = "NopPruner"
    options: Mapping[str, Any] = field(default_factory=dict)

    def build(self) -> Any:
        import optuna

        return getattr(optuna.pruners, self.cls)(**dict(self.options))

    def to_dict(self) -> dict[str, Any]:
        return {"cls": self.cls, "options": dict(self.options)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PrunerSettings:
        return cls(str(data.get("cls") or "NopPruner"), dict(data.get("options") or {}))


@dataclass(frozen=True)
class OptunaTrial:
    """The Optuna trial a job reports to (training/trial.py), and the pruner it asks."""

    address: TrialAddress
    pruner: PrunerSettings = field(default_factory=PrunerSettings)

    def to_dict(self) -> dict[str, Any]:
        a = self.address
        return {
            "storage": a.storage,
            "study": a.study,
            "trial": a.trial,
            "replica": a.replica,
            "replicas": a.replicas,
            "pruner": self.pruner.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OptunaTrial:
        address = TrialAddress(
            str(data["storage"]),
            str(data["study"]),
            int(data["trial"]),
            int(data.get("replica", 0)),
            int(data.get("replicas", 1)),
        )
        if address.trial < 0 or not 0 <= address.replica < address.replicas:
            raise ValueError(f"trial {address.trial}, replica {address.replica}/{address.replicas}: out of range")
        return cls(address, PrunerSettings.from_dict(data.get("pruner") or {}))


@dataclass(frozen=True)
class JobLaunch:
    """What the sweeper hands one attempt of a job."""

    generation: int  # the attempt's generation (records/attempts.py: AttemptFence)
    validated: str  # digest of the overrides the planner validated (config/planned.py): no second check
    metrics: tuple[Metric, ...]  # the sweep's metrics and goals: the job's `best` follows them
    trial: OptunaTrial | None = None  # an Optuna sweep's job: its trial

    def to_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "validated": self.validated,
            "metrics": [{"name": m.name, "goal": m.goal} for m in self.metrics],
            "trial": None if self.trial is None else self.trial.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobLaunch:
        trial, metrics = data.get("trial"), data.get("metrics") or []
        return cls(
            generation=int(data["generation"]),
            validated=str(data.get("validated") or ""),
            metrics=tuple(Metric(str(m["name"]), str(m.get("goal") or DEFAULT_GOAL)) for m in metrics),
            trial=OptunaTrial.from_dict(trial) if isinstance(trial, Mapping) else None,
        )

    def write(self, job_dir: Path) -> Path:
        """The attempt's own file (atomically: a job starting meanwhile reads it whole or not at all);
        of the older ones, the previous attempt's stays (generations need not be consecutive: a retry
        raises the generation twice, records/attempts.py)."""
        paths = JobPaths(Path(job_dir))
        path = write_json_atomic(paths.launch(self.generation), self.to_dict())
        older = sorted(g for g in paths.launches() if g < self.generation)
        for generation in older[:-1]:
            paths.launch(generation).unlink(missing_ok=True)
        return path


def read_launch(path: Path) -> JobLaunch:
    """The launch record at `path`. ValueError, naming it, when it is missing or malformed."""
    try:
        return _read(str(path))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"the sweep's launch record {path} ({LAUNCH_ENV}) is unreadable: {err}") from None


@functools.cache
def _read(path: str) -> JobLaunch:
    # Cached: read once per process. Safe, as a launch record is never rewritten (one per generation).
    return JobLaunch.from_dict(json.loads(Path(path).read_text()))


def current_launch(environ: Mapping[str, str] = os.environ) -> JobLaunch | None:
    """This process's launch record (read once), or None: a job run by hand."""
    path = environ.get(LAUNCH_ENV)
    return read_launch(Path(path)) if path else None


def launch_env(path: Path) -> dict[str, str]:
    """The environment that points a job at its launch record."""
    return {LAUNCH_ENV: str(path)}


def judged_metrics(launch: JobLaunch | None) -> list[tuple[str, str]]:
    """(name, goal) of each metric the job is judged by: the sweep's, else the default."""
    if launch is not None and launch.metrics:
        return [(m.name, m.goal) for m in launch.metrics]
    return [(DEFAULT_METRIC, DEFAULT_GOAL)]


__all__ = [
    "LAUNCH_ENV",
    "JobLaunch",
    "OptunaTrial",
    "PrunerSettings",
    "current_launch",
    "judged_metrics",
    "launch_env",
    "read_launch",
]
