"""Where a sweep's best model is: the winner job's exported policy (training/policy_export.py).

The winner is the best point by the sweep's first metric (report.best[0]), or the confirmed best where
a confirmation stage ran; of that point's completed jobs (with a confirmation: the stage's replicates
and the search's own), the one with the best final value. Its final policy is the model: the sweep
ranks final values. `rllm-sweeps export SWEEP --best` hands it over; the report and `status` name it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rllm_sweeps.records.plan import Metric
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import JobStatus

if TYPE_CHECKING:
    from rllm_sweeps.report.model import JobRow, Report


@dataclass(frozen=True)
class BestModel:
    """The sweep's winner job and its exported final policy."""

    job_dir: Path
    metric: Metric
    value: float  # the job's final value of the metric
    why: str  # "the sweep's best point by val_reward_mean", "the confirmed best (point 3) by ..."
    adapter: Path | None  # its exported final policy (a PEFT adapter directory); None: it has none
    not_exported: str | None = None  # why it has none

    def line(self) -> str:
        """'best model: DIR/export/final (job 0001-..., val_reward_mean 0.75; the sweep's best point ...)'."""
        where = str(self.adapter) if self.adapter is not None else f"none ({self.not_exported or 'not exported'})"
        return f"best model: {where} (job {self.job_dir.name}, final {self.metric.name} {self.value:.4g}; {self.why})"


def best_model(report: Report) -> BestModel | None:
    """The winner of the sweep `report` describes, or None while no completed job reports its metric."""
    from rllm_sweeps.records.layout import SweepPaths
    from rllm_sweeps.report.model import build_report

    if not report.best:
        return None
    top = report.best[0]
    metric = top.metric
    rows = [j for j in report.jobs if j.index in top.point.jobs]
    why = f"the sweep's best point by {metric.name}"
    confirmed = report.confirmation.winner if report.confirmation is not None else None
    if confirmed is not None:
        stage = build_report(SweepPaths(report.sweep_dir).confirm.root)
        point_id = next(p.point_id for p in report.points if p.point_index == confirmed.point_index)
        rows = [j for j in stage.jobs if j.point_id == point_id]
        rows += [j for j in report.jobs if j.point_index == confirmed.point_index]
        why = f"the confirmed best ({confirmed.name}) by {metric.name}"
    winner = _best_row(rows, metric)
    if winner is None or winner.job_dir is None:
        return None
    result = JobResult.read(winner.job_dir)
    final = result.exports.final if result is not None else None
    adapter = winner.job_dir / final.path if final is not None else None
    why_none = result.exports.not_exported if result is not None else None
    return BestModel(winner.job_dir, metric, winner.final[metric.name], why, adapter, why_none)


def _best_row(rows: list[JobRow], metric: Metric) -> JobRow | None:
    done = [j for j in rows if j.status == JobStatus.COMPLETED and metric.name in j.final]
    best = None
    for row in done:
        if best is None or metric.better(row.final[metric.name], best.final[metric.name]):
            best = row
    return best


__all__ = ["BestModel", "best_model"]
