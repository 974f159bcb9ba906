"""The report of a sweep, built from its directory alone: one row per planned job, one row
per point (its seeds aggregated), the best point per metric, counts by status.

    report = build_report(sweep_dir)
    report.best[0].point.overrides        # the best configuration of the first metric

A point's seeds are replicates, never a parameter: a point's metric is the mean +- std
over its *completed* seeds (a seed that failed, was pruned or is still running is
counted, shown, and left out of the aggregate).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rllm_sweeps.override_text import override_key
from rllm_sweeps.records.attempts import read_attempts, total_time_s
from rllm_sweeps.records.layout import JobPaths, SweepPaths
from rllm_sweeps.records.metric_rows import MetricsRow
from rllm_sweeps.records.metrics import best_values, never_moved, read_metrics, same_value
from rllm_sweeps.records.plan import Metric, PlannedJob
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import (
    DIVERGED_HINT,
    FINAL_STATUSES,
    OUT_OF_MEMORY_FIX,
    TIME_LIMIT_FIX,
    FailureKind,
    JobStatus,
)
from rllm_sweeps.report.best_model import BestModel
from rllm_sweeps.report.confirm_stats import confirm
from rllm_sweeps.report.confirmation import ConfirmationReport, ConfirmedPoint
from rllm_sweeps.report.reruns import RerunRow, read_reruns
from rllm_sweeps.report.study import StudySummary, read_study
from rllm_sweeps.report.sweepdir import SweepDir, open_sweep_dir

# Planned jobs with no result.json: the directory is there (the job died before writing
# one), or not (the job never started).
NO_RESULT = "no-result"
DAMAGED_RESULT = "result.json cannot be read (truncated or not JSON)"
NOT_STARTED = "not-started"
STATUS_ORDER = (*JobStatus, NO_RESULT, NOT_STARTED)

# The failure kinds a report counts in a note of their own, each with what to change.
KIND_NOTES = {
    FailureKind.OUT_OF_MEMORY: ("ran out of accelerator memory", OUT_OF_MEMORY_FIX),
    FailureKind.TIME_LIMIT: ("reached their time limit with their requeues spent", TIME_LIMIT_FIX),
    FailureKind.DIVERGED: ("diverged (a NaN or infinite reward, loss or gradient norm)", DIVERGED_HINT),
}


@dataclass(frozen=True)
class Aggregate:
    """A metric over a point's completed seeds. `std` is the sample standard deviation
    (n - 1), None for a single seed."""

    mean: float
    std: float | None
    n: int

    @classmethod
    def of(cls, values: list[float]) -> Aggregate | None:
        if not values:
            return None
        std = statistics.stdev(values) if len(values) > 1 else None
        return cls(statistics.fmean(values), std, len(values))


@dataclass
class JobRow:
    """One planned job and what became of it."""

    index: int
    config_hash: str
    point_id: str
    point_index: int
    params: dict[str, Any]  # the swept parameters' values (not the seed)
    seed: int | None
    status: str  # a JobStatus value, NO_RESULT or NOT_STARTED
    final: dict[str, float] = field(default_factory=dict)  # each sweep metric's final value, where known
    best: dict[str, float] = field(default_factory=dict)  # each sweep metric's best value, where known
    steps: int | None = None
    wall_time_s: float | None = None
    restarts: int = 0
    attempts: int = 1  # process starts: SLURM's requeues and the sweep's retries too
    error: str | None = None  # the last line of the error
    failure_kind: FailureKind | None = None
    overrides: list[str] = field(default_factory=list)
    job_dir: Path | None = None


@dataclass
class PointRow:
    """One point of the search space: its seeds' jobs, and each metric over the completed ones."""

    point_index: int
    point_id: str
    params: dict[str, Any]  # the swept parameters' values
    overrides: list[str]  # the job's overrides without the seed: `python train.py *overrides`
    swept_overrides: list[str]  # those not shared by every job of the sweep
    jobs: list[int]  # the indices of its jobs (one per seed)
    seeds: list[int | None]
    completed: int  # jobs completed
    metrics: dict[str, Aggregate | None] = field(default_factory=dict)


