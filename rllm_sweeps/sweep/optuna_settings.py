"""The `optuna:` block of a `method: optuna` sweep: sampler, pruner, storage, study name.

    optuna:
      sampler: tpe                       # tpe (default) | gp | cmaes | qmc | nsgaii | random | grid
      sampler_options: {n_startup_trials: 4}
      pruner: asha                       # median (default) | percentile | asha | hyperband | none
      pruner_options: {min_resource: 2, reduction_factor: 3}
      storage: null                      # default: a journal file in the sweep directory
      study_name: null                   # default: the sweep directory's name

The tables below are the one list of what a sweep may choose: parsing checks names and
options against them (with a did-you-mean), `make_sampler` / `make_pruner` build Optuna's
objects from them, and docs/OPTUNA.md describes the same options. The sampler's seed is the
sweep's `seed`; constraints come from the sweep's `constraints` (never from options).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rllm_sweeps.problems import Problem, did_you_mean
from rllm_sweeps.records.launch import PrunerSettings
from rllm_sweeps.sweep.node import node_fields

Check = Callable[[Any], str | None]  # None when the value is fine, else what it should be


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(low: int) -> Check:
    return lambda v: None if _is_int(v) and v >= low else f"an integer >= {low}"


def _int_or_auto(low: int) -> Check:
    return lambda v: None if v == "auto" or (_is_int(v) and v >= low) else f"an integer >= {low} or auto"


def _number(low: float, high: float) -> Check:
    def check(v: Any) -> str | None:
        ok = (_is_int(v) or isinstance(v, float)) and low <= v <= high
        return None if ok else f"a number in [{low:g}, {high:g}]"

    return check


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "true or false"


def _one_of(*values: str) -> Check:
    return lambda v: None if v in values else "one of " + ", ".join(values)


@dataclass(frozen=True)
class Part:
    """A sampler or pruner a sweep may name: Optuna's class and the options a sweep may set."""

    cls: str  # the class in optuna.samplers / optuna.pruners
    options: dict[str, Check]  # keyword arguments of the constructor a sweep may set
    summary: str
    defaults: dict[str, Any] = field(default_factory=dict)  # ours, where Optuna has none
    constraints: bool = False  # reads the trials' constraint values (Trial.set_constraint)
    multi_objective: bool = True
    seeded: bool = True  # takes `seed`


SAMPLERS: dict[str, Part] = {
    "tpe": Part(
        "TPESampler",
        {
            "n_startup_trials": _int(0),
            "n_ei_candidates": _int(1),
            "multivariate": _bool,
            "group": _bool,
            "constant_liar": _bool,
        },
        "Tree-structured Parzen Estimator (Optuna's default); constant_liar (on) spreads parallel trials",
        constraints=True,
    ),
    "gp": Part(
        "GPSampler",
        {"n_startup_trials": _int(0), "deterministic_objective": _bool},
        "Gaussian-process Bayesian optimization (numeric parameters; torch)",
        constraints=True,
    ),
    "cmaes": Part(
        "CmaEsSampler",
        {
            "n_startup_trials": _int(0),
            "popsize": _int(1),
            "use_separable_cma": _bool,
            "with_margin": _bool,
            "lr_adapt": _bool,
            "consider_pruned_trials": _bool,
        },
        "CMA-ES for continuous parameters (categoricals are sampled at random); one objective",
        multi_objective=False,
    ),
    "qmc": Part(
        "QMCSampler",
        {"qmc_type": _one_of("sobol", "halton"), "scramble": _bool},
        "quasi-Monte Carlo: a low-discrepancy cover of the space",
    ),
    "nsgaii": Part(
        "NSGAIISampler",
        {
            "population_size": _int(2),
            "mutation_prob": _number(0, 1),
            "crossover_prob": _number(0, 1),
            "swapping_prob": _number(0, 1),
        },
        "NSGA-II genetic algorithm, made for several objectives",
        constraints=True,
    ),
    "random": Part("RandomSampler", {}, "independent random sampling"),
    "grid": Part("GridSampler", {}, "every point of a discrete space once, in a seeded order"),
}

