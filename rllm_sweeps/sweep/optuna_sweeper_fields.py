"""hydra-optuna-sweeper's `hydra/sweeper=optuna`, field by field: the one table of what each field of
its `OptunaSweeperConf` becomes on this project's own Optuna search (a `sweep.*` setting, the
sweeper's params) or why it is refused.

    FIELDS                     the table (name, the plugin's type and default, what it becomes)
    SAMPLER_CONFIGS            the plugin's `hydra/sweeper/sampler` options (tpe, random, ...), their defaults
    translate(values)          a composed `hydra.sweeper` node -> Translation (or the refusals)
    schema()                   OptunaSweeperConf rebuilt from the table (with this sweeper's own settings),
                               what Hydra composes for `hydra/sweeper=optuna`
    docs_table()               the table as docs/OPTUNA.md shows it ("Coming from hydra-optuna-sweeper";
                               `python -m rllm_sweeps.sweep.optuna_sweeper_fields --write` writes it there)

The plugin itself cannot run here (its releases pin Optuna below 3 or 5); its vocabulary runs on this
project's search: asynchronous trials, pruning, resume. A field counts as set when its value differs
from its default (the table's), but `n_trials` (the budget) applies at the plugin's default too; the
defaults of `direction` and `n_jobs` are left unset (None) here, so that the product's own defaults
apply where the user's config sets none, and the plan says which metric the search optimizes. Standard library only.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional  # noqa: UP035 (OmegaConf's structured configs)

from rllm_sweeps.doc_table import between_markers

# The plugin's class; where the plugin is not installed, hydra_plugins/hydra_optuna_sweeper/optuna_sweeper.py
# makes it this project's sweeper (hydra_plugins/rllm_sweeps_sweeper/optuna.py).
PLUGIN_TARGET = "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"
DEFAULT_METRIC_NOTE = "the product's default metric"


class Becomes(enum.Enum):
    SETTING = "setting"  # the sweep's setting `sweep.<target>` (conf/config.yaml's sweep node)
    SAMPLER = "sampler"  # sweep.optuna.sampler (by `_target_`), its options, sweep.seed
    GOAL = "goal"  # the metric's goal (one, or one per metric: several objectives)
    PARAMS = "params"  # the search space, in Hydra's sweep grammar (hydra.sweeper.params)
    ACCEPTED = "accepted"  # nothing to do (the class Hydra instantiates, Hydra's defaults list)
    REFUSED = "refused"  # refused whenever set


@dataclass(frozen=True)
class OptunaField:
    name: str
    type: Any  # the plugin's annotation (the schema's)
    default: Any  # the plugin's default
    becomes: Becomes
    target: str = ""  # the sweep setting
    why: str = ""  # for REFUSED: the reason and what to write instead; else what it means
    unset: Any = "same"  # the schema's default here, where it is not the plugin's ("same": the plugin's)
    always: bool = False  # applied at its default too (the search needs it: the budget)


FIELDS: tuple[OptunaField, ...] = (
    OptunaField(
        "_target_",
        str,
        PLUGIN_TARGET,
        Becomes.ACCEPTED,
        why="the plugin's class, which here runs this project's Optuna search",
    ),
    OptunaField(
        "defaults",
        List[Any],  # noqa: UP006
        [{"sampler": "tpe"}],
        Becomes.ACCEPTED,
        why="Hydra's defaults list: `hydra/sweeper/sampler=NAME` picks the sampler (the table below)",
    ),
    OptunaField(
        "sampler",
        Any,
        None,
        Becomes.SAMPLER,
        "optuna.sampler",
        why="by its `_target_` (optuna.samplers.TPESampler -> tpe, ...); `seed` is the sweep's seed, the other "
        "arguments the sampler's options (sweep.optuna.sampler_options, checked by name)",
    ),
    OptunaField(
        "direction",
        Any,
        "minimize",
        Becomes.GOAL,
        "metric",
        why="the goal of the metric the search optimizes (sweep.metric; where none is named, "
        + DEFAULT_METRIC_NOTE
        + ", val_reward_mean); a list: one goal per metric of sweep.metric (several objectives)",
        unset=None,
    ),
    OptunaField("storage", Optional[str], None, Becomes.SETTING, "optuna.storage"),  # noqa: UP045
    OptunaField("study_name", Optional[str], None, Becomes.SETTING, "optuna.study_name"),  # noqa: UP045
    OptunaField("n_trials", int, 20, Becomes.SETTING, "budget", why="unset: the plugin's 20 trials", always=True),
    OptunaField("n_jobs", Optional[int], 2, Becomes.SETTING, "parallel", unset=None),  # noqa: UP045
    OptunaField(
        "search_space",
        Dict[str, Any],  # noqa: UP006
        None,
        Becomes.REFUSED,
        why="the plugin's deprecated form (1.1): write the parameters in `params` "
        "(`interval(a, b)`, `tag(log, interval(a, b))`, `choice(...)`, `range(a, b, step=s)`)",
        unset={},  # a dict merges into it (OmegaConf cannot merge one into a None dict)
    ),
    OptunaField(
        "params",
        Dict[str, str],  # noqa: UP006
        None,
        Becomes.PARAMS,
        why="the same grammar as on the command line (docs/SWEEPS.md): `interval(a, b)`, `tag(log, interval(a, b))`,"
        " `range(a, b, step=s)`, `choice(...)`, fixed values; also `hydra.sweeper.params.KEY=EXPR` typed unquoted",
        unset={},
    ),
    OptunaField(
        "custom_search_space",
        Optional[str],  # noqa: UP045
        None,
        Becomes.REFUSED,
        why="a function that samples the trial itself is not something the plan can validate before any job "
        "runs: write its parameters in `params` and its rules as sweep.constraints",
    ),
)


@dataclass(frozen=True)
class SamplerConfig:
    """One of the plugin's `hydra/sweeper/sampler` options: Optuna's class and the plugin's defaults."""

    name: str  # this project's sampler name (sweep/optuna_settings.py's SAMPLERS), "" where it has none
    target: str
    defaults: dict[str, Any]
    why: str = ""  # where refused