@dataclass
class BestPoint:
    """The best point for one metric, by the mean over its completed seeds."""

    metric: Metric
    point: PointRow
    value: Aggregate
    tied: list[int] = field(default_factory=list)  # the other points with the same mean (to rounding)


@dataclass
class Report:
    sweep_dir: Path
    sweep_id: str | None
    command: list[str] | None  # the command that made the sweep (manifest.json)
    method: str
    metrics: list[Metric]  # plan.json's (the first is the one a search optimizes)
    swept: list[str]  # the swept parameters, in plan order (plan.json's)
    seed_key: str
    jobs: list[JobRow]
    points: list[PointRow]
    best: list[BestPoint]  # one per metric that some completed job reports
    counts: dict[str, int]  # jobs by status, in STATUS_ORDER, zero counts left out
    planned_jobs: int  # jobs in the plan (plan.json's totals; more than len(jobs) for a partial plan)
    base_overrides: list[str] = field(default_factory=list)
    unplanned: list[Path] = field(default_factory=list)  # job directories whose config the plan lacks
    notes: list[str] = field(default_factory=list)
    study: StudySummary | None = None  # method optuna: the study (best trial, importances)
    log_axes: list[str] = field(default_factory=list)  # swept parameters drawn from a log distribution
    zipped: list[list[str]] = field(default_factory=list)  # parameters that vary together (the spec's zip)
    confirmation: ConfirmationReport | None = None  # sweep.confirm: the top points re-run with fresh seeds
    reruns: list[RerunRow] = field(default_factory=list)  # `rllm-sweeps rerun`'s jobs, apart from the sweep's
    best_model: BestModel | None = None  # the winner job's exported policy (report/best_model.py)

    @property
    def has_seeds(self) -> bool:
        """Whether some point has more than one job (seed replicates)."""
        return any(len(p.jobs) > 1 for p in self.points)

    @property
    def finished(self) -> bool:
        """Whether every planned job reached completed or pruned."""
        return all(j.status in FINAL_STATUSES for j in self.jobs)

    def status_line(self) -> str:
        """'4 jobs: 3 completed, 1 failed'."""
        parts = ", ".join(f"{n} {status}" for status, n in self.counts.items())
        return f"{len(self.jobs)} jobs: {parts}" if parts else f"{len(self.jobs)} jobs"


# ---- building ----------------------------------------------------------------------------


