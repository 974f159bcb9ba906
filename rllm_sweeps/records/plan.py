"""The plan record (SWEEP_DIR/plan.json): one definition of its keys for the planner that writes
it (sweep/plan.py) and the readers (the report, the Optuna source).

    {"schema_version": 2, "spec": {...}, "source": "conf/sweep/x.yaml",
     "metrics": [{"name": "val_reward_mean", "goal": "maximize"}], "seed_key": "trainer.seed",
     "swept": ["trainer.lr", "rollout.n"], "base_overrides": [...], "complete": true,
     "totals": {...}, "notes": [...], "jobs": [{...}, ...]}

The planner states the facts every reader needs (`PlanFacts`: the metrics and their goals, the
seed key, the swept keys), so that no reader interprets the sweep DSL again; `spec` (the sweep
in file syntax) stays for people and for a rerun's sweep id. A plan.json of schema 1 lacks the
facts: its reader derives them from `spec` with the spec parser (report/sweepdir.py).

Standard library and records/ only: reading a sweep directory must stay fast.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from rllm_sweeps.records.memory import MemoryNeed
from rllm_sweeps.records.metrics import DEFAULT_GOAL, DEFAULT_METRIC
from rllm_sweeps.records.resources import Resources

PLAN_SCHEMA_VERSION = 3  # 2: the facts (metrics, seed_key, swept) are stated; 3: W&B's distribution names
# Schema < 3 wrote a log-uniform over the values as `log_uniform`, which is W&B's exponent form now.
LEGACY_DISTRIBUTIONS = {"log_uniform": "log_uniform_values"}


def migrate_spec(spec: Mapping[str, Any], schema_version: int) -> dict[str, Any]:
    """A stored spec in today's names: a plan of schema < 3 meant the values by `log_uniform`."""
    return dict(spec) if schema_version >= 3 else renamed_distributions(spec, LEGACY_DISTRIBUTIONS)


def renamed_distributions(spec: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """`spec` with each parameter's distribution renamed by `names` (old -> new, or back)."""
    out = dict(spec)
    params = out.get("parameters")
    if isinstance(params, Mapping):
        out["parameters"] = {
            key: {**p, "distribution": names[p["distribution"]]}
            if isinstance(p, Mapping) and p.get("distribution") in names
            else p
            for key, p in params.items()
        }
    return out
    out["parameters"] = {
        key: {**p, "distribution": LEGACY_DISTRIBUTIONS[p["distribution"]]}
        if isinstance(p, Mapping) and p.get("distribution") in LEGACY_DISTRIBUTIONS
        else p
        for key, p in params.items()
    }
    return out


@dataclass(frozen=True)
class PlannedJob:
    """One job of the plan: what the runner launches, what the report reads back."""

    index: int  # position in the plan (0-based)
    overrides: list[str]  # everything the job needs: `python train.py *overrides`
    params: dict[str, Any]  # the point's values (swept and fixed parameters; not the seed)
    point_id: str  # the same for every seed of a point: config hash without the seed
    point_index: int  # the point's position among the plan's points
    seed: int | None  # the job's seed_key value
    config_hash: str  # rllm_sweeps.jobhash.config_hash of the job's resolved config
    resources: Resources | None  # the job's resources.* (None: a plan.json read back without them)
    engine: str = "jax"  # skyrl.engine
    # A job asking for GPUs: its GPU memory estimate (GiB, config/memory_need.py); None: none (no GPU
    # asked, SkyRL's GPU trainer, or the model's config.json is not here)
    gpu_memory_gib: float | None = None
    # ... and by size (records/memory.py), which the sweep fits to the job's share before launch
    gpu_memory_need: MemoryNeed | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in _JOB_FIELDS}  # shallow: written, not kept
        out["resources"] = None if self.resources is None else self.resources.to_dict()
        out["gpu_memory_need"] = None if self.gpu_memory_need is None else asdict(self.gpu_memory_need)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlannedJob:
        """A job as to_dict wrote it (the plan's spool)."""
        resources = data.get("resources")
        return cls(
            **{
                **data,
                "resources": None if resources is None else Resources.from_dict(resources),
                "gpu_memory_need": MemoryNeed.read(data.get("gpu_memory_need")),
            }
        )

    @classmethod
    def from_plan_json(cls, data: Mapping[str, Any]) -> PlannedJob:
        """A job of a plan.json, each field tolerated when missing (a report reads what it can)."""
        index, chash = int(data.get("index", 0)), str(data.get("config_hash", ""))
        params, resources, seed = data.get("params"), data.get("resources"), data.get("seed")
        return cls(
            index=index,
            overrides=[str(o) for o in data.get("overrides") or []],
            params=dict(params) if isinstance(params, dict) else {},
            point_id=str(data.get("point_id") or chash),
            point_index=int(data.get("point_index", index)),
            seed=seed,
            config_hash=chash,
            resources=Resources.read(resources),
            engine=str(data.get("engine") or "jax"),
            gpu_memory_gib=data.get("gpu_memory_gib"),
            gpu_memory_need=MemoryNeed.read(data.get("gpu_memory_need")),
        )


