"""The sweep spec: what to search, from a sweep file and/or the command line.

A sweep file (conf/sweep/NAME.yaml, selected with `+sweep=NAME`) is the `sweep` node of
the config, in the shape of a W&B sweep file plus what W&B lacks:

    method: grid                      # grid | random | optuna | pbt
    metric: {name: val_reward_mean, goal: maximize}
    parameters:
      trainer.lr: {values: [1e-4, 3e-4]}
      rollout.n: "choice(4,8)"        # a Hydra sweep expression works too
    zip: [[model.path, data.train_batch_size]]
    seeds: 3
    constraints: ["rollout.n * data.train_batch_size <= 512"]
    confirm: {top: 3, seeds: 4}       # then the 3 best points again, with 4 fresh seeds each

On the command line, Hydra's sweep syntax keeps its meaning (`key=a,b`, `choice`,
`range`, `glob`, `sort`, `shuffle` are grid dimensions; `interval(a,b)`,
`tag(log, interval(a,b))` distributions for sampling methods) and `sweep.KEY=VALUE` sets
the sweep's own settings. The command line wins over the file, key by key.

Every problem is collected and reported at once, each naming the file and key or the
override it came from (`SweepError`, a `ConfigError`).

Modules: this one (SweepSpec, SweepRequest, SweepError), param.py (a parameter and its
choices), parse_param.py (a parameter's two syntaxes), parse_file.py (the sweep node:
`SweepSpec.from_dict` calls it, handing it the type to make), parse_cli.py (the command line).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rllm_sweeps.problems import ConfigError, Problems
from rllm_sweeps.records.layout import PLAN_FILE
from rllm_sweeps.records.plan import Metric, PlanFacts
from rllm_sweeps.sweep.confirm_settings import ConfirmSpec
from rllm_sweeps.sweep.constraints import Constraint
from rllm_sweeps.sweep.optuna_settings import OptunaSettings
from rllm_sweeps.sweep.param import Param
from rllm_sweeps.sweep.parse_file import SEED_KEY, SpecParser
from rllm_sweeps.sweep.pbt_settings import PbtSpec

HELP = "help"  # a sweep setting's field metadata: its `--help` line
NODE_ONLY_HELP = {  # the node's settings that are no field of the spec
    "description": "free text, kept in plan.json",
    "run_cap": "W&B's name for budget",
}


def setting(default: Any, help: str) -> Any:
    """A sweep node setting's field: its default and its `--help` line, declared together."""
    return field(default=default, metadata={HELP: help})


def setting_help(key: str) -> str:
    """The `--help` line of the sweep node's setting `key` (conf/config.yaml's `sweep:` names them)."""
    if key in NODE_ONLY_HELP:
        return NODE_ONLY_HELP[key]
    return SweepSpec.__dataclass_fields__[key].metadata[HELP]


class SweepError(ConfigError):
    """A sweep that must not run; `issues` lists every problem, each naming its source."""

    def __str__(self) -> str:
        head = f"Invalid sweep{' (' + self.where + ')' if self.where else ''}"
        if len(self.issues) == 1:
            return f"{head}: {self.issues[0]}"
        return f"{head}, {len(self.issues)} problems:\n" + "\n".join(f"  - {i}" for i in self.issues)