def build_report(sweep_dir: Path | str) -> Report:
    """The report of the sweep in `sweep_dir`, from plan.json and the jobs' records.
    Raises ReportError when `sweep_dir` is not a sweep directory."""
    sd = open_sweep_dir(sweep_dir)
    plan = sd.plan
    metrics, seed_key, swept = list(plan.facts.metrics), plan.facts.seed_key, list(plan.facts.swept)
    planned = list(plan.jobs)
    base = list(plan.base_overrides)

    jobs = [_job_row(sd, j, swept, metrics) for j in planned]
    points = _point_rows(jobs, seed_key, base, metrics)
    best = [b for b in (best_point(points, m) for m in metrics) if b is not None]
    tally = Counter(j.status for j in jobs)
    counts = {str(s): tally[s] for s in STATUS_ORDER if tally[s]}

    planned_jobs = plan.totals.jobs or len(jobs)
    notes = unmoved_notes(jobs, metrics)
    damaged = [j for j in jobs if j.status == NO_RESULT and j.error == DAMAGED_RESULT]
    if damaged:
        names = ", ".join(j.job_dir.name for j in damaged[:3] if j.job_dir) + (" ..." if len(damaged) > 3 else "")
        many = len(damaged) > 1
        notes.append(
            f"{len(damaged)} job{'s' if many else ''} shown {NO_RESULT} {'have' if many else 'has'} a result.json "
            f"that cannot be read (truncated or not JSON): {names}; rerunning the sweep runs "
            f"{'them' if many else 'it'} again"
        )
    if not plan.complete or planned_jobs > len(jobs):
        notes.append(f"plan.json lists {len(jobs)} of the plan's {planned_jobs} jobs (a dry run's partial plan)")
    unplanned = sd.unplanned({j.config_hash for j in jobs})
    if unplanned:
        which = "directory holds" if len(unplanned) == 1 else "directories hold"
        names = ", ".join(d.name for d in unplanned[:3]) + (" ..." if len(unplanned) > 3 else "")
        notes.append(f"{len(unplanned)} job {which} a config the plan does not have (left out): {names}")
    for kind, (what, fix) in KIND_NOTES.items():
        if count := sum(j.failure_kind == kind for j in jobs):
            notes.append(f"{count} of the failed jobs {what}: {fix}")
    manifest = sd.manifest
    parameters = plan.spec.get("parameters") or {}
    log_axes = [k for k, v in parameters.items() if isinstance(v, dict) and "log" in str(v.get("distribution") or "")]
    report = Report(
        sweep_dir=sd.path,
        sweep_id=manifest.sweep_id if manifest is not None else None,
        command=manifest.command if manifest is not None else None,
        method=plan.method,
        metrics=metrics,
        swept=swept,
        seed_key=seed_key,
        jobs=jobs,
        points=points,
        best=best,
        counts=counts,
        planned_jobs=planned_jobs,
        base_overrides=base,
        unplanned=unplanned,
        notes=notes,
        study=read_study(sd.path, plan, manifest),
        log_axes=[_key_of(k) for k in log_axes],
        zipped=[[_key_of(str(k)) for k in group] for group in plan.spec.get("zip") or []],
        confirmation=read_confirmation(sd.path, points, metrics[0]) if metrics else None,
        reruns=read_reruns(sd.path, metrics[0] if metrics else None),
    )
    report.best_model = best_model(report)
    return report


def read_confirmation(sweep_dir: Path, points: list[PointRow], metric: Metric) -> ConfirmationReport | None:
    """The confirmation stage's ranking (SWEEP_DIR/confirm/, sweep/confirm.py), None without one.
    Each of its points re-runs the search's point of the same point id; completed replicates count."""
    stage_dir = SweepPaths(sweep_dir).confirm.root
    if not SweepPaths(stage_dir).plan.is_file():
        return None
    stage = build_report(stage_dir)
    search = {p.point_id: p.point_index for p in points}
    by_index = {j.index: j for j in stage.jobs}
    replicates: dict[str, list[float]] = {}
    confirmed: dict[str, ConfirmedPoint] = {}
    for p in stage.points:
        index = search.get(p.point_id, p.point_index)
        name = f"point {index}"
        rows = [by_index[i] for i in p.jobs]
        values = [j.final[metric.name] for j in rows if j.status == JobStatus.COMPLETED and metric.name in j.final]
        replicates[name] = values
        confirmed[name] = ConfirmedPoint(name, index, tuple(p.swept_overrides), len(rows), len(values))
    seeds = tuple(sorted({j.seed for j in stage.jobs if j.seed is not None}))
    return ConfirmationReport(metric, confirm(replicates, maximize=metric.goal == "maximize"), confirmed, seeds)


