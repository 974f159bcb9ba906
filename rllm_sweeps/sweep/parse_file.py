"""A sweep node -> the spec's parts, checked, every problem collected (each naming its file and key).

The node is a sweep file's content (conf/sweep/NAME.yaml, `+sweep=NAME`), the `sweep.KEY=VALUE`
settings of the command line on top of it, or plan.json's `spec` read back:

    method: grid                      # grid | random | optuna | pbt (pbt_settings.py)
    metric: {name: val_reward_mean, goal: maximize}
    parameters: {trainer.lr: {values: [1e-4, 3e-4]}}      # each entry: parse_param.py
    zip: [[model.path, data.train_batch_size]]
    seeds: 3
    constraints: ["rollout.n * data.train_batch_size <= 512"]

The parser is handed the type it makes (`SweepSpec`, whose `from_dict` calls it), so that
spec.py can call the parser without the parser importing spec.py back; a setting left unset takes
that type's default (SweepSpec's fields: their one definition).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from rllm_sweeps.config.rules import path_name
from rllm_sweeps.config.spelling import canonical_key
from rllm_sweeps.override_text import override_key
from rllm_sweeps.problems import Problems, did_you_mean
from rllm_sweeps.records.metrics import EPISODE_METRICS, VALIDATION_METRICS, canonical_metric, is_validation_metric
from rllm_sweeps.records.plan import Metric
from rllm_sweeps.sweep.confirm_settings import ConfirmSpec, parse_confirm_settings
from rllm_sweeps.sweep.constraints import Constraint, ConstraintSyntaxError
from rllm_sweeps.sweep.node import node_blocks, node_fields
from rllm_sweeps.sweep.optuna_settings import OptunaSettings, canonical, parse_optuna_settings
from rllm_sweeps.sweep.param import Param, grid_size
from rllm_sweeps.sweep.parse_param import ParamParser, is_integer
from rllm_sweeps.sweep.pbt_settings import PbtSpec, parse_pbt_settings
from rllm_sweeps.sweep.wandb_fields import translate_wandb_fields

METHODS = ("grid", "random", "optuna", "pbt")
GOALS = ("maximize", "minimize")
SEED_KEY = "trainer.seed"


class SpecDefaults(Protocol):
    """What the parser reads of the type it makes, built with no arguments: its defaults."""

    @property
    def method(self) -> str: ...
    @property
    def metric(self) -> tuple[Metric, ...]: ...
    @property
    def seed_key(self) -> str: ...
    @property
    def parallel(self) -> int: ...
    @property
    def seed(self) -> int: ...


SpecT = TypeVar("SpecT", bound=SpecDefaults)


def _grid_sampler(method: str, raw: Mapping[str, tuple[Any, str]], parts: Mapping[str, tuple[Any, str]]) -> bool:
    """Whether an optuna sweep names the grid sampler (its budget is the grid's size)."""
    block = raw.get("optuna", (None, ""))[0]
    sampler = parts.get("sampler", (block.get("sampler") if isinstance(block, Mapping) else None, ""))[0]
    return method == "optuna" and sampler is not None and canonical(sampler) == "grid"


@dataclass
class _Node:
    """The sweep node's settings, each with where it was set (the file's, the command line's on top),
    and the command line's settings of each block (`metric.name=...`, `pbt.population=...`) apart."""

    source: str
    raw: dict[str, tuple[Any, str]]
    # "metric" takes `metric.name=...` too, beside the node's blocks
    parts: dict[str, dict[str, tuple[Any, str]]] = field(
        default_factory=lambda: {block: {} for block in ("metric", *node_blocks())}
    )

    def get(self, key: str, default: Any = None) -> tuple[Any, str]:
        # null means "not set" (conf/config.yaml declares every setting as null)
        value, where = self.raw.get(key, (None, f"{self.source}: {key}"))
        return (default if value is None else value), where

    def is_set(self, key: str) -> bool:
        return self.raw.get(key, (None, ""))[0] is not None


@dataclass
class _SpecParts:
    """The spec's parts as the blocks settle them (a later block may change an earlier one's: PBT's
    population is its budget)."""

    method: str
    metric: tuple[Metric, ...]
    seed_key: str
    params: dict[str, Param]
    seeds: tuple[int, ...] | None
    seeds_where: str
    zip: tuple[tuple[str, ...], ...] = ()
    constraints: tuple[Constraint, ...] = ()
    budget: int | None = None
    budget_where: str = ""
    parallel: int = 1
    seed: int = 0
    name: str | None = None
    optuna: OptunaSettings | None = None
    pbt: PbtSpec | None = None
    confirm: ConfirmSpec | None = None

    @property
    def n_seeds(self) -> int:
        return len(self.seeds) if self.seeds else 1

    def fields(self) -> dict[str, Any]:
        """The spec's keyword arguments."""
        return {
            "method": self.method,
            "metric": self.metric,
            "parameters": tuple(self.params.values()),
            "zip": self.zip,
            "seeds": self.seeds,
            "seed_key": self.seed_key,
            "constraints": self.constraints,
            "budget": self.budget,
            "parallel": self.parallel,
            "seed": self.seed,
            "name": self.name,
            "optuna": self.optuna,
            "pbt": self.pbt,
            "confirm": self.confirm,
        }


class SpecParser:
    """Parses and checks a sweep node; each problem goes to `problem`, each note to `notes`."""

    def __init__(self, problem: Problems) -> None:
        self.problem = problem
        self.notes: list[str] = []
        self.params = ParamParser(problem)  # the command line's parser adds its own parameters with it

    def build(
        self,
        data: Mapping[str, Any],
        source: str,
        settings: Mapping[str, tuple[Any, str]],
        cli_params: list[Param],
        make: Callable[..., SpecT],
    ) -> SpecT:
        """The spec (`make(**parts)`) from the file's node, the command line's settings and its parameters;
        what none of them sets is `make()`'s. Block by block, in the order each needs the others."""
        default = make()
        node = self.node(data, source, settings)
        method = self.method(node, default)
        metric = self.metrics(*node.get("metric"), node.parts["metric"]) or default.metric
        seed_key = self.seed_key(node, default)
        params = self.parameters(node, cli_params)
        seeds, seeds_where = self.replicates(node, seed_key, params, cli_params)
        spec = _SpecParts(method, metric, seed_key, params, seeds, seeds_where)
        spec.zip = self.zips(*node.get("zip", []), params)
        spec.constraints = self.constraints(*node.get("constraints", []))
        spec.budget, spec.budget_where = self.budget(node)
        spec.parallel = self.positive_int(*node.get("parallel", default.parallel), "parallel", default.parallel)
        spec.seed = self.sweep_seed(node, default)
        spec.name = self.name(node)
        self.pbt_block(node, spec)
        self.confirm_block(node, spec)
        self.check_budget(node, spec)
        self.optuna_block(node, spec)
        return make(**spec.fields(), source=source, notes=tuple(self.notes))

    def node(self, data: Any, source: str, settings: Mapping[str, tuple[Any, str]]) -> _Node:
        """The node's settings, W&B's fields translated, the command line's on top; unknown ones refused."""
        if not isinstance(data, Mapping):
            self.problem(source, f"a sweep is a mapping, got {data!r}")
            data = {}
        data = translate_wandb_fields(data, source, self.problem, self.notes.append)  # W&B's own fields
        node = _Node(source, {k: (v, f"{source}: {k}") for k, v in data.items()})
        for key, (value, where) in settings.items():
            block, dot, rest = key.partition(".")
            if dot and block in node.parts:
                node.parts[block][rest] = (value, where)
            else:
                node.raw[key] = (value, where)
        fields = node_fields()  # conf/config.yaml's sweep node
        for key, (_, where) in node.raw.items():
            if key not in fields:
                self.problem(where, f"unknown sweep setting '{key}'{did_you_mean(key, fields)}")
        return node

    def method(self, node: _Node, default: SpecDefaults) -> str:
        method, where = node.get("method", default.method)
        if method not in METHODS:
            self.problem(where, f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
            return default.method
        return method

    def seed_key(self, node: _Node, default: SpecDefaults) -> str:
        seed_key, where = node.get("seed_key", default.seed_key)
        if not isinstance(seed_key, str) or not seed_key:
            self.problem(where, f"seed_key is a config key, got {seed_key!r}")
            return default.seed_key
        return seed_key

    def parameters(self, node: _Node, cli_params: list[Param]) -> dict[str, Param]:
        """The file's parameters, the command line's over them key by key."""
        params: dict[str, Param] = {}
        file_params, where = node.get("parameters", {})
        if file_params is None:
            file_params = {}
        if not isinstance(file_params, Mapping):
            self.problem(where, f"parameters is a mapping of key -> definition, got {file_params!r}")
            file_params = {}
        for key, entry in file_params.items():
            for param in self.params.file_params(str(key), entry, f"{node.source}: parameters.{key}"):
                params[param.key] = param
        for param in cli_params:  # the command line wins, key by key
            params[param.key] = param
        return params

    def replicates(
        self, node: _Node, seed_key: str, params: dict[str, Param], cli_params: list[Param]
    ) -> tuple[tuple[int, ...] | None, str]:
        """`seeds:` and where it was set; a parameter on the seed key becomes the seeds (values on the
        command line) or is refused (a distribution, or swept beside `seeds:`): either way, no longer
        a parameter."""
        value, seeds_where = node.get("seeds")
        seeds = self.seeds(value, seeds_where)
        if seed_key not in params:
            return seeds, seeds_where
        p = params[seed_key]
        from_cli = any(p is c for c in cli_params)
        if p.kind == "distribution":
            self.problem(p.source, f"{seed_key} is the seed: seeds are replicates, never searched; use `seeds:`")
        elif p.kind == "values" and (seeds is None or from_cli):
            if all(is_integer(c.value) and c.value >= 0 for c in p.choices):
                seeds = tuple(c.value for c in p.choices)
                self.notes.append(f"{p.source}: seeds {list(seeds)} are replicates of every point, not a dimension")
            else:
                self.problem(p.source, f"seeds must be integers >= 0, got {[c.value for c in p.choices]}")
        elif p.kind == "value" and from_cli and seeds is not None:
            seeds = (p.choices[0].value,)
        elif seeds is not None:
            self.problem(
                p.source,
                f"{seed_key} is both swept as a parameter and replicated by seeds ({seeds_where}); "
                "seeds are never a searched dimension: keep one",
            )
        else:
            return seeds, seeds_where  # a plain value on the seed key: a parameter like any other
        del params[seed_key]
        return seeds, seeds_where

    def budget(self, node: _Node) -> tuple[int | None, str]:
        """`budget:` (or W&B's `run_cap:`), None where unset, and where it was set."""
        budget, budget_where = node.get("budget")
        run_cap, cap_where = node.get("run_cap")
        if run_cap is not None:
            if budget is not None:
                self.problem(cap_where, f"run_cap is W&B's name for budget; give one of them ({budget_where})")
            budget, budget_where = run_cap, cap_where
        return self.positive_int(budget, budget_where, "budget", None), budget_where

    def sweep_seed(self, node: _Node, default: SpecDefaults) -> int:
        seed, where = node.get("seed", default.seed)
        if not is_integer(seed):
            self.problem(where, f"seed (the sweep's random seed) is an integer, got {seed!r}")
            return default.seed
        return seed

    def name(self, node: _Node) -> str | None:
        name, where = node.get("name")
        if name is not None and (bad := path_name(str(name))):
            self.problem(where, f"name {name!r} names the sweep's directory (multirun/PROJECT/NAME-ID): {bad}")
            return None
        return None if name is None else str(name)

    def pbt_block(self, node: _Node, spec: _SpecParts) -> None:
        """Method pbt: its `pbt:` block; the population is its jobs (budget) and trains at once (parallel)."""
        block, where = node.get("pbt")
        if spec.method != "pbt":
            if block is not None or node.parts["pbt"]:
                self.notes.append(f"{node.source}: pbt settings are ignored by method {spec.method}")
            return
        spec.pbt = pbt = parse_pbt_settings(block, where, node.parts["pbt"], list(spec.params.values()), self.problem)
        if spec.seeds is not None:
            self.problem(
                spec.seeds_where,
                "a PBT population shares one seed (a trial that copies a checkpoint continues its data "
                "order, a function of the seed and the step): drop seeds; sweep.confirm re-runs the best "
                "with fresh seeds",
            )
            spec.seeds = None
        if not node.is_set("parallel"):
            spec.parallel = pbt.population  # a population trains at once (fewer: the late ones copy finished ones)
        if spec.budget is None:
            spec.budget = pbt.population
        elif spec.budget != pbt.population:
            self.problem(spec.budget_where, f"a PBT sweep's jobs are its population ({pbt.population}): drop budget")
            spec.budget = pbt.population

    def confirm_block(self, node: _Node, spec: _SpecParts) -> None:
        """Any method: `confirm:`, its seeds fresh ones."""
        block, where = node.get("confirm")
        if block is None and not node.parts["confirm"]:
            return
        spec.confirm = confirm = parse_confirm_settings(block, where, node.parts["confirm"], self.problem)
        if isinstance(confirm.seeds, tuple) and spec.seeds and (reused := sorted(set(confirm.seeds) & set(spec.seeds))):
            self.problem(where, f"confirm.seeds {reused} are seeds of the search: give fresh ones")

    def check_budget(self, node: _Node, spec: _SpecParts) -> None:
        """A grid takes values, never distributions; a sampling method needs a budget (unless Optuna's
        grid sampler sizes it), a whole number of points x seeds."""
        if spec.method == "grid":
            for p in spec.params.values():
                if p.kind == "distribution":
                    self.problem(
                        p.source,
                        f"{p.distribution} is a distribution: it needs method random or optuna "
                        "(sweep.method=random); a grid takes values, e.g. a,b,c or range(...)",
                    )
        elif spec.budget is None:
            if not _grid_sampler(spec.method, node.raw, node.parts["optuna"]):
                self.problem(
                    f"{node.source}: budget",
                    f"method {spec.method} needs a budget (the number of jobs to run; W&B: run_cap)",
                )
        elif spec.budget % (n_seeds := spec.n_seeds):
            lower, upper = spec.budget // n_seeds * n_seeds, (spec.budget // n_seeds + 1) * n_seeds
            self.problem(
                spec.budget_where,
                f"budget {spec.budget} counts jobs (points x seeds) and there are {n_seeds} seeds per point: "
                f"use a multiple of {n_seeds} ({lower or n_seeds} or {upper})",
            )

    def optuna_block(self, node: _Node, spec: _SpecParts) -> None:
        """Method optuna: its `optuna:` block; the grid sampler's budget is the grid's size."""
        block, where = node.get("optuna")
        parts = node.parts["optuna"]
        if spec.method != "optuna":
            if block is not None or parts:
                self.notes.append(f"{node.source}: optuna settings are ignored by method {spec.method}")
            if len(spec.metric) > 1:
                self.notes.append(f"{node.source}: several metrics: {spec.method} reports all, optimizes none")
            return
        spec.optuna = optuna = parse_optuna_settings(
            block, where, parts, len(spec.metric), self.problem, self.notes.append
        )
        if optuna.sampler != "grid":
            return
        if spec.budget is None:  # Optuna's grid sampler asks every point once: the grid's size
            spec.budget = grid_size(tuple(spec.params.values()), spec.zip) * spec.n_seeds
        for p in spec.params.values():
            if p.kind == "distribution":
                self.problem(
                    p.source,
                    f"the grid sampler takes values (a list, a,b,c or range(...)); {p.key} is a "
                    f"{p.distribution} distribution: give values or another sampler",
                )

    def metrics(self, value: Any, where: str, parts: Mapping[str, tuple[Any, str]]) -> tuple[Metric, ...]:
        """The metrics given, checked; () when none is (the spec's default then)."""
        if value is None:
            value = {}
        if isinstance(value, str):
            value = {"name": value}
        items = value if isinstance(value, list) else [value]
        metrics = []
        for i, item in enumerate(items):
            at = f"{where}[{i}]" if isinstance(value, list) else where
            if not isinstance(item, Mapping):
                self.problem(at, f"a metric is {{name: ..., goal: maximize|minimize}}, got {item!r}")
                continue
            item = dict(item)
            for key, (v, _) in parts.items():
                item[key] = v
            for key in item:
                if key not in ("name", "goal"):
                    self.problem(at, f"unknown metric field '{key}'{did_you_mean(key, ('name', 'goal'))}")
            name, goal = item.get("name", Metric.name), item.get("goal", Metric.goal)
            if not isinstance(name, str) or not name:
                self.problem(at, f"metric name is a non-empty string, got {name!r}")
                name = Metric.name
            elif not is_validation_metric(name := canonical_metric(name)):  # what the real run needs
                known = (*VALIDATION_METRICS, *EPISODE_METRICS)
                hint = did_you_mean(name, known) or (
                    f" (the jobs report {', '.join(known)}, and workflows val_<role>_acc, val_<role>_reward_mean)"
                )
                self.problem(at, f"metric {name!r} is not a metric the jobs report{hint}")
            if goal not in GOALS:
                self.problem(at, f"metric goal {goal!r} is not one of {', '.join(GOALS)}")
                goal = Metric.goal
            metrics.append(Metric(name, goal))
        return tuple(metrics)

    def seeds(self, value: Any, where: str) -> tuple[int, ...] | None:
        if value is None:
            return None
        if is_integer(value):
            if value < 1:
                self.problem(where, f"seeds: N (a number of replicates >= 1) or a list of seeds, got {value}")
                return None
            return tuple(range(value))
        if isinstance(value, list) and value and all(is_integer(v) and v >= 0 for v in value):
            if len(set(value)) != len(value):
                self.problem(where, f"seeds repeat: {value}")
            return tuple(value)
        self.problem(where, f"seeds: N or a non-empty list of integers >= 0, got {value!r}")
        return None

    def zips(self, value: Any, where: str, params: dict[str, Param]) -> tuple[tuple[str, ...], ...]:
        if not value:
            return ()
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            value = [value]  # one group written flat: zip: [a, b]
        if not isinstance(value, list) or not all(isinstance(g, list) for g in value):
            self.problem(where, f"zip is a list of key groups, e.g. [[model.path, data.train_batch_size]]: {value!r}")
            return ()
        groups: list[tuple[str, ...]] = []
        seen: dict[str, int] = {}
        for gi, group in enumerate(value):
            at = f"{where}[{gi}]"
            keys = tuple(override_key(str(k)) for k in group)
            if len(keys) < 2:
                self.problem(at, f"a zip group pairs two keys or more, got {list(keys)}")
                continue
            ok = True
            for key in keys:
                if key in seen:
                    self.problem(at, f"{key} is in two zip groups ({where}[{seen[key]}])")
                    ok = False
                seen[key] = gi
                p = params.get(key)
                if p is None:
                    self.problem(at, f"{key} is zipped but not in parameters{did_you_mean(key, params)}")
                    ok = False
                elif p.kind != "values":
                    self.problem(at, f"{key} is zipped, so it needs a list of values (it has {p.kind})")
                    ok = False
            if not ok:
                continue
            lengths = {key: len(params[key].choices) for key in keys}
            if len(set(lengths.values())) > 1:
                sizes = ", ".join(f"{k} has {n} ({params[k].source})" for k, n in lengths.items())
                self.problem(at, f"zipped keys need equally many values: {sizes}")
                continue
            groups.append(keys)
        return tuple(groups)

    def constraints(self, value: Any, where: str) -> tuple[Constraint, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            self.problem(where, f"constraints is a list of expressions, got {value!r}")
            return ()
        out = []
        for i, text in enumerate(value):
            try:
                out.append(Constraint.parse(text, source=f"{where}[{i}]", spell=canonical_key))
            except ConstraintSyntaxError as err:
                self.problem(f"{where}[{i}]", f"constraint {text!r}: {err}")
        return tuple(out)

    def positive_int(self, value: Any, where: str, name: str, fallback: int | None) -> Any:
        """`value`, an integer >= 1 (or None where the fallback is None: unset); else `fallback`."""
        if value is None and fallback is None:
            return None
        if not is_integer(value) or value < 1:
            self.problem(where, f"{name} is an integer >= 1, got {value!r}")
            return fallback
        return value
