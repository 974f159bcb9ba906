"""The confirmation stage (`sweep.confirm`): after any search, its top points re-run with fresh seeds.

    search done -> report (points ranked by the first metric's mean over completed seeds)
    -> the top `confirm.top` points x `confirm.seeds` fresh seeds, composed and validated as any
       plan's jobs -> SWEEP_DIR/confirm/ (a sweep directory of its own: plan.json, jobs/)
    -> run with the search's launcher and parallel -> report/confirmation.py ranks them

A PBT trial's config is its schedule: its confirmation jobs replay that schedule (the trial's
schedule.json goes into each of their directories) with the fresh seeds. The stage is planned
from the search's records alone, so a sweeper rerun plans the same stage and runs only its jobs
that are not completed yet.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from launchers.base import Launcher
from rllm_sweeps.config.override_values import same
from rllm_sweeps.records.layout import SweepPaths
from rllm_sweeps.records.manifest import SweepManifest, record_invocation
from rllm_sweeps.records.plan import PlannedJob, Totals
from rllm_sweeps.records.resources import total_hours
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.schedule import Schedule, read_schedule, write_schedule
from rllm_sweeps.sweep.confirm_rule import top_points
from rllm_sweeps.sweep.param import Choice, Param
from rllm_sweeps.sweep.plan import Plan
from rllm_sweeps.sweep.runner import StaticSource, SweepRunner
from rllm_sweeps.sweep.space import Point
from rllm_sweeps.sweep.spec import SweepSpec


@dataclasses.dataclass(frozen=True)
class Stage:
    plan: Plan
    schedules: dict[int, Schedule]  # confirmation job index -> the schedule it replays (PBT)


def choice_of(param: Param, value: Any) -> Choice:
    """The parameter's choice of a value a search job had (plan.json's params)."""
    if param.kind == "value":
        return param.choices[0]
    for choice in param.choices:
        if same(choice.value, value):
            return choice
    return param.value_choice(value) if param.kind == "distribution" else param.choice_for(value)


def plan_stage(spec: SweepSpec, base_overrides: list[str], sweep_dir: Path) -> Stage | None:
    """The stage's jobs from the search's results, or None (no `confirm`, no completed point)."""
    from rllm_sweeps.report.model import build_report
    from rllm_sweeps.sweep.trial_planner import TrialPlanner

    if spec.confirm is None:
        return None
    report = build_report(sweep_dir)
    metric = spec.metric[0]
    scored = [p for p in report.points if p.metrics.get(metric.name) is not None]
    by_index = {p.point_index: p for p in scored}
    means = {i: p.metrics[metric.name].mean for i, p in by_index.items()}
    top = [by_index[i] for i in top_points(means, spec.confirm.top, maximize=metric.goal == "maximize")]
    if not top:
        return None
    fresh = spec.confirm.fresh_seeds({j.seed for j in report.jobs if j.seed is not None})
    name = f"{spec.name or 'sweep'}-confirm"
    stage = dataclasses.replace(spec, method="grid", seeds=fresh, budget=None, pbt=None, confirm=None, name=name)
    planner = TrialPlanner(stage, base_overrides)
    jobs: list[PlannedJob] = []
    schedules: dict[int, Schedule] = {}
    dirs = {j.index: j.job_dir for j in report.jobs}
    notes = []
    for rank, p in enumerate(top):
        point = Point(p.point_index, tuple((q, choice_of(q, p.params.get(q.key))) for q in stage.parameters))
        point_jobs = planner.jobs(point, first_index=len(jobs), point_index=p.point_index)
        schedule = read_schedule(dirs[p.jobs[0]]) if dirs.get(p.jobs[0]) else Schedule()
        for job in point_jobs:
            if schedule.segments:
                schedules[job.index] = schedule
        jobs += point_jobs
        value = p.metrics[metric.name].mean
        notes.append(f"rank {rank + 1}: point {p.point_index} of the search ({metric.name} {value:.4g})")
    node_h, gpu_h = total_hours(j.resources for j in jobs)
    totals = Totals(len(top), len(jobs), len(fresh), len(top), 0, len(jobs), node_h, gpu_h)
    return Stage(Plan(stage, list(base_overrides), jobs, totals, True, notes), schedules)


class ConfirmSource(StaticSource):
    """The stage's jobs; a PBT trial's replicates get its schedule first."""

    def __init__(self, stage: Stage, stage_dir: Path) -> None:
        super().__init__(stage.plan, stage_dir)
        for run in self._queue:
            schedule = stage.schedules.get(run.job.index)
            if schedule is not None and not run.job_dir.joinpath("schedule.json").exists():
                write_schedule(run.job_dir, schedule)


def run_stage(
    spec: SweepSpec, base_overrides: list[str], sweep_dir: Path, launcher: Launcher, parallel: int, **runner: Any
) -> dict[int, JobResult] | None:
    """Plan and run the stage after the search; its jobs' results (None: nothing to confirm)."""
    stage = plan_stage(spec, base_overrides, sweep_dir)
    if stage is None:
        print("[confirm] no completed point to confirm", file=sys.stderr, flush=True)
        return None
    stage_dir = SweepPaths(sweep_dir).confirm.root
    stage.plan.write(stage_dir)
    search = SweepManifest.read(sweep_dir)
    stage_id = f"{search.sweep_id if search else 'sweep'}-confirm"
    record_invocation(stage_dir, sweep_id=stage_id, family=None, command=sys.argv, launcher=launcher.name)
    print(f"[confirm] {len(stage.plan.jobs)} jobs: " + "; ".join(stage.plan.notes), flush=True)
    source = ConfirmSource(stage, stage_dir)
    metric = spec.metric[0]
    return SweepRunner(source, stage_dir, launcher, parallel, metric=metric, metrics=list(spec.metric), **runner).run()