def best_model(report: Report) -> BestModel | None:
    """The sweep's winner and its exported final policy (report/best_model.py says which job), or None
    while no completed job reports the sweep's metric."""
    if not report.best:
        return None
    metric, top = report.best[0].metric, report.best[0].point
    rows = [j for j in report.jobs if j.index in top.jobs]
    why = f"the sweep's best point by {metric.name}"
    confirmed = report.confirmation.winner if report.confirmation is not None else None
    if confirmed is not None:
        stage = build_report(SweepPaths(report.sweep_dir).confirm.root)
        point_id = next(p.point_id for p in report.points if p.point_index == confirmed.point_index)
        rows = [j for j in stage.jobs if j.point_id == point_id]
        rows += [j for j in report.jobs if j.point_index == confirmed.point_index]
        why = f"the confirmed best ({confirmed.name}) by {metric.name}"
    done = [j for j in rows if j.status == JobStatus.COMPLETED and metric.name in j.final and j.job_dir is not None]
    if not done:
        return None
    winner = done[0]
    for row in done[1:]:
        if metric.better(row.final[metric.name], winner.final[metric.name]):
            winner = row
    assert winner.job_dir is not None
    result = JobResult.read(winner.job_dir)
    final = result.exports.final if result is not None else None
    adapter = winner.job_dir / final.path if final is not None else None
    why_none = result.exports.not_exported if result is not None else None
    return BestModel(winner.job_dir, metric, winner.final[metric.name], why, adapter, why_none)


def _key_of(element: str) -> str:
    """The config key of an override's left side: '+a.b@pkg' -> 'a.b'."""
    return override_key(element).split("@", 1)[0]


def _without_seed(overrides: list[str], seed_key: str) -> list[str]:
    return [o for o in overrides if _key_of(o.split("=", 1)[0]) != seed_key]


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


class _Curve:
    """A job's metrics.jsonl, read once and only when result.json lacks something."""

    def __init__(self, job_dir: Path | None) -> None:
        self.job_dir = job_dir
        self._records: list[MetricsRow] | None = None

    @property
    def records(self) -> list[MetricsRow]:
        if self._records is None:
            self._records = read_metrics(self.job_dir) if self.job_dir is not None else []
        return self._records

    def values(self, name: str) -> list[float]:
        return [v for r in self.records if (v := r.value(name)) is not None]

    def last_step(self) -> int | None:
        steps = [r.step for r in self.records]
        return max(steps) if steps else None

    def last_time(self) -> float | None:
        times = [t for r in self.records if (t := r.value("time")) is not None]
        return max(times) if times else None


def _job_row(sd: SweepDir, planned: PlannedJob, swept: list[str], metrics: list[Metric]) -> JobRow:
    row = JobRow(
        index=planned.index,
        config_hash=planned.config_hash,
        point_id=planned.point_id,
        point_index=planned.point_index,
        params={k: planned.params[k] for k in swept if k in planned.params},
        seed=planned.seed,
        status=NOT_STARTED,
        overrides=list(planned.overrides),
    )
    job_dir, result = sd.job_dir_of(planned.index, planned.config_hash)
    row.job_dir = job_dir
    if job_dir is None:
        return row
    if result is None:
        row.status = NO_RESULT
        if JobPaths(job_dir).result.exists():  # there, but not JSON: cut short (a full disk, a copy)
            row.error = DAMAGED_RESULT
        return row
    _fill_from_result(row, result, _Curve(job_dir), metrics)
    return row