_JOB_FIELDS = tuple(f.name for f in fields(PlannedJob))


@dataclass(frozen=True)
class Totals:
    """The plan's counts and cost (the dry run shows them; the report reads `jobs`)."""

    points: int  # points in the plan (after constraints)
    jobs: int  # points x seeds
    seeds: int  # jobs per point
    candidates: int  # grid points before constraints, or samples drawn
    dropped: int  # points the constraints dropped
    validated: int  # jobs composed and validated
    node_hours: float  # sum over jobs of nodes x time limit
    gpu_hours: float  # sum over jobs of nodes x GPUs per node x time limit
    plan_seconds: float = 0.0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Totals:
        """plan.json's totals, a field missing or malformed read as 0."""

        def number(name: str, kind: str) -> float:
            value = data.get(name)
            ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
            return (float if kind == "float" else int)(value if ok else 0)

        return cls(**{f.name: number(f.name, str(f.type)) for f in fields(cls)})


@dataclass(frozen=True)
class Metric:
    """A metric the sweep optimizes (or, after the first, reports), and which way."""

    name: str = DEFAULT_METRIC
    goal: str = DEFAULT_GOAL  # maximize | minimize

    def better(self, a: float, b: float) -> bool:
        """Whether `a` is strictly better than `b`."""
        return a > b if self.goal == "maximize" else a < b


@dataclass(frozen=True)
class PlanFacts:
    """What the planner decided that every reader of the plan needs."""

    metrics: tuple[Metric, ...]  # the first is the one a search optimizes
    seed_key: str  # the config key whose values are a point's replicates
    swept: tuple[str, ...]  # the parameters that vary from point to point, in spec order; never the seed

    def to_dict(self) -> dict[str, Any]:
        return {
            "metrics": [{"name": m.name, "goal": m.goal} for m in self.metrics],
            "seed_key": self.seed_key,
            "swept": list(self.swept),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PlanFacts | None:
        """The facts of a plan.json; None when it does not state them (schema 1)."""
        metrics, seed_key, swept = data.get("metrics"), data.get("seed_key"), data.get("swept")
        if not isinstance(metrics, list) or not isinstance(seed_key, str) or not isinstance(swept, list):
            return None
        return cls(
            tuple(Metric(str(m["name"]), str(m.get("goal") or DEFAULT_GOAL)) for m in metrics if isinstance(m, dict)),
            seed_key,
            tuple(str(k) for k in swept),
        )


@dataclass(frozen=True)
class PlanRecord:
    """plan.json: its header, and its jobs."""

    spec: dict[str, Any]  # the sweep in file syntax (SweepSpec.to_dict)
    source: str  # the sweep file, or "command line"
    facts: PlanFacts
    base_overrides: tuple[str, ...]  # what every job gets
    complete: bool  # False: a dry run's partial plan (the first jobs only)
    totals: Totals
    notes: tuple[str, ...] = ()
    jobs: tuple[PlannedJob, ...] = field(default=(), repr=False)  # read back; a writer streams its own
    schema_version: int = PLAN_SCHEMA_VERSION

    @property
    def method(self) -> str:
        return str(self.spec.get("method") or "grid")

    def header(self) -> dict[str, Any]:
        """plan.json without its jobs."""
        return {
            "schema_version": self.schema_version,
            "spec": self.spec,
            "source": self.source,
            **self.facts.to_dict(),
            "base_overrides": list(self.base_overrides),
            "complete": self.complete,
            "totals": asdict(self.totals),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], facts: PlanFacts | None = None) -> PlanRecord:
        """A plan.json's content, each field tolerated when malformed (a report reads what it can).
        `facts` stands in for those of a plan.json that does not state them (schema 1);
        ValueError when it neither states them nor is given them."""
        facts = PlanFacts.from_dict(data) or facts
        if facts is None:
            raise ValueError("plan.json does not state its metrics, seed key and swept keys (schema 1)")
        spec, totals, jobs = data.get("spec"), data.get("totals"), data.get("jobs")
        jobs = jobs if isinstance(jobs, list) else []
        version = int(data.get("schema_version") or 1)
        return cls(
            spec=migrate_spec(spec, version) if isinstance(spec, dict) else {},
            source=str(data.get("source") or ""),
            facts=facts,
            base_overrides=tuple(str(o) for o in data.get("base_overrides") or []),
            complete=data.get("complete") is not False,
            totals=Totals.from_dict(totals if isinstance(totals, dict) else {}),
            notes=tuple(str(n) for n in data.get("notes") or []),
            jobs=tuple(PlannedJob.from_plan_json(j) for j in jobs if isinstance(j, dict)),
            schema_version=version,
        )
