"""The plan record (SWEEP_DIR/plan.json): one definition of its keys for the planner that writes
it (sweep/plan.py) and the readers (the report, the Optuna source).

    {"schema_version": 2, "spec": {...}, "source": "conf/sweep/x.yaml",
     "metrics": [{"name": "val_reward_mean", "goal": "maximize"}], "seed_key": "trainer.seed",
     "swept": ["trainer.lr", "rollout.n"], "base_overrides": [...], "complete": true,
     "totals": {...}, "notes": [...], "jobs": [{...}, ...]}

The planner states the facts every reader needs (`PlanFacts`: the metrics and their goals, the
seed key, the swept keys), so that no reader interprets the sweep DSL again; `spec` (the sweep
in file syntax) stays for people and for a rerun's sweep id. A plan.json of schema 1 lacks the
facts: its reader derives them from `spec` with the spec parser before it reads the record
(report/sweepdir.py: `with_facts`), as this package is below the spec parser.

Pydantic models (records/model.py); no training stack: reading a sweep directory must stay fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic.dataclasses import dataclass

from rllm_sweeps.records.memory import MemoryNeed
from rllm_sweeps.records.metrics import DEFAULT_GOAL, DEFAULT_METRIC
from rllm_sweeps.records.model import Migration, RecordError, dump, read_record, same_shape
from rllm_sweeps.records.resources import Resources

# 1: the first (a file with no schema_version is one); 2: the facts (metrics, seed_key, swept) are
# stated; 3: W&B's distribution names
PLAN_SCHEMA_VERSION = 3
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
    resources: Resources | None  # the job's resources.* (None: a plan written without them)
    engine: str = "jax"  # skyrl.engine
    # A job asking for GPUs: its GPU memory estimate (GiB, config/memory_need.py); None: none (no GPU
    # asked, SkyRL's GPU trainer, or the model's config.json is not here)
    gpu_memory_gib: float | None = None
    # ... and by size (records/memory.py), which the sweep fits to the job's share before launch
    gpu_memory_need: MemoryNeed | None = None


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


@dataclass(frozen=True)
class Metric:
    """A metric the sweep optimizes (or, after the first, reports), and which way."""

    name: str = DEFAULT_METRIC
    goal: Literal["maximize", "minimize"] = DEFAULT_GOAL

    def better(self, a: float, b: float) -> bool:
        """Whether `a` is strictly better than `b`."""
        return a > b if self.goal == "maximize" else a < b


@dataclass(frozen=True)
class PlanFacts:
    """What the planner decided that every reader of the plan needs."""

    metrics: tuple[Metric, ...]  # the first is the one a search optimizes
    seed_key: str  # the config key whose values are a point's replicates
    swept: tuple[str, ...]  # the parameters that vary from point to point, in spec order; never the seed


def _facts_stated(data: dict[str, Any]) -> dict[str, Any]:
    if not all(k in data for k in ("metrics", "seed_key", "swept")):
        raise RecordError(
            "a plan of schema 1 does not state its metrics, seed key and swept keys: read it with "
            "report/sweepdir.py's open_sweep_dir, which derives them from its spec"
        )
    return data


def _wandb_names(data: dict[str, Any]) -> dict[str, Any]:
    spec = data.get("spec")
    return {**data, "spec": migrate_spec(spec, 2)} if isinstance(spec, Mapping) else data


@dataclass(frozen=True)
class PlanRecord:
    """plan.json: its header (the facts among it), and its jobs."""

    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: same_shape, 1: _facts_stated, 2: _wandb_names}

    spec: dict[str, Any]  # the sweep in file syntax (SweepSpec.to_dict)
    source: str  # the sweep file, or "command line"
    metrics: tuple[Metric, ...]  # PlanFacts.metrics
    seed_key: str  # PlanFacts.seed_key
    swept: tuple[str, ...]  # PlanFacts.swept
    base_overrides: tuple[str, ...]  # what every job gets
    complete: bool  # False: a dry run's partial plan (the first jobs only)
    totals: Totals
    notes: tuple[str, ...] = ()
    jobs: tuple[PlannedJob, ...] = field(default=(), repr=False)  # read back; a writer streams its own
    schema_version: int = PLAN_SCHEMA_VERSION

    @classmethod
    def of(cls, facts: PlanFacts, **header: Any) -> PlanRecord:
        return cls(metrics=facts.metrics, seed_key=facts.seed_key, swept=facts.swept, **header)

    @property
    def facts(self) -> PlanFacts:
        return PlanFacts(self.metrics, self.seed_key, self.swept)

    @property
    def method(self) -> str:
        return str(self.spec.get("method") or "grid")

    def header(self) -> dict[str, Any]:
        """plan.json without its jobs (a writer streams them after it)."""
        out = dump(self)
        del out["jobs"]
        return out


def read_plan(path: Path) -> PlanRecord:
    """plan.json through its model (one of schema 1: report/sweepdir.py's `read_sweep_plan`)."""
    return read_record(PlanRecord, path)