def _fill_from_result(row: JobRow, result: JobResult, curve: _Curve, metrics: list[Metric]) -> None:
    """Status, metrics, steps, time and error from result.json; what it lacks (a running
    job's progress, a metric it does not record) from metrics.jsonl."""
    row.status = str(result.status)
    row.restarts = int(result.restarts or 0)
    row.failure_kind = result.failure_kind
    if result.error:
        lines = [line.strip() for line in str(result.error).splitlines() if line.strip()]
        row.error = lines[-1] if lines else None
    final = result.final or {}
    best = result.best or {}
    for m in metrics:
        value = _finite(final.get(m.name))
        if value is None:
            history = curve.values(m.name)
            value = history[-1] if history else None
        if value is not None:
            row.final[m.name] = value
        # The best by this sweep's goal, from the job's validation history (result.json's, else
        # metrics.jsonl's); a `best` the job computed itself only where neither has the metric.
        top = best_values(result.validations, [(m.name, m.goal)]).get(m.name)
        if top is None:
            history = curve.values(m.name)
            if history:
                top = max(history) if m.goal == "maximize" else min(history)
        top = _finite(top if top is not None else best.get(m.name))
        if top is not None:
            row.best[m.name] = top
    row.steps = int(result.steps or 0) or curve.last_step() or 0
    row.attempts = int(result.attempts or 1)
    if curve.job_dir is not None and (runs := read_attempts(curve.job_dir)):
        # Every attempt's time (requeues, retries), not only the last one's.
        row.wall_time_s = total_time_s(runs, result.ended_at or curve.last_time())
    elif result.wall_time_s:
        row.wall_time_s = float(result.wall_time_s)
    elif result.started_at and (last := curve.last_time()) is not None:
        row.wall_time_s = max(0.0, last - float(result.started_at))  # a running job: time to its last record


def _point_rows(jobs: list[JobRow], seed_key: str, base: list[str], metrics: list[Metric]) -> list[PointRow]:
    by_point: dict[str, PointRow] = {}
    shared = set(base)
    for job in jobs:
        point = by_point.get(job.point_id)
        if point is None:
            overrides = _without_seed(job.overrides, seed_key)
            point = by_point[job.point_id] = PointRow(
                point_index=job.point_index,
                point_id=job.point_id,
                params=dict(job.params),
                overrides=overrides,
                swept_overrides=[o for o in overrides if o not in shared],
                jobs=[],
                seeds=[],
                completed=0,
            )
        point.jobs.append(job.index)
        point.seeds.append(job.seed)
        point.completed += job.status == JobStatus.COMPLETED
    completed: dict[str, list[JobRow]] = {}
    for job in jobs:
        if job.status == JobStatus.COMPLETED:
            completed.setdefault(job.point_id, []).append(job)
    for point in by_point.values():
        members = completed.get(point.point_id, [])
        for m in metrics:
            point.metrics[m.name] = Aggregate.of([j.final[m.name] for j in members if m.name in j.final])
    return sorted(by_point.values(), key=lambda p: (p.point_index, p.jobs[0]))


def best_point(points: list[PointRow], metric: Metric) -> BestPoint | None:
    """The point with the best mean of `metric` over its completed seeds (the first, on a tie)."""
    best: BestPoint | None = None
    for point in points:
        agg = point.metrics.get(metric.name)
        if agg is not None and (best is None or metric.better(agg.mean, best.value.mean)):
            best = BestPoint(metric, point, agg)
    if best is not None:
        best.tied = [
            p.point_index
            for p in points
            if p is not best.point
            and (agg := p.metrics.get(metric.name)) is not None
            and same_value([agg.mean, best.value.mean]) is not None
        ]
    return best


def unmoved_notes(jobs: list[JobRow], metrics: list[Metric]) -> list[str]:
    """A note per metric that never moved: the same value in every completed job (two or more), or 0
    in all of them; the best configuration then means nothing."""
    notes = []
    for m in metrics:
        values = [j.final[m.name] for j in jobs if j.status == JobStatus.COMPLETED and m.name in j.final]
        best = [
            j.best.get(m.name, j.final[m.name]) for j in jobs if j.status == JobStatus.COMPLETED and m.name in j.final
        ]
        what = f"all {len(values)} completed jobs" if len(values) > 1 else "the one completed job"
        note = never_moved(m.name, values, what) if same_value(values + best) is not None else None
        if note is not None:
            notes.append(f"{note}; no configuration did better than another")
    return notes


__all__ = [
    "NOT_STARTED",
    "NO_RESULT",
    "STATUS_ORDER",
    "Aggregate",
    "BestPoint",
    "JobRow",
    "PointRow",
    "Report",
    "best_model",
    "best_point",
    "build_report",
]
