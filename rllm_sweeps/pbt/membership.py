"""A PBT trial's membership (`pbt.json` in its job directory): what its job needs to take part.

    {"trial": 2, "board": "SWEEP_DIR/pbt_board", "trials": {"0": "SWEEP_DIR/jobs/0000-…", …},
     "settings": {...the decisions' settings: PbtSettings...},
     "metric": {"name": "val_reward_mean", "goal": "maximize"}, "keys": ["trainer.lr", …]}

The sweeper writes it before the trial's first launch, with the settings it made of the sweep's
`pbt:` block (sweep/pbt_settings.py); the job reads it at its start and acts at each interval
(pbt/member.py) without reading the sweep DSL. A job without one is a plain job (a rerun of a
trial is one: its schedule replays what the trial trained).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic.dataclasses import dataclass

from rllm_sweeps.pbt.decision import PbtSettings
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.model import Migration, RecordError, read_record, write_record
from rllm_sweeps.records.plan import Metric

MEMBERSHIP_SCHEMA_VERSION = 1  # 0: the same shape (with `settings`), before records were versioned


def _from_v0(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 is today's shape, unless it is older still: the sweep's `spec` where `settings` is
    now (before the decisions' settings were written down). Its settings would need the sweep DSL,
    which a job does not read: such a trial is rerun from its checkpoint by resuming its sweep."""
    if "settings" not in data and "spec" in data:
        raise RecordError(
            "field 'settings': missing; this membership was written by a release before the decisions' "
            "settings were recorded (it holds the sweep's 'spec'): run the sweep's command again (a resume), "
            "which rewrites every trial's pbt.json before launching it"
        )
    return data


@dataclass(frozen=True)
class PbtMembership:
    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: _from_v0}

    trial: int  # this trial's number (its plan index)
    board: Path  # the population's score board
    trials: dict[int, Path]  # every trial's job directory (whose checkpoints it may copy)
    settings: PbtSettings  # the decisions' settings (interval, quantile, mutations, seed)
    metric: Metric  # the score a trial reports (the sweep's first metric)
    keys: tuple[str, ...]  # the swept keys (the settings a trial's schedule sets)
    schema_version: int = MEMBERSHIP_SCHEMA_VERSION


def write_membership(job_dir: Path, membership: PbtMembership) -> Path:
    return write_record(JobPaths(Path(job_dir)).pbt, membership)


def read_membership(job_dir: Path) -> PbtMembership | None:
    """The job's membership, or None: not a PBT trial."""
    try:
        return read_record(PbtMembership, JobPaths(Path(job_dir)).pbt)
    except FileNotFoundError:
        return None
