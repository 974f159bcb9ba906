"""A job's metrics: metrics.jsonl (one row per training step and per validation, appended: its rows'
model is records/metric_rows.py), the names of the validation metrics a job reports, and how a
job's best value of each is judged."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.metric_rows import TrainRow, ValRow, load_row
from rllm_sweeps.records.model import json_lines, line_of

# What a job's `final` holds: the validation metrics the loop reports (a sweep's metric is one of them).
VALIDATION_METRICS = ("val_reward_mean", "val_reward_std", "val_response_length_mean", "val_num_samples")
# The metric a job and a sweep are judged by when none is named, and its goal.
DEFAULT_METRIC, DEFAULT_GOAL = "val_reward_mean", "maximize"


def best_values(validations: list[Mapping[str, Any]], metrics: list[tuple[str, str]]) -> dict[str, float]:
    """Each metric's best value over the validations (result.json's), by its goal (a metric never
    reported: absent)."""
    best: dict[str, float] = {}
    for name, goal in metrics:
        values = [float(v[name]) for v in validations if isinstance(v.get(name), int | float)]
        if values:
            best[name] = max(values) if goal == "maximize" else min(values)
    return best


def same_value(values: list[float]) -> float | None:
    """The one value all of `values` have (to rounding), or None when they differ or there are none:
    a metric that never moved, across a job's validations or a sweep's jobs."""
    if not values:
        return None
    low, high = min(values), max(values)
    return low if high - low <= 1e-9 * max(1.0, abs(high)) else None


def never_moved(name: str, values: list[float], where: str) -> str | None:
    """What to say of a metric that never moved over `values` (None: it moved). `where` names them
    ("every validation", "all 4 completed jobs"). A single nonzero value says nothing."""
    value = same_value(values)
    if value is None or (value != 0 and len(values) < 2):
        return None
    if value == 0:
        return (
            f"{name} was 0 in {where}: it never left 0 (the model never earned a reward: a task too hard "
            f"for this model, responses too short for an answer (data.max_response_length), or a reward "
            f"that cannot be met)"
        )
    return f"{name} was {value:.4g} in {where}: it never moved"


class MetricsLog:
    """metrics.jsonl: one row per line, appended and flushed.

    On resume, rows past the checkpoint's step are dropped first, so the file stays
    continuous: no step missing, none repeated (the kept rows rewritten in today's schema).
    """

    def __init__(self, job_dir: Path, resume_from_step: int | None = None) -> None:
        self.path = JobPaths(Path(job_dir)).metrics
        if resume_from_step is None:
            self.path.write_text("")
        else:
            kept = [r for r in read_metrics(job_dir) if r.step <= resume_from_step]
            self.path.write_text("".join(line_of(r) for r in kept))
        self._file = self.path.open("a")

    def append(self, row: TrainRow | ValRow) -> None:
        self._file.write(line_of(row))
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def read_metrics(job_dir: Path) -> list[TrainRow | ValRow]:
    """The job's rows, oldest first: every reader of metrics.jsonl reads it here. A line cut short
    by a kill ends the file (everything before it is good); a row that does not validate is a
    RecordError naming the file and line."""
    lines = json_lines(JobPaths(Path(job_dir)).metrics, after_a_cut_line="end")
    return [load_row(data, source) for data, source in lines]


# Workflows with several roles or turns (rllm_sweeps/workflows/metrics.py) also report, at each
# validation, per role: val_<role>_acc (share of its trajectories that are right), val_<role>_reward_mean;
# per episode: the EPISODE_METRICS below. A sweep may optimize any of them (rLLM's val/<role>_acc).
ROLE_METRIC_STATS = ("acc", "reward_mean")
EPISODE_METRICS = ("val_turns_mean", "val_tokens_mean", "val_truncated_frac", "val_error_frac")


def role_metric(role: str, stat: str, prefix: str = "val_") -> str:
    return f"{prefix}{role}_{stat}"


def canonical_metric(name: str) -> str:
    """rLLM's spelling of a validation metric (val/judge_acc) is this project's val_judge_acc."""
    return "val_" + name.removeprefix("val/") if name.startswith("val/") else name


def is_validation_metric(name: str) -> bool:
    """A name some job can report: a common validation metric, an episode metric, or a role's
    (val_<role>_acc, val_<role>_reward_mean; whether the job's workflow has that role, its first
    validation checks)."""
    import re

    if name in VALIDATION_METRICS or name in EPISODE_METRICS:
        return True
    return re.fullmatch(r"val_[A-Za-z][A-Za-z0-9]*_(" + "|".join(ROLE_METRIC_STATS) + ")", name) is not None