_PRUNE_EVERY = {
    "n_startup_trials": _int(0),
    "n_warmup_steps": _int(0),
    "interval_steps": _int(1),
    "n_min_trials": _int(1),
}
PRUNERS: dict[str, Part] = {
    "median": Part("MedianPruner", dict(_PRUNE_EVERY), "prune below the median of earlier trials at the same step"),
    "percentile": Part(
        "PercentilePruner",
        {"percentile": _number(0, 100), **_PRUNE_EVERY},
        "prune below the given percentile of earlier trials at the same step",
        defaults={"percentile": 25.0},
    ),
    "asha": Part(
        "SuccessiveHalvingPruner",
        {
            "min_resource": _int_or_auto(1),
            "reduction_factor": _int(2),
            "min_early_stopping_rate": _int(0),
            "bootstrap_count": _int(0),
        },
        "asynchronous successive halving: keep the top 1/reduction_factor at each rung",
    ),
    "hyperband": Part(
        "HyperbandPruner",
        {
            "min_resource": _int(1),
            "max_resource": _int_or_auto(1),
            "reduction_factor": _int(2),
            "bootstrap_count": _int(0),
        },
        "Hyperband: several successive-halving brackets with different aggressiveness",
    ),
    "none": Part("NopPruner", {}, "no pruning"),
}
# Other spellings users reach for (Optuna's class names, W&B's and papers' names).
_ALIASES = {
    "tpesampler": "tpe",
    "gpsampler": "gp",
    "cma": "cmaes",
    "cmaessampler": "cmaes",
    "qmcsampler": "qmc",
    "nsga2": "nsgaii",
    "nsgaiisampler": "nsgaii",
    "randomsampler": "random",
    "gridsampler": "grid",
    "medianpruner": "median",
    "percentilepruner": "percentile",
    "successivehalving": "asha",
    "successivehalvingpruner": "asha",
    "sha": "asha",
    "hyperbandpruner": "hyperband",
    "nop": "none",
    "noppruner": "none",
}
DEFAULT_SAMPLER = "tpe"
DEFAULT_PRUNER = "median"  # Optuna's default; `none` when there are several objectives
RDB_SCHEMES = ("sqlite", "postgresql", "mysql", "oracle", "mssql")


@dataclass(frozen=True)
class OptunaSettings:
    sampler: str = DEFAULT_SAMPLER
    sampler_options: dict[str, Any] = field(default_factory=dict)
    pruner: str = DEFAULT_PRUNER
    pruner_options: dict[str, Any] = field(default_factory=dict)
    storage: str | None = None  # None: SWEEP_DIR/optuna.journal
    study_name: str | None = None  # None: the sweep directory's name

    def to_dict(self) -> dict[str, Any]:
        """The block in sweep-file syntax."""
        out: dict[str, Any] = {"sampler": self.sampler, "pruner": self.pruner}
        if self.sampler_options:
            out["sampler_options"] = dict(self.sampler_options)
        if self.pruner_options:
            out["pruner_options"] = dict(self.pruner_options)
        if self.storage is not None:
            out["storage"] = self.storage
        if self.study_name is not None:
            out["study_name"] = self.study_name
        return out

    @property
    def sampler_part(self) -> Part:
        return SAMPLERS[self.sampler]

    @property
    def pruner_part(self) -> Part:
        return PRUNERS[self.pruner]


def canonical(name: Any) -> str:
    """'NSGA-II' -> 'nsgaii', 'successive_halving' -> 'asha', 'TPESampler' -> 'tpe'."""
    key = str(name).lower().replace("-", "").replace("_", "").replace(" ", "")
    return _ALIASES.get(key, key)


def parse_optuna_settings(
    block: Any,
    where: str,
    parts: Mapping[str, tuple[Any, str]],
    n_objectives: int,
    problem: Problem,
    note: Callable[[str], None] = lambda _: None,
) -> OptunaSettings:
    """The `optuna:` block (`block`, from `where`) with the command line's `sweep.optuna.KEY`
    settings (`parts`: KEY -> (value, where)) on top. Every problem goes to `problem(where, message)`."""
    fields = node_fields("optuna")  # conf/config.yaml's sweep.optuna
    if block is None:
        block = {}
    if not isinstance(block, Mapping):
        problem(where, f"optuna is a mapping of {', '.join(fields)}; got {block!r}")
        block = {}
    raw: dict[str, tuple[Any, str]] = {str(k): (v, f"{where}.{k}") for k, v in block.items()}
    for what in ("sampler", "pruner"):
        # The file's options belong to the file's sampler (pruner): another one named on the
        # command line without options of its own starts from its defaults.
        options = f"{what}_options"
        switched = what in parts and canonical(parts[what][0]) != canonical(block.get(what))
        if switched and block.get(options) and not any(k.partition(".")[0] == options for k in parts):
            del raw[options]
            note(f"{where}.{options} are for {block.get(what)}; {parts[what][1]} uses {parts[what][0]}'s defaults")
    for key, (value, at) in parts.items():
        head, _, option = key.partition(".")
        if option and head in ("sampler_options", "pruner_options"):  # sweep.optuna.sampler_options.X=v
            options, _ = raw.get(head, ({}, at))
            options = dict(options) if isinstance(options, Mapping) else {}
            options[option] = value
            raw[head] = (options, at)
        else:
            raw[key] = (value, at)
    for key, (_, at) in raw.items():
        if key not in fields:
            problem(
                at, f"unknown optuna setting '{key}'{did_you_mean(key, fields, n=1)} (settings: {', '.join(fields)})"
            )

    def get(key: str) -> tuple[Any, str]:
        return raw.get(key, (None, f"{where}.{key}"))

    sampler = _name(*get("sampler"), SAMPLERS, DEFAULT_SAMPLER, "sampler", problem)
    default_pruner = DEFAULT_PRUNER if n_objectives == 1 else "none"
    pruner = _name(*get("pruner"), PRUNERS, default_pruner, "pruner", problem)
    # Options of a misspelt sampler or pruner are not checked against the default's.
    sampler_options = _options(*get("sampler_options"), sampler, SAMPLERS, "sampler", problem) if sampler else {}
    pruner_options = _options(*get("pruner_options"), pruner, PRUNERS, "pruner", problem) if pruner else {}
    sampler, pruner = sampler or DEFAULT_SAMPLER, pruner or default_pruner
    if n_objectives > 1:
        if sampler in SAMPLERS and not SAMPLERS[sampler].multi_objective:
            several = ", ".join(n for n, p in SAMPLERS.items() if p.multi_objective)
            problem(
                get("sampler")[1],
                f"sampler {sampler} optimizes one objective; for {n_objectives} metrics use {several}",
            )
        if pruner != "none":
            problem(
                get("pruner")[1],
                f"pruner {pruner} needs a single objective (Optuna prunes on one intermediate value); "
                f"there are {n_objectives} metrics: set sweep.optuna.pruner=none or keep one metric",
            )
    storage, at = get("storage")
    if storage is not None:
        if not isinstance(storage, str) or not storage:
            problem(at, f"storage is a URL or a journal file path, got {storage!r}")
            storage = None
        elif "://" in storage:
            scheme = storage.split("://", 1)[0].split("+", 1)[0].lower()
            if scheme not in RDB_SCHEMES:
                problem(
                    at,
                    f"storage scheme '{scheme}' is not supported: give a journal file path (the default, "
                    f"good on shared file systems) or a database URL ({', '.join(s + '://' for s in RDB_SCHEMES)})",
                )
    study_name, at = get("study_name")
    if study_name is not None and (not isinstance(study_name, str) or not study_name):
        problem(at, f"study_name is a non-empty string, got {study_name!r}")
        study_name = None
    return OptunaSettings(
        sampler=sampler,
        sampler_options=sampler_options,
        pruner=pruner,
        pruner_options=pruner_options,
        storage=storage,
        study_name=study_name,
    )