SAMPLER_CONFIGS: dict[str, SamplerConfig] = {
    "tpe": SamplerConfig(
        "tpe",
        "optuna.samplers.TPESampler",
        {
            "consider_prior": True,
            "prior_weight": 1.0,
            "consider_magic_clip": True,
            "consider_endpoints": False,
            "n_startup_trials": 10,
            "n_ei_candidates": 24,
            "multivariate": False,
            "warn_independent_sampling": True,
        },
    ),
    "random": SamplerConfig("random", "optuna.samplers.RandomSampler", {}),
    "cmaes": SamplerConfig(
        "cmaes",
        "optuna.samplers.CmaEsSampler",
        {
            "x0": None,
            "sigma0": None,
            "independent_sampler": None,
            "warn_independent_sampling": True,
            "consider_pruned_trials": False,
            "restart_strategy": None,
            "inc_popsize": 2,
            "use_separable_cma": False,
            "source_trials": None,
        },
    ),
    "nsgaii": SamplerConfig(
        "nsgaii",
        "optuna.samplers.NSGAIISampler",
        {
            "population_size": 50,
            "mutation_prob": None,
            "crossover_prob": 0.9,
            "swapping_prob": 0.5,
            "constraints_func": None,
        },
    ),
    "qmc": SamplerConfig("qmc", "optuna.samplers.QMCSampler", {}),
    "grid": SamplerConfig("grid", "optuna.samplers.GridSampler", {"search_space": None}),
    "motpe": SamplerConfig(
        "",
        "optuna.samplers.MOTPESampler",
        {"n_startup_trials": 10, "n_ehvi_candidates": 24},
        why="Optuna 4 removed MOTPESampler: TPESampler (hydra/sweeper/sampler=tpe) handles several objectives",
    ),
}
BY_TARGET = {c.target: c for c in SAMPLER_CONFIGS.values()}


@dataclass(frozen=True)
class Translation:
    """What a `hydra/sweeper=optuna` node asks of this project's search."""

    settings: dict[str, Any]  # the sweep node's settings: sweep.KEY -> value
    params: dict[str, str]  # the search space (hydra.sweeper.params)
    notes: list[str]  # said in the plan
    problems: list[str]  # refusals, each naming the field


