"""The plan: a sweep's jobs (records/plan.py's PlannedJob), their totals and cost, plan.json, the dry-run table.

    plan = make_plan(spec, base_overrides)          # sweep/planner.py: every job composed + validated
    print(plan.render(rows=20))                      # the dry-run table, totals, cost
    plan.write(sweep_dir / "plan.json")              # records/plan.py defines its header

Order: points in grid order (the last dimension fastest, as Hydra's BasicSweeper) or in
sampling order; the seeds of a point are consecutive jobs that share its `point_id`. A plan
made with a `limit` (a dry run's) says `complete=False` and holds the first jobs only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rllm_sweeps.pbt.decision import BURN_IN_SHARE
from rllm_sweeps.records.layout import PLAN_FILE
from rllm_sweeps.records.model import dump, load
from rllm_sweeps.records.plan import PlannedJob, PlanRecord, Totals
from rllm_sweeps.records.resources import Resources
from rllm_sweeps.sweep.spec import SweepSpec
from rllm_sweeps.sweep.spool import JobSpool
from rllm_sweeps.sweeper_settings import SweeperSettings


def job_spool() -> JobSpool:
    """A sequence of PlannedJob kept on disk (a run's plan: any number of jobs in bounded memory)."""
    return JobSpool(dump, _spooled_job)


def _spooled_job(data: Any) -> PlannedJob:
    return load(PlannedJob, data, "the plan's job spool")


@dataclass
class Plan:
    spec: SweepSpec
    base_overrides: list[str]
    # Every job when `complete` (a run's plan: a JobSpool, read from disk as it is iterated); else
    # the first `limit`. Iterate it, index it; do not hold all of it.
    jobs: Sequence[PlannedJob]
    totals: Totals
    complete: bool = True
    notes: list[str] = field(default_factory=list)
    resource_shapes: list[Resources] = field(default_factory=list)  # the distinct resources.* of the jobs

    def header(self) -> dict[str, Any]:
        """plan.json without its jobs."""
        record = PlanRecord.of(
            self.spec.plan_facts(),
            spec=self.spec.to_dict(),
            source=self.spec.source,
            base_overrides=tuple(self.base_overrides),
            complete=self.complete,
            totals=self.totals,
            notes=tuple(self.notes),
        )
        return record.header()

    def to_dict(self) -> dict[str, Any]:
        return {**self.header(), "jobs": [dump(j) for j in self.jobs]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def write(self, path: Path | str) -> Path:
        """plan.json, written atomically; the jobs are streamed to it, one line each."""
        from rllm_sweeps.records.atomic import open_atomic

        path = Path(path)
        if path.is_dir() or path.suffix != ".json":
            path = path / PLAN_FILE
        head = json.dumps(self.header(), indent=2, sort_keys=True, default=str)
        lines = self.jobs.lines() if isinstance(self.jobs, JobSpool) else _job_lines(self.jobs)
        with open_atomic(path) as f:
            f.write(head[: head.rindex("}")].rstrip() + ',\n  "jobs": [')
            for i, line in enumerate(lines):
                f.write(("\n    " if i == 0 else ",\n    ") + line.decode())
            f.write("\n  ]\n}\n")
        return path

    def render(
        self, rows: int = SweeperSettings.rows, parallel: int | None = None, settings: Sequence[str] = ()
    ) -> str:
        """The dry-run view: what runs, what it costs, the first `rows` jobs. `parallel`: the jobs
        in flight the run will use when it is not the spec's (hydra.sweeper.parallel); `settings`: the
        sweeper's settings given (`hydra.sweeper.parallel=2`, `hydra.sweep.dir=...`), shown as such."""
        return render_plan(self, rows, parallel, settings)


def _job_lines(jobs: Iterable[PlannedJob]) -> Iterator[bytes]:
    for job in jobs:
        yield json.dumps(dump(job), separators=(",", ":")).encode()


# ---- the dry-run table -----------------------------------------------------------------


def _short(value: float) -> str:
    return f"{value:,.1f}" if value < 1e6 else f"{value:.3g}"


def render_plan(
    plan: Plan, rows: int = SweeperSettings.rows, parallel: int | None = None, settings: Sequence[str] = ()
) -> str:
    spec, t = plan.spec, plan.totals
    lines = []
    head = f"Sweep {spec.name or spec.source}: method {spec.method}"
    seeds = f" x {t.seeds} seeds" if spec.seeds else ""
    lines.append(f"{head}, {t.points:,} points{seeds} = {t.jobs:,} jobs, parallel {parallel or spec.parallel}")
    if settings:
        lines.append("Sweeper settings: " + " ".join(settings))
    # Each swept parameter's values as the planner reads them: a misread range shows before anything runs.
    for p in spec.parameters:
        if p.is_swept:
            lines.append(f"  {p.key}: {p.describe()}")
    if spec.method == "grid" and t.dropped:
        lines.append(f"Constraints dropped {t.dropped:,} of {t.candidates:,} grid points")
    elif spec.method == "random":
        lines.append(f"Sampled with Optuna's RandomSampler(seed={spec.seed}): {t.candidates:,} draws")
    elif spec.pbt is not None:
        p = spec.pbt
        burn_in = f"step {p.burn_in}" if p.burn_in is not None else f"{BURN_IN_SHARE:.0%} of its steps"
        lines.append(
            f"PBT: a population of {p.population} (first points drawn with Optuna's RandomSampler(seed={spec.seed})); "
            f"every {p.interval} steps from its burn-in ({burn_in}) the bottom {p.quantile:g} copies a top "
            "trial's checkpoint and perturbs"
        )
    elif spec.optuna is not None:
        o = spec.optuna
        lines.append(
            f"Optuna: sampler {o.sampler}, pruner {o.pruner}; {t.points:,} finished trials (complete or pruned), "
            "each asked when a slot frees, its jobs validated before they launch"
        )
    if spec.confirm is not None:
        c, per_job = spec.confirm, t.node_hours / max(t.jobs, 1)
        seeds = f"seeds {list(c.seeds)}" if isinstance(c.seeds, tuple) else f"{c.seeds} fresh seeds"
        lines.append(
            f"Then confirmation: the top {c.top} points x {seeds} = {c.jobs} more jobs "
            f"(about {_short(per_job * c.jobs)} node-hours more); `best` is the confirmed best"
        )
    if plan.base_overrides:
        lines.append("Every job: " + " ".join(plan.base_overrides))
    if not t.validated:
        lines.append(f"Composed {len(plan.jobs):,} of {t.jobs:,} jobs, validated none yet ({t.plan_seconds:.2f} s)")
    elif plan.complete:
        lines.append(f"Validated: all {t.validated:,} jobs ({t.plan_seconds:.2f} s)")
    elif spec.method == "optuna":
        lines.append(
            f"Validated: the jobs of {len(plan.jobs) // t.seeds:,} points drawn at random ({t.plan_seconds:.2f} s); "
            "the rows below are those examples, not the trials Optuna will ask"
        )
    else:
        lines.append(
            f"Validated: the first {t.validated:,} of {t.jobs:,} jobs ({t.plan_seconds:.2f} s); "
            "a run validates every job before it launches any"
        )
    lines.append(
        f"Estimated use: {_short(t.node_hours)} node-hours, {_short(t.gpu_hours)} GPU-hours "
        "(upper bound: every job's resources.nodes x gpus_per_node x time_min)"
    )
    for note in plan.notes:
        lines.append(f"note: {note}")
    shown = plan.jobs[:rows]
    if shown:
        common = set(plan.base_overrides)
        table = [("#", "point", "seed", "config hash", "nodes x gpus", "time", "overrides")]
        for j in shown:
            r = j.resources
            table.append(
                (
                    str(j.index),
                    j.point_id[:8],
                    "" if j.seed is None else str(j.seed),
                    j.config_hash,
                    f"{r.nodes} x {r.gpus_per_node}" if r else "? x ?",
                    f"{r.time_min}m" if r else "?m",
                    " ".join(o for o in j.overrides if o not in common),
                )
            )
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
        lines.append("")
        for row in table:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1])
        if t.jobs > len(shown) and spec.method != "optuna":
            lines.append(f"... {t.jobs - len(shown):,} more jobs (showing {len(shown)} of {t.jobs:,})")
    return "\n".join(lines)


__all__ = [
    "PLAN_FILE",
    "Plan",
    "job_spool",
    "render_plan",
]