def _name(value: Any, where: str, table: Mapping[str, Part], default: str, what: str, problem: Problem) -> str | None:
    """The canonical name, `default` when unset, None (after reporting it) when unknown."""
    if value is None:
        return default
    name = canonical(value)
    if name in table:
        return name
    problem(
        where,
        f"unknown {what} {value!r}{did_you_mean(name, table, n=1)} ({what}s: {', '.join(table)})",
    )
    return None


def _options(
    value: Any, where: str, name: str, table: Mapping[str, Part], what: str, problem: Problem
) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        problem(where, f"{what}_options is a mapping of option -> value, got {value!r}")
        return {}
    part = table[name]
    out = {}
    for key, option in value.items():
        key = str(key)
        check = part.options.get(key)
        if check is None:
            if key == "seed":
                problem(where, f"the {what}'s seed is the sweep's `seed` (sweep.seed=N), not an option")
            elif key in ("constraints_func", "search_space"):
                problem(where, f"{key} comes from the sweep itself (constraints, parameters), not an option")
            else:
                hint = did_you_mean(key, part.options, n=1)
                known = ", ".join(part.options) or "none"
                problem(where, f"unknown {what} option '{key}' for {name}{hint} (options: {known})")
            continue
        expected = check(option)
        if expected is not None:
            problem(f"{where}.{key}", f"{what} option {key} of {name} is {expected}, got {option!r}")
            continue
        out[key] = option
    return out


# ---- building Optuna's objects ---------------------------------------------------------


def pruner_settings(settings: OptunaSettings) -> PrunerSettings:
    """Optuna's pruner class and arguments the settings name: what a job's launch record carries,
    so that the sweeper's study and every job build the same pruner without this table."""
    part = settings.pruner_part
    return PrunerSettings(part.cls, {**part.defaults, **settings.pruner_options})


def make_pruner(settings: OptunaSettings) -> Any:
    """The pruner the settings name (the sweeper's study and every job build the same one)."""
    return pruner_settings(settings).build()


def make_sampler(settings: OptunaSettings, seed: int | None, grid: Mapping[str, list[Any]] | None = None) -> Any:
    """The sampler the settings name, seeded; `grid`: the search space's values (grid sampler)."""
    import warnings

    import optuna

    part = settings.sampler_part
    cls = getattr(optuna.samplers, part.cls)
    options = {**part.defaults, **settings.sampler_options}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # QMC, GP options: said in the docs
        if settings.sampler == "grid":
            # GridSampler calls study.stop() once the grid is done, which works only inside
            # study.optimize: the sweeper asks and tells itself, and checks is_exhausted.
            ask_tell = type("AskTellGridSampler", (cls,), {"after_trial": lambda self, *args: None})
            return ask_tell(dict(grid or {}), seed=seed)
        return cls(seed=seed, **options)


__all__ = [
    "DEFAULT_PRUNER",
    "DEFAULT_SAMPLER",
    "PRUNERS",
    "SAMPLERS",
    "OptunaSettings",
    "Part",
    "canonical",
    "make_pruner",
    "make_sampler",
    "parse_optuna_settings",
    "pruner_settings",
]
