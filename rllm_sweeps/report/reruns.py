"""The reruns of a sweep's jobs (`rllm-sweeps rerun`, SWEEP_DIR/reruns/<job name>/<k>/): listed
apart from the jobs they replay, never in their place (the jobs' table, points and best are the
sweep's own jobs alone).

    rows = read_reruns(sweep_dir, metric)
    rerun_lines(rows)   # "Reruns (not in the tables above):", one line each
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from rllm_sweeps.records.layout import SweepPaths
from rllm_sweeps.records.plan import Metric
from rllm_sweeps.records.result import JobResult


@dataclass(frozen=True)
class RerunRow:
    job_dir: Path  # the rerun's directory
    replays: str  # the name of the sweep's job it replays (its directory under jobs/)
    number: int  # 1, 2, ...: the rerun's number for that job
    status: str  # the rerun's JobStatus, or "running" before its first record
    final: float | None  # the first metric's last validation value


def read_reruns(sweep_dir: Path, metric: Metric | None) -> list[RerunRow]:
    """Every rerun of the sweep's jobs, by job then number."""
    rows = []
    for run_dir in SweepPaths(sweep_dir).rerun_dirs():
        result = JobResult.read(run_dir)
        value = None if result is None or metric is None else result.final.get(metric.name)
        final = float(value) if isinstance(value, int | float) and math.isfinite(value) else None
        status = str(result.status) if result is not None else "running"
        rows.append(RerunRow(run_dir, run_dir.parent.name, int(run_dir.name), status, final))
    return rows


def rerun_lines(rows: list[RerunRow], metric: Metric | None) -> list[str]:
    """The reruns, one line each (nothing without any)."""
    if not rows:
        return []
    name = metric.name if metric is not None else "metric"
    lines = ["", "Reruns (rllm-sweeps rerun; not in the tables above):"]
    for row in rows:
        value = "-" if row.final is None else f"{row.final:.4g}"
        lines.append(f"  rerun {row.number} of job {row.replays}: {row.status}, {name} {value}  ({row.job_dir})")
    return lines
