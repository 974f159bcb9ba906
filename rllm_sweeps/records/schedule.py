"""A job's schedule: the loop settings it trained with per step range, and where each range began.

A PBT trial changes settings mid-run and may continue from another trial's checkpoint; its
schedule (`schedule.json` in the job directory) records both, so that the report can draw the
lineage and the trial can be replayed from scratch as one job (a schedule is a value of the
settings it changes). Only settings the loop can change between steps may appear in one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic.dataclasses import dataclass

from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.model import Migration, read_record, same_shape, write_record

SCHEDULE_SCHEMA_VERSION = 1  # 0: the same shape, before records were versioned
Settings = TypeVar("Settings")  # the loop's settings (training/settings.py LoopSettings), a dataclass

# LoopSettings fields read afresh at every step (the optimizer's lr is set per step, the others
# are read by the loss and the sampler): the ones a schedule may change.
MUTABLE_SETTINGS = frozenset({"lr", "kl_beta", "temperature", "top_p", "eps_clip", "eps_clip_high", "max_grad_norm"})


@dataclass(frozen=True)
class Parent:
    """The checkpoint a segment started from: trial `trial`'s at step `step`."""

    trial: int
    step: int


@dataclass(frozen=True)
class Segment:
    start_step: int  # the first step trained with these settings
    settings: dict[str, Any]  # LoopSettings field -> value
    parent: Parent | None = None  # None: the trial's own weights carried on


@dataclass(frozen=True)
class Schedule:
    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: same_shape}

    segments: tuple[Segment, ...] = ()
    schema_version: int = SCHEDULE_SCHEMA_VERSION

    def __post_init__(self) -> None:
        starts = [s.start_step for s in self.segments]
        if starts != sorted(set(starts)):
            raise ValueError(f"schedule segments must start at increasing steps, got {starts}")
        for segment in self.segments:
            if unknown := sorted(set(segment.settings) - MUTABLE_SETTINGS):
                raise ValueError(
                    f"a schedule cannot change {', '.join(unknown)} mid-run; "
                    f"it may change {', '.join(sorted(MUTABLE_SETTINGS))}"
                )

    def then(self, segment: Segment) -> Schedule:
        """This schedule with `segment` from its start step on (later segments dropped)."""
        kept = tuple(s for s in self.segments if s.start_step < segment.start_step)
        return Schedule((*kept, segment))

    def settings_at(self, step: int) -> dict[str, Any]:
        """The settings in force at `step` (the latest segment started at or before it)."""
        out: dict[str, Any] = {}
        for segment in self.segments:
            if segment.start_step <= step:
                out.update(segment.settings)
        return out

    def apply(self, loop: Settings, step: int) -> Settings:
        """`loop` (the job's LoopSettings) with the settings in force at `step`."""
        return dataclasses.replace(loop, **self.settings_at(step))

    @property
    def parents(self) -> tuple[tuple[int, Parent], ...]:
        """(start step, parent) of every segment that began from a copied checkpoint."""
        return tuple((s.start_step, s.parent) for s in self.segments if s.parent is not None)

    def trained_by(self, step: int, own: int) -> int:
        """The trial whose training made 1-based step `step` of this schedule's lineage: the parent of
        the first segment that began from a copy at or after it, else `own` (the trial itself)."""
        return next((p.trial for start, p in self.parents if start >= step), own)


def write_schedule(job_dir: Path, schedule: Schedule) -> Path:
    """Replace the job's schedule whole (readers never see half of one)."""
    return write_record(JobPaths(Path(job_dir)).schedule, schedule)


def read_schedule(job_dir: Path) -> Schedule:
    """The job's schedule; an empty one when it never changed its settings."""
    try:
        return read_record(Schedule, JobPaths(Path(job_dir)).schedule)
    except FileNotFoundError:
        return Schedule()
