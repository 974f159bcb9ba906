"""The confirmation stage in a sweep's report: the top configs' fresh-seed replicates ranked by
mean with a confidence interval, and whether the winner's lead is significant (confirm_stats.py).

SWEEP_DIR/confirm/ is a sweep directory of its own (sweep/confirm.py); each of its points
re-runs one point of the search, which it names by the same point id (the config without the
seed). Only completed replicates count; `best` then means the confirmed best. report/model.py
reads the stage (`read_confirmation`), this module says what it found.
"""

from __future__ import annotations

from dataclasses import dataclass

from rllm_sweeps.records.plan import Metric
from rllm_sweeps.report.confirm_stats import Confirmation


@dataclass(frozen=True)
class ConfirmedPoint:
    name: str  # "point 3" (the search's point it re-runs)
    point_index: int  # in the search
    overrides: tuple[str, ...]  # its swept overrides
    jobs: int  # replicates planned
    completed: int  # replicates that completed (those are the values)


@dataclass(frozen=True)
class ConfirmationReport:
    metric: Metric
    stats: Confirmation
    points: dict[str, ConfirmedPoint]  # by name, in the search's rank order
    seeds: tuple[int, ...]

    @property
    def winner(self) -> ConfirmedPoint | None:
        return self.points[self.stats.winner.name] if self.stats.winner is not None else None


def confirmation_lines(c: ConfirmationReport) -> list[str]:
    """The ranking, one line per config, then the verdict on the winner's lead."""
    seeds = list(c.seeds)
    lines = [f"Confirmation: the top {len(c.points)} points re-run with fresh seeds {seeds}, by mean {c.metric.name}:"]
    for rank, row in enumerate(c.stats.ranking, start=1):
        point = c.points[row.name]
        ci = f" [{row.ci[0]:.4g}, {row.ci[1]:.4g}]" if row.ci is not None else ""
        where = " ".join(point.overrides)
        lines.append(f"  {rank}. {row.name}: {row.mean:.4g}{ci} (n={point.completed}/{point.jobs})  {where}")
    missing = [p.name for p in c.points.values() if not p.completed]
    if missing:
        lines.append(f"  not ranked (no completed replicate): {', '.join(missing)}")
    lines.append("  " + verdict(c))
    return lines


def verdict(c: ConfirmationReport) -> str:
    s = c.stats
    if s.winner is None:
        return "no replicate completed: nothing confirmed"
    if s.p_value is None:
        return f"{s.winner.name} leads; too few replicates (or configs) to test its lead"
    runner_up = s.ranking[1].name
    what = "significant" if s.significant else "not significant"
    return f"{s.winner.name}'s lead over {runner_up} is {what} (Welch's t-test p={s.p_value:.3g}, alpha {s.alpha})"