def _unset(f: OptunaField) -> Any:
    return f.default if f.unset == "same" else f.unset


def translate(values: Mapping[str, Any], metric: Any = None, chosen: bool = True) -> Translation:
    """A composed `hydra.sweeper` node's fields of this table (resolved values); `metric`: the
    sweep.metric the command line sets (None: none), which a list of directions gives goals to.
    `chosen`: hydra/sweeper=optuna chose the node; else (the `rllm` node) the search is Optuna's only
    where a field of the plugin's own is set (params alone are Hydra's BasicSweeper convention)."""
    own = [f for f in FIELDS if f.becomes not in (Becomes.PARAMS, Becomes.ACCEPTED)]
    if not chosen and all(values.get(f.name, _unset(f)) == _unset(f) for f in own):
        return Translation({}, {str(k): str(v) for k, v in dict(values.get("params") or {}).items()}, [], [])
    settings: dict[str, Any] = {"method": "optuna"}
    params: dict[str, str] = {}
    problems: list[str] = []
    for f in FIELDS:
        value = values.get(f.name, _unset(f))
        if value == _unset(f) and not f.always:
            continue
        where = f"hydra.sweeper.{f.name}"
        if f.becomes is Becomes.REFUSED:
            problems.append(f"{where}: not supported by this sweeper: {f.why}")
        elif f.becomes is Becomes.SETTING:
            settings[f.target] = value
        elif f.becomes is Becomes.PARAMS:
            params = {str(k): str(v) for k, v in dict(value).items()}
        elif f.becomes is Becomes.SAMPLER:
            settings.update(_sampler(value, problems))
        elif f.becomes is Becomes.GOAL:
            settings.update(_goals(value, metric, problems))
    notes = []
    if metric is None:
        goal = settings.get("metric.goal", "maximize")
        notes.append(
            f"hydra/sweeper=optuna: the search {goal[:-1]}es val_reward_mean, {DEFAULT_METRIC_NOTE} (another: "
            "sweep.metric.name=NAME)"
        )
    return Translation(settings, params, notes, problems)


def _goals(value: Any, metric: Any, problems: list[str]) -> dict[str, Any]:
    goals = [str(d) for d in value] if isinstance(value, list | tuple) else [str(value)]
    where = f"hydra.sweeper.direction={value}"
    if any(g not in ("minimize", "maximize") for g in goals):
        problems.append(f"{where}: a direction is minimize or maximize")
        return {}
    if len(goals) == 1:
        return {"metric.goal": goals[0]}
    metrics = metric if isinstance(metric, list) else []
    if len(metrics) != len(goals) or not all(isinstance(m, Mapping) and "name" in m for m in metrics):
        problems.append(
            f"{where}: {len(goals)} objectives need as many metrics the jobs report, by name: "
            "sweep.metric=[{name: val_reward_mean},{name: ...}] (the goals are the directions)"
        )
        return {}
    return {"metric": [{"name": m["name"], "goal": g} for m, g in zip(metrics, goals, strict=True)]}


def _sampler(node: Any, problems: list[str]) -> dict[str, Any]:
    if not isinstance(node, Mapping) or "_target_" not in node:
        problems.append(f"hydra.sweeper.sampler={node!r}: give a sampler by its _target_ (optuna.samplers.TPESampler)")
        return {}
    target = str(node["_target_"])
    config = BY_TARGET.get(target)
    if config is None:
        known = ", ".join(c.target for c in SAMPLER_CONFIGS.values() if c.name)
        problems.append(f"hydra.sweeper.sampler._target_={target}: not a sampler this sweeper runs ({known})")
        return {}
    if config.why:
        problems.append(f"hydra.sweeper.sampler._target_={target}: {config.why}")
        return {}
    out: dict[str, Any] = {"optuna.sampler": config.name}
    options = {
        str(k): v for k, v in node.items() if k not in ("_target_", "seed") and v != config.defaults.get(str(k), None)
    }
    if node.get("seed") is not None:
        out["seed"] = node["seed"]
    if options:
        out["optuna.sampler_options"] = options
    return out


