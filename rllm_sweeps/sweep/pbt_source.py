"""A PBT sweep's jobs: the population, one job per trial, all known up front.

The sweeper only launches the trials (as a plan's jobs: sweep/runner.py) and gives each its
membership and first schedule; the trials decide among themselves, at each interval, through the
board (pbt/member.py). So a sweeper crash costs no step: a rerun launches the trials
that are not completed again, and each resumes from its own last checkpoint with the schedule
that checkpoint continues.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rllm_sweeps.pbt.membership import PbtMembership, write_membership
from rllm_sweeps.pbt.mutable import schedule_field
from rllm_sweeps.records.layout import JobPaths, SweepPaths
from rllm_sweeps.records.schedule import Schedule, Segment, write_schedule
from rllm_sweeps.sweep.pbt_settings import pbt_settings
from rllm_sweeps.sweep.plan import Plan
from rllm_sweeps.sweep.runner import StaticSource, existing_jobs, job_dir_for


def first_settings(params: dict[str, Any], swept: tuple[str, ...]) -> dict[str, Any]:
    """A trial's first schedule segment: its drawn value of every swept key, by LoopSettings field."""
    return {field: params[key] for key in swept if (field := schedule_field(key)) is not None}


class PbtSource(StaticSource):
    """The plan's jobs (the population), each given its membership and first schedule."""

    def __init__(self, plan: Plan, sweep_dir: Path) -> None:
        super().__init__(plan, sweep_dir)
        existing = existing_jobs(sweep_dir)
        dirs = {
            job.index: existing[job.config_hash][0] if job.config_hash in existing else job_dir_for(sweep_dir, job)
            for job in plan.jobs
        }
        board = SweepPaths(sweep_dir).pbt_board
        board.mkdir(parents=True, exist_ok=True)
        spec = plan.spec
        assert spec.pbt is not None, "a PBT sweep's spec holds its pbt: block"
        settings = pbt_settings(spec.pbt, spec.parameters, spec.seed)
        swept = spec.swept_keys
        for job in plan.jobs:
            job_dir = dirs[job.index]
            write_membership(job_dir, PbtMembership(job.index, board, dirs, settings, spec.metric[0], swept))
            if not JobPaths(job_dir).schedule.exists():  # a trial that ran keeps the schedule it made
                write_schedule(job_dir, Schedule((Segment(0, first_settings(job.params, swept)),)))
