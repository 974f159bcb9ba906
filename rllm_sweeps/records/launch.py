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
import os
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, ClassVar

from pydantic.dataclasses import dataclass

from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.metrics import DEFAULT_GOAL, DEFAULT_METRIC
from rllm_sweeps.records.model import Migration, RecordError, read_record, same_shape, write_record
from rllm_sweeps.records.plan import Metric

LAUNCH_ENV = "RLLM_SWEEPS_LAUNCH"  # the path of the job's launch record: the one variable a sweep sets
LAUNCH_SCHEMA_VERSION = 1  # 0: the same shape, before records were versioned


@dataclass(frozen=True)
class TrialAddress:
    """One job's trial: the storage URL (study.py), the study, the trial number, and which seed replicate."""

    storage: str
    study: str
    trial: int
    replica: int = 0
    replicas: int = 1


@dataclass(frozen=True)
class PrunerSettings:
    """The Optuna pruner of the sweep's study, as the sweeper builds it (sweep/optuna_settings.py:
    the class in optuna.pruners, its keyword arguments with our defaults): each job builds the same."""

    cls: str = "NopPruner"
    options: dict[str, Any] = field(default_factory=dict)

    def build(self) -> Any:
        import optuna

        return getattr(optuna.pruners, self.cls)(**dict(self.options))


@dataclass(frozen=True)
class OptunaTrial:
    """The Optuna trial a job reports to (training/trial.py), and the pruner it asks: its
    TrialAddress's fields, and the pruner."""

    storage: str
    study: str
    trial: int
    replica: int = 0
    replicas: int = 1
    pruner: PrunerSettings = field(default_factory=PrunerSettings)

    def __post_init__(self) -> None:
        if self.trial < 0 or not 0 <= self.replica < self.replicas:
            raise ValueError(f"trial {self.trial}, replica {self.replica}/{self.replicas}: out of range")

    @classmethod
    def at(cls, address: TrialAddress, pruner: PrunerSettings) -> OptunaTrial:
        a = address
        return cls(a.storage, a.study, a.trial, a.replica, a.replicas, pruner)

    @property
    def address(self) -> TrialAddress:
        return TrialAddress(self.storage, self.study, self.trial, self.replica, self.replicas)


@dataclass(frozen=True)
class JobLaunch:
    """What the sweeper hands one attempt of a job."""

    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: same_shape}

    generation: int  # the attempt's generation (records/attempts.py: AttemptFence)
    validated: str  # digest of the overrides the planner validated (config/planned.py): no second check
    metrics: tuple[Metric, ...]  # the sweep's metrics and goals: the job's `best` follows them
    trial: OptunaTrial | None = None  # an Optuna sweep's job: its trial
    schema_version: int = LAUNCH_SCHEMA_VERSION

    def write(self, job_dir: Path) -> Path:
        """The attempt's own file (atomically: a job starting meanwhile reads it whole or not at all);
        of the older ones, the previous attempt's stays (generations need not be consecutive: a retry
        raises the generation twice, records/attempts.py)."""
        paths = JobPaths(Path(job_dir))
        path = write_record(paths.launch(self.generation), self)
        older = sorted(g for g in paths.launches() if g < self.generation)
        for generation in older[:-1]:
            paths.launch(generation).unlink(missing_ok=True)
        return path


def read_launch(path: Path) -> JobLaunch:
    """The launch record at `path`. ValueError (RecordError: the file, the field), naming it, when
    it is missing or malformed."""
    try:
        return _read(str(path))
    except (OSError, RecordError) as err:
        raise RecordError(f"the sweep's launch record {path} ({LAUNCH_ENV}) is unreadable: {err}") from None


@functools.cache
def _read(path: str) -> JobLaunch:
    # Cached: read once per process. Safe, as a launch record is never rewritten (one per generation).
    return read_record(JobLaunch, Path(path))


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
    "TrialAddress",
    "current_launch",
    "judged_metrics",
    "launch_env",
    "read_launch",
]