@dataclass(frozen=True)
class SweepSpec:
    """A parsed, checked sweep. Build with `SweepSpec.from_dict` or `parse_sweep`."""

    # The sweep node's settings, each declared once with its default and its `--help` line (setting());
    # the node's other two (node-only: NODE_ONLY_HELP) are read but not kept as fields.
    method: str = setting("grid", "grid | random | optuna | pbt (a W&B file's bayes runs as optuna with TPE)")
    metric: tuple[Metric, ...] = setting((Metric(),), "{name: val_reward_mean, goal: maximize}")
    parameters: tuple[Param, ...] = setting((), "KEY: {values: [...]} | {distribution: ..., min, max} (W&B's form)")
    zip: tuple[tuple[str, ...], ...] = setting((), "[[key_a, key_b], ...]: keys that vary together")
    # replicates of every point on seed_key; None = config's seed
    seeds: tuple[int, ...] | None = setting(None, "N or [s1, ...]: replicates on trainer.seed")
    seed_key: str = setting(SEED_KEY, "the key seeds set (default trainer.seed)")
    constraints: tuple[Constraint, ...] = setting((), '["rollout.n * data.train_batch_size <= 512", ...]')
    # number of JOBS (points x seeds); sampling methods need it
    budget: int | None = setting(None, "jobs, for random and optuna")
    parallel: int = setting(1, "jobs in flight (default 1)")
    seed: int = setting(0, "the sweep's own random seed")  # a random sweep is reproducible
    name: str | None = setting(None, "the sweep directory's name (multirun/PROJECT/NAME-ID)")
    # method optuna: sampler, pruner, storage, study name (its own lines in --help: app.py)
    optuna: OptunaSettings | None = setting(None, "method optuna: .sampler .pruner (docs/OPTUNA.md)")
    pbt: PbtSpec | None = setting(
        None, ".population=N .interval=STEPS (.burn_in .quantile .factors .resample_probability .mutate): method pbt"
    )
    confirm: ConfirmSpec | None = setting(
        None, ".top=K .seeds=N: after the search, its K best points again with N fresh seeds"
    )
    source: str = "command line"  # the sweep file, or "command line"
    notes: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "sweep") -> SweepSpec:
        """Parse the `sweep:` node (a sweep file's content, plan.json's spec). Raises SweepError."""
        problems = Problems()
        spec = SpecParser(problems).build(data, source, {}, [], make=cls)
        problems.raise_if_any(SweepError)
        return spec

    def param(self, key: str) -> Param:
        return next(p for p in self.parameters if p.key == key)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(p.key for p in self.parameters)

    @property
    def n_seeds(self) -> int:
        return len(self.seeds) if self.seeds else 1

    @property
    def swept_keys(self) -> tuple[str, ...]:
        """The parameters that vary from point to point (Param.is_swept), in spec order; never the seed."""
        return tuple(p.key for p in self.parameters if p.is_swept and p.key != self.seed_key)

    def plan_facts(self) -> PlanFacts:
        """What every reader of the plan needs, stated in plan.json (records/plan.py)."""
        return PlanFacts(self.metric, self.seed_key, self.swept_keys)

    def to_dict(self) -> dict[str, Any]:
        """The spec in sweep-file syntax (JSON-able; `from_dict(to_dict())` gives it back)."""
        out: dict[str, Any] = {"method": self.method}
        metrics = [{"name": m.name, "goal": m.goal} for m in self.metric]
        out["metric"] = metrics[0] if len(metrics) == 1 else metrics
        out["parameters"] = {p.key_element: p.to_dict() for p in self.parameters}
        if self.zip:
            out["zip"] = [list(group) for group in self.zip]
        if self.seeds is not None:
            out["seeds"] = list(self.seeds)
        if self.seed_key != SEED_KEY:
            out["seed_key"] = self.seed_key
        if self.constraints:
            out["constraints"] = [c.text for c in self.constraints]
        if self.budget is not None:
            out["budget"] = self.budget
        out["parallel"] = self.parallel
        out["seed"] = self.seed
        if self.name:
            out["name"] = self.name
        if self.optuna is not None:
            out["optuna"] = self.optuna.to_dict()
        if self.pbt is not None:
            out["pbt"] = self.pbt.to_dict()
        if self.confirm is not None:
            out["confirm"] = self.confirm.to_dict()
        return out


@dataclass(frozen=True)
class SweepRequest:
    """A command line taken apart: the spec, and the overrides every job gets."""

    spec: SweepSpec
    base_overrides: tuple[str, ...]  # non-swept overrides (hydra.* ones included), in order
    sweep_file: Path | None = None


def stored_plan_facts(spec: Mapping[str, Any]) -> PlanFacts:
    """The facts of a plan.json written before the planner stated them (schema 1), from its
    stored spec by the spec's own parser. Its problems are ignored: the sweep ran, and a name
    an older version accepted is no reason to refuse its report."""
    parser = SpecParser(Problems())
    return parser.build(spec, PLAN_FILE, {}, [], make=SweepSpec).plan_facts()