def schema(own: type, target: str, plugin_defaults: bool = False) -> type:
    """A `hydra/sweeper` node: `own`'s fields (this sweeper's settings: dry_run, ...) and the table's
    (OptunaSweeperConf's, unset), `_target_` the sweeper class; `plugin_defaults`: with the plugin's
    defaults list (`hydra/sweeper/sampler: tpe`), as `hydra/sweeper=optuna` composes."""
    # Not recursive: Hydra would instantiate the sampler's `_target_` (the plugin's way); its arguments are read here.
    table = [("_target_", str, field(default=target)), ("_recursive_", bool, field(default=False))]
    names = {f.name for f in FIELDS}
    table += [(f.name, f.type, _default_of(f)) for f in fields(own) if f.name not in names]
    skip = {"_target_"} if plugin_defaults else {"_target_", "defaults"}
    for f in FIELDS:
        if f.name not in skip:
            # The sampler's default, where its defaults list picks one, is missing (the plugin's): a value
            # would be merged over the one `hydra/sweeper/sampler=NAME` gives.
            unset = "???" if plugin_defaults and f.becomes is Becomes.SAMPLER else _unset(f)
            table.append((f.name, f.type, _default(f, unset)))
    return make_dataclass("OptunaSweeperConf" if plugin_defaults else "SweeperConf", table)


def sampler_schema(name: str) -> type:
    """The plugin's `hydra/sweeper/sampler=NAME` config (its `_target_`, `seed`, its defaults)."""
    config = SAMPLER_CONFIGS[name]
    table = [("_target_", str, field(default=config.target)), ("seed", Optional[int], field(default=None))]  # noqa: UP045
    table += [(k, Any, field(default=v)) for k, v in config.defaults.items()]
    return make_dataclass(f"{name.capitalize()}SamplerConfig", table)


def _default(f: OptunaField, value: Any) -> Any:
    if isinstance(value, list | dict):
        return field(default_factory=lambda: type(value)(value))
    return field(default=value)


def _default_of(f: Any) -> Any:
    return field(default_factory=f.default_factory) if f.default_factory is not field().default_factory else f.default


def docs_table() -> str:
    """The table as docs/OPTUNA.md's section "Coming from hydra-optuna-sweeper" shows it."""
    lines = ["| `hydra.sweeper.` field | the plugin's default | here |", "|---|---|---|"]
    for f in FIELDS:
        lines.append(f"| `{f.name}` | `{f.default!r}` | {_meaning(f)} |")
    lines += ["", "| `hydra/sweeper/sampler=` | Optuna's class | here |", "|---|---|---|"]
    for name, c in SAMPLER_CONFIGS.items():
        here = f"refused: {c.why}" if c.why else f"`sweep.optuna.sampler={c.name}`"
        lines.append(f"| `{name}` | `{c.target}` | {here} |")
    return "\n".join(lines)


def _meaning(f: OptunaField) -> str:
    if f.becomes is Becomes.SETTING:
        unset = " (unset: the sweep's own default)" if f.unset is None else (f" ({f.why})" if f.why else "")
        return f"`sweep.{f.target}`{unset}"
    if f.becomes is Becomes.REFUSED:
        return f"refused: {f.why}"
    if f.becomes is Becomes.SAMPLER:
        return f"`sweep.optuna.sampler`: {f.why}"
    if f.becomes is Becomes.GOAL:
        return f"`sweep.metric.goal`: {f.why}"
    if f.becomes is Becomes.PARAMS:
        return f"the search space (`hydra.sweeper.params`): {f.why}"
    return f"accepted: {f.why}"


DOC = Path("docs/OPTUNA.md")  # the checkout's, relative to its root (where a developer writes it)
MARK_BEGIN = "<!-- optuna sweeper table: python -m rllm_sweeps.sweep.optuna_sweeper_fields --write -->"
MARK_END = "<!-- end of the optuna sweeper table -->"


def with_table(doc: str, table: str) -> str:
    """`doc` with the text between the markers replaced by `table`."""
    return between_markers(doc, MARK_BEGIN, MARK_END, table + "\n")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    DOC.write_text(with_table(DOC.read_text(), docs_table()))

__all__ = ["FIELDS", "SAMPLER_CONFIGS", "Becomes", "OptunaField", "Translation", "schema", "translate"]
