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
from typing import Any, Protocol, TypeVar

from rllm_sweeps.config.rules import path_name
from rllm_sweeps.config.spelling import canonical_key
from rllm_sweeps.override_text import override_key
from rllm_sweeps.problems import Problems, did_you_mean
from rllm_sweeps.records.metrics import EPISODE_METRICS, VALIDATION_METRICS, canonical_metric, is_validation_metric
from rllm_sweeps.records.plan import Metric
from rllm_sweeps.sweep.confirm_settings import parse_confirm_settings
from rllm_sweeps.sweep.constraints import Constraint, ConstraintSyntaxError
from rllm_sweeps.sweep.node import node_fields
from rllm_sweeps.sweep.optuna_settings import canonical, parse_optuna_settings
from rllm_sweeps.sweep.param import Param, grid_size
from rllm_sweeps.sweep.parse_param import ParamParser, is_integer
from rllm_sweeps.sweep.pbt_settings import parse_pbt_settings
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
        what none of them sets is `make()`'s."""
        default = make()
        if not isinstance(data, Mapping):
            self.problem(source, f"a sweep is a mapping, got {data!r}")
            data = {}
        data = translate_wandb_fields(data, source, self.problem, self.notes.append)  # W&B's own fields
        raw: dict[str, tuple[Any, str]] = {k: (v, f"{source}: {k}") for k, v in data.items()}
        metric_parts: dict[str, tuple[Any, str]] = {}
        optuna_parts: dict[str, tuple[Any, str]] = {}
        pbt_parts: dict[str, tuple[Any, str]] = {}
        confirm_parts: dict[str, tuple[Any, str]] = {}
        for key, (value, where) in settings.items():
            if key.startswith("metric."):
                metric_parts[key[len("metric.") :]] = (value, where)
            elif key.startswith("optuna."):
                optuna_parts[key[len("optuna.") :]] = (value, where)
            elif key.startswith("pbt."):
                pbt_parts[key[len("pbt.") :]] = (value, where)
            elif key.startswith("confirm."):
                confirm_parts[key[len("confirm.") :]] = (value, where)
            else:
                raw[key] = (value, where)
        fields = node_fields()  # conf/config.yaml's sweep node
        for key, (_, where) in raw.items():
            if key not in fields:
                self.problem(where, f"unknown sweep setting '{key}'{did_you_mean(key, fields)}")

        def get(key: str, default: Any = None) -> tuple[Any, str]:
            # null means "not set" (conf/config.yaml declares every setting as null)
            value, where = raw.get(key, (None, f"{source}: {key}"))
            return (default if value is None else value), where

        method, where = get("method", default.method)
        if method not in METHODS:
            self.problem(where, f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
            method = default.method
        metric = self.metrics(*get("metric"), metric_parts) or default.metric
        seed_key, where = get("seed_key", default.seed_key)
        if not isinstance(seed_key, str) or not seed_key:
            self.problem(where, f"seed_key is a config key, got {seed_key!r}")
            seed_key = default.seed_key

        params: dict[str, Param] = {}
        file_params, where = get("parameters", {})
        if file_params is None:
            file_params = {}
        if not isinstance(file_params, Mapping):
            self.problem(where, f"parameters is a mapping of key -> definition, got {file_params!r}")
            file_params = {}
        for key, entry in file_params.items():
            for param in self.params.file_params(str(key), entry, f"{source}: parameters.{key}"):
                params[param.key] = param
        for param in cli_params:  # the command line wins, key by key
            params[param.key] = param

        seeds, seeds_where = get("seeds")
        seeds = self.seeds(seeds, seeds_where)
        if seed_key in params:
            p = params[seed_key]
            from_cli = any(p is c for c in cli_params)
            if p.kind == "distribution":
                self.problem(p.source, f"{seed_key} is the seed: seeds are replicates, never searched; use `seeds:`")
                del params[seed_key]
            elif p.kind == "values" and (seeds is None or from_cli):
                if all(is_integer(c.value) and c.value >= 0 for c in p.choices):
                    seeds = tuple(c.value for c in p.choices)
                    self.notes.append(f"{p.source}: seeds {list(seeds)} are replicates of every point, not a dimension")
                else:
                    self.problem(p.source, f"seeds must be integers >= 0, got {[c.value for c in p.choices]}")
                del params[seed_key]
            elif p.kind == "value" and from_cli and seeds is not None:
                seeds = (p.choices[0].value,)
                del params[seed_key]
            elif seeds is not None:
                self.problem(
                    p.source,
                    f"{seed_key} is both swept as a parameter and replicated by seeds ({seeds_where}); "
                    "seeds are never a searched dimension: keep one",
                )
                del params[seed_key]

        zips = self.zips(*get("zip", []), params)
        constraints = self.constraints(*get("constraints", []))
        budget, budget_where = get("budget")
        run_cap, cap_where = get("run_cap")
        if run_cap is not None:
            if budget is not None:
                self.problem(cap_where, f"run_cap is W&B's name for budget; give one of them ({budget_where})")
            budget, budget_where = run_cap, cap_where
        budget = self.positive_int(budget, budget_where, "budget", None)
        parallel = self.positive_int(*get("parallel", default.parallel), "parallel", default.parallel)
        seed, where = get("seed", default.seed)
        if not is_integer(seed):
            self.problem(where, f"seed (the sweep's random seed) is an integer, got {seed!r}")
            seed = default.seed
        name, name_where = get("name")
        if name is not None and (bad := path_name(str(name))):
            self.problem(name_where, f"name {name!r} names the sweep's directory (multirun/PROJECT/NAME-ID): {bad}")
            name = None

        pbt = None
        pbt_block, pbt_where = get("pbt")
        if method == "pbt":
            pbt = parse_pbt_settings(pbt_block, pbt_where, pbt_parts, list(params.values()), self.problem)
            if seeds is not None:
                self.problem(
                    seeds_where,
                    "a PBT population shares one seed (a trial that copies a checkpoint continues its data "
                    "order, a function of the seed and the step): drop seeds; sweep.confirm re-runs the best "
                    "with fresh seeds",
                )
                seeds = None
            if raw.get("parallel", (None, ""))[0] is None:
                parallel = pbt.population  # a population trains at once (fewer: the late ones copy finished ones)
            if budget is None:
                budget = pbt.population
            elif budget != pbt.population:
                self.problem(budget_where, f"a PBT sweep's jobs are its population ({pbt.population}): drop budget")
                budget = pbt.population
        elif pbt_block is not None or pbt_parts:
            self.notes.append(f"{source}: pbt settings are ignored by method {method}")
        confirm = None
        confirm_block, confirm_where = get("confirm")
        if confirm_block is not None or confirm_parts:
            confirm = parse_confirm_settings(confirm_block, confirm_where, confirm_parts, self.problem)
            if isinstance(confirm.seeds, tuple) and seeds and (reused := sorted(set(confirm.seeds) & set(seeds))):
                self.problem(confirm_where, f"confirm.seeds {reused} are seeds of the search: give fresh ones")
        n_seeds = len(seeds) if seeds else 1
        if method == "grid":
            for p in params.values():
                if p.kind == "distribution":
                    self.problem(
                        p.source,
                        f"{p.distribution} is a distribution: it needs method random or optuna "
                        "(sweep.method=random); a grid takes values, e.g. a,b,c or range(...)",
                    )
        elif budget is None:
            if not _grid_sampler(method, raw, optuna_parts):
                self.problem(
                    f"{source}: budget", f"method {method} needs a budget (the number of jobs to run; W&B: run_cap)"
                )
        elif budget % n_seeds:
            lower, upper = budget // n_seeds * n_seeds, (budget // n_seeds + 1) * n_seeds
            self.problem(
                budget_where,
                f"budget {budget} counts jobs (points x seeds) and there are {n_seeds} seeds per point: "
                f"use a multiple of {n_seeds} ({lower or n_seeds} or {upper})",
            )
        optuna = None
        block, block_where = get("optuna")
        if method == "optuna":
            optuna = parse_optuna_settings(
                block, block_where, optuna_parts, len(metric), self.problem, self.notes.append
            )
            if optuna.sampler == "grid":
                if budget is None:  # Optuna's grid sampler asks every point once: the grid's size
                    budget = grid_size(tuple(params.values()), zips) * n_seeds
                for p in params.values():
                    if p.kind == "distribution":
                        self.problem(
                            p.source,
                            f"the grid sampler takes values (a list, a,b,c or range(...)); {p.key} is a "
                            f"{p.distribution} distribution: give values or another sampler",
                        )
        else:
            if block is not None or optuna_parts:
                self.notes.append(f"{source}: optuna settings are ignored by method {method}")
            if len(metric) > 1:
                self.notes.append(f"{source}: several metrics: {method} reports all, optimizes none")
        return make(
            method=method,
            metric=metric,
            parameters=tuple(params.values()),
            zip=zips,
            seeds=seeds,
            seed_key=seed_key,
            constraints=constraints,
            budget=budget,
            parallel=parallel,
            seed=seed,
            name=str(name) if name is not None else None,
            optuna=optuna,
            pbt=pbt,
            confirm=confirm,
            source=source,
            notes=tuple(self.notes),
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
