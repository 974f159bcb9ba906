"""The sweep spec: what to search, from a sweep file and/or the command line.

A sweep file (conf/sweep/NAME.yaml, selected with `+sweep=NAME`) is the `sweep` node of
the config, in the shape of a W&B sweep file plus what W&B lacks:

    method: grid                      # grid | random | optuna
    metric: {name: val_reward_mean, goal: maximize}
    parameters:
      trainer.lr: {values: [1e-4, 3e-4]}
      rollout.n: "choice(4,8)"        # a Hydra sweep expression works too
    zip: [[model.path, data.train_batch_size]]
    seeds: 3
    constraints: ["rollout.n * data.train_batch_size <= 512"]

On the command line, Hydra's sweep syntax keeps its meaning (`key=a,b`, `choice`,
`range`, `glob`, `sort`, `shuffle` are grid dimensions; `interval(a,b)`,
`tag(log, interval(a,b))` distributions for sampling methods) and `sweep.KEY=VALUE` sets
the sweep's own settings. The command line wins over the file, key by key.

Every problem is collected and reported at once, each naming the file and key or the
override it came from (`SweepError`, a `ConfigError`).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Glob, IntervalSweep, Override, OverrideType, RangeSweep
from hydra.errors import HydraException
from omegaconf import OmegaConf

from rllm_sweeps.config.compose import CONF_DIR
from rllm_sweeps.config.overrides import config_groups
from rllm_sweeps.config.rules import path_name
from rllm_sweeps.config.spelling import canonical_key, canonical_overrides, canonical_sweep_node
from rllm_sweeps.config.validate import ConfigError, ConfigIssue
from rllm_sweeps.results import (
    DEFAULT_GOAL,
    DEFAULT_METRIC,
    EPISODE_METRICS,
    VALIDATION_METRICS,
    canonical_metric,
    is_validation_metric,
)
from rllm_sweeps.sweep.constraints import Constraint, ConstraintSyntaxError
from rllm_sweeps.sweep.optuna_settings import OptunaSettings, parse_optuna_settings
from rllm_sweeps.sweep.values import format_value, parse_value
from rllm_sweeps.sweep.wandb_fields import translate_wandb_fields

METHODS = ("grid", "random", "optuna")
SAMPLING_METHODS = ("random", "optuna")
GOALS = ("maximize", "minimize")
SEED_KEY = "trainer.seed"
SWEEP_DIR = CONF_DIR / "sweep"
SWEEP_GROUP = "sweep"

# Distribution names (W&B's, where W&B has them) -> (kind, log). `log_uniform` takes the
# values themselves (W&B's `log_uniform_values`); W&B's exponent form is not supported.
DISTRIBUTIONS: dict[str, tuple[str, bool]] = {
    "uniform": ("float", False),
    "log_uniform": ("float", True),
    "log_uniform_values": ("float", True),
    "q_uniform": ("float", False),
    "int_uniform": ("int", False),
    "int_log_uniform": ("int", True),
    "categorical": ("categorical", False),
    "constant": ("constant", False),
}
_NO_NORMAL = (
    "normal",
    "q_normal",
    "log_normal",
    "q_log_normal",
    "q_log_uniform",
    "q_log_uniform_values",
    "inv_log_uniform",
    "inv_log_uniform_values",
)
_PARAM_FIELDS = ("values", "value", "distribution", "min", "max", "q", "step", "parameters", "mu", "sigma")
_SPEC_FIELDS = (
    "method",
    "metric",
    "parameters",
    "zip",
    "seeds",
    "seed_key",
    "constraints",
    "budget",
    "run_cap",
    "parallel",
    "seed",
    "name",
    "description",
    "optuna",
)


class SweepError(ConfigError):
    """A sweep that must not run; `issues` lists every problem, each naming its source."""

    def __str__(self) -> str:
        head = f"Invalid sweep{' (' + self.where + ')' if self.where else ''}"
        if len(self.issues) == 1:
            return f"{head}: {self.issues[0]}"
        return f"{head}, {len(self.issues)} problems:\n" + "\n".join(f"  - {i}" for i in self.issues)


@dataclass(frozen=True)
class Metric:
    name: str = DEFAULT_METRIC
    goal: str = DEFAULT_GOAL


@dataclass(frozen=True)
class Choice:
    """One value of a parameter: as typed (what the job's config gets) and as written in an override."""

    value: Any
    text: str


@dataclass(frozen=True)
class Param:
    """One swept (or fixed) key.

    kind: "value" (fixed: every job gets it), "values" (a grid dimension; a categorical
    choice for sampling methods) or "distribution" (sampling methods only).
    """

    key: str  # the config key (or config group, for group choices such as task=...)
    source: str  # where it was given, for messages: "conf/sweep/x.yaml: parameters.trainer.lr"
    kind: str
    choices: tuple[Choice, ...] = ()  # kind value: one; kind values: the values, in order
    distribution: str | None = None  # kind distribution: uniform | log_uniform | int_uniform | ...
    low: float | int | None = None
    high: float | int | None = None  # inclusive, as in W&B and Optuna
    step: float | int | None = None
    log: bool = False
    int_range: tuple[int, int, int] | None = None  # kind values from range(): (first, last, step)
    prefix: str = ""  # Hydra's + / ++ (add a key the config lacks)
    package: str | None = None  # group@package
    is_group: bool = False  # a config-group choice (task=...), composed by Hydra

    @property
    def key_element(self) -> str:
        """The left side of `=`, as Hydra writes it."""
        return self.prefix + self.key + (f"@{self.package}" if self.package else "")

    def override(self, choice: Choice) -> str:
        return f"{self.key_element}={choice.text}"

    def optuna_distribution(self) -> Any:
        """This parameter as an Optuna distribution (sampling methods; the Optuna sweeper reuses it)."""
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        if self.kind == "distribution":
            if self.distribution in ("int_uniform", "int_log_uniform"):
                return IntDistribution(int(self.low), int(self.high), log=self.log, step=int(self.step or 1))
            return FloatDistribution(float(self.low), float(self.high), log=self.log, step=self.step)
        if self.int_range is not None:
            first, last, step = self.int_range
            return IntDistribution(min(first, last), max(first, last), step=abs(step))
        return CategoricalDistribution(categorical_choices(self.choices))

    def choice_for(self, sampled: Any) -> Choice:
        """The Choice of a value sampled from `optuna_distribution()`."""
        if self.kind == "values" and self.int_range is None:
            dist = self.optuna_distribution()
            return self.choices[int(dist.to_internal_repr(sampled))]
        if self.distribution in ("int_uniform", "int_log_uniform") or self.int_range is not None:
            sampled = int(sampled)
        return Choice(sampled, format_value(sampled))

    def to_dict(self) -> Any:
        """The DSL form (sweep-file syntax) of this parameter."""
        if self.kind == "value":
            return {"value": self.choices[0].value}
        if self.kind == "values":
            if self.int_range is not None:
                first, last, step = self.int_range
                return f"range({first},{last + step},{step})"
            return {"values": [c.value for c in self.choices]}
        out: dict[str, Any] = {"distribution": self.distribution, "min": self.low, "max": self.high}
        if self.step is not None:
            out["step"] = self.step
        return out


def categorical_choices(choices: Sequence[Choice]) -> tuple[Any, ...]:
    """Optuna's categorical choices: the values when they are all plain scalars, else their texts."""
    values = [c.value for c in choices]
    if all(v is None or isinstance(v, bool | int | float | str) for v in values):
        return tuple(values)
    return tuple(c.text for c in choices)


@dataclass(frozen=True)
class SweepSpec:
    """A parsed, checked sweep. Build with `SweepSpec.from_dict` or `parse_sweep`."""

    method: str = "grid"
    metric: tuple[Metric, ...] = (Metric(),)
    parameters: tuple[Param, ...] = ()
    zip: tuple[tuple[str, ...], ...] = ()
    seeds: tuple[int, ...] | None = None  # replicates of every point on seed_key; None = config's seed
    seed_key: str = SEED_KEY
    constraints: tuple[Constraint, ...] = ()
    budget: int | None = None  # number of JOBS (points x seeds); sampling methods need it
    parallel: int = 1  # jobs in flight
    seed: int = 0  # the sweep's own seed: a random sweep is reproducible
    name: str | None = None
    optuna: OptunaSettings | None = None  # method optuna: sampler, pruner, storage, study name
    source: str = "command line"  # the sweep file, or "command line"
    notes: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "sweep") -> SweepSpec:
        """Parse the `sweep:` node (a sweep file's content). Raises SweepError."""
        builder = _Builder()
        spec = builder.build(data, source, {}, [])
        builder.raise_if_any()
        return spec

    def param(self, key: str) -> Param:
        return next(p for p in self.parameters if p.key == key)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(p.key for p in self.parameters)

    @property
    def n_seeds(self) -> int:
        return len(self.seeds) if self.seeds else 1

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
        return out


@dataclass(frozen=True)
class SweepRequest:
    """A command line taken apart: the spec, and the overrides every job gets."""

    spec: SweepSpec
    base_overrides: tuple[str, ...]  # non-swept overrides (hydra.* ones included), in order
    sweep_file: Path | None = None


# ---- entry points ----------------------------------------------------------------------


def is_sweep_file_path(name: str) -> bool:
    """`+sweep=X` names a file by path (X ends in .yaml or .yml), not the option conf/sweep/X."""
    return name.endswith((".yaml", ".yml"))


def sweep_file_path(name: str) -> Path:
    """conf/sweep/NAME.yaml, or NAME itself when it is a path to a YAML file."""
    return Path(name) if is_sweep_file_path(name) else SWEEP_DIR / f"{name}.yaml"


def load_sweep_file(path: Path) -> dict[str, Any]:
    """A sweep file's `sweep` node. The file is the node itself (Hydra's default package
    for the `sweep` group); a file written `# @package _global_` with one top-level
    `sweep:` key is accepted too."""
    data = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    if not isinstance(data, dict):
        raise SweepError([ConfigIssue(str(path), f"{display(path)}: a sweep file is a mapping, got {data!r}")])
    if set(data) == {"sweep"} and isinstance(data["sweep"], dict):
        data = data["sweep"]
    return data


def parse_sweep(
    overrides: Iterable[str],
    *,
    sweep_file: str | Path | None = None,
    params: Mapping[str, str] | None = None,
    config_loader: Any = None,
) -> SweepRequest:
    """Take a command line (train.py's overrides) apart into a sweep spec and base overrides.

    `+sweep=NAME` (or `sweep_file`) selects a sweep file; `sweep.KEY=VALUE` sets a sweep
    setting; sweep overrides (`key=a,b`, `range(...)`, `interval(...)`, ...) and
    overrides of keys the file sweeps become parameters; everything else is a base
    override that every job gets. `params` is Hydra's `hydra.sweeper.params` (key ->
    expression), weaker than the command line. `config_loader` expands `glob(...)` over
    config-group options (Hydra's, in the sweeper plugin; one is made when needed).
    Raises SweepError listing every problem.
    """
    builder = _Builder()
    request = builder.parse_command_line(list(overrides), sweep_file, params or {}, config_loader)
    builder.raise_if_any()
    return request


def parse_sweep_lenient(
    overrides: Iterable[str],
    *,
    sweep_file: str | Path | None = None,
    params: Mapping[str, str] | None = None,
    config_loader: Any = None,
) -> tuple[SweepRequest, list[ConfigIssue]]:
    """As parse_sweep, but returns the problems with what could be parsed (the planner adds
    the problems only a composed config shows, and reports all of them together)."""
    builder = _Builder()
    request = builder.parse_command_line(list(overrides), sweep_file, params or {}, config_loader)
    return request, builder.issues


def display(path: Path | str) -> str:
    """A path as short as it can be said: relative to the working directory or the repo."""
    path = Path(path).resolve()
    for root in (Path.cwd(), CONF_DIR.parent):
        try:
            return str(path.relative_to(root))
        except ValueError:
            continue
    return str(path)


def default_config_loader() -> Any:
    """Hydra's config loader over conf/ (what the Hydra app has; for glob() outside it)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_config_search_path

    return ConfigLoaderImpl(config_search_path=create_config_search_path(str(CONF_DIR)))


def did_you_mean(word: str, known: Iterable[str]) -> str:
    matches = difflib.get_close_matches(word, list(known), n=2, cutoff=0.6)
    return "; did you mean " + " or ".join(f"'{m}'" for m in matches) + "?" if matches else ""


# ---- the builder -----------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


class _Builder:
    """Parses and checks, collecting every problem instead of stopping at the first."""

    def __init__(self) -> None:
        self.issues: list[ConfigIssue] = []
        self.notes: list[str] = []
        self._groups: set[str] | None = None

    def problem(self, where: str, message: str) -> None:
        self.issues.append(ConfigIssue(where, f"{where}: {message}"))

    def raise_if_any(self) -> None:
        if self.issues:
            raise SweepError(self.issues)

    def is_group(self, key: str) -> bool:
        if self._groups is None:
            self._groups = config_groups()
        return "/" in key or key in self._groups

    # -- the command line --------------------------------------------------------------

    def parse_command_line(
        self,
        overrides: list[str],
        sweep_file: str | Path | None,
        params: Mapping[str, str],
        config_loader: Any,
    ) -> SweepRequest:
        overrides = canonical_overrides(overrides)  # rLLM's and SkyRL's spellings (config/spelling.py)
        params = {canonical_key(k): v for k, v in params.items()}
        parser = OverridesParser.create(config_loader=config_loader)
        parsed: list[tuple[Override, str]] = []  # (override, where it came from)
        for i, line in enumerate([f"{k}={v}" for k, v in params.items()] + overrides):
            where = f"hydra.sweeper.params.{line.split('=', 1)[0]}" if i < len(params) else f"override '{line}'"
            try:
                parsed.append((parser.parse_override(line), where))
            except HydraException as err:
                self.problem(where, f"not a Hydra override: {err}")

        # 1. The sweep file (+sweep=NAME) and the sweep's settings (sweep.KEY=VALUE).
        file_path = Path(sweep_file) if sweep_file is not None else None
        settings: dict[str, tuple[Any, str]] = {}
        rest: list[tuple[Override, str]] = []
        for o, where in parsed:
            key = o.key_or_group
            if key == SWEEP_GROUP and not o.is_delete():
                if o.is_sweep_override():
                    self.problem(where, "select one sweep file")
                else:
                    file_path = sweep_file_path(str(o.value()))
            elif key.startswith(SWEEP_GROUP + "."):
                setting = key[len(SWEEP_GROUP) + 1 :]
                if o.is_sweep_override():
                    self.problem(where, f"sweep.{setting} takes one value, not a sweep")
                elif "." in setting and not setting.startswith(("metric.", "optuna.")):
                    self.problem(where, f"set parameters as KEY=VALUES on the command line, not sweep.{setting}")
                else:
                    settings[setting] = (o.value(), where)
            else:
                rest.append((o, where))
        data: dict[str, Any] = {}
        source = "command line"
        if file_path is not None:
            source = display(file_path)
            if not file_path.is_file():
                options = sorted(p.stem for p in SWEEP_DIR.glob("*.yaml"))
                hint = did_you_mean(file_path.stem, options) or f" (sweep files: {', '.join(options) or 'none'})"
                self.problem(f"+sweep={file_path.stem}", f"no sweep file {display(file_path)}{hint}")
            else:
                try:
                    data = canonical_sweep_node(load_sweep_file(file_path))
                except SweepError as err:
                    self.issues += err.issues
                except Exception as err:  # YAML syntax
                    self.problem(source, f"cannot read the sweep file: {err}")
        file_params = data.get("parameters") if isinstance(data, dict) else None
        file_keys = {str(k).lstrip("+") for k in file_params} if isinstance(file_params, Mapping) else set()
        seed_key = settings.get("seed_key", (None, ""))[0] or data.get("seed_key") or SEED_KEY
        seeds_set = data.get("seeds") is not None or settings.get("seeds", (None, ""))[0] is not None

        # 2. Sweeps and overrides of swept keys are parameters; the rest is every job's base.
        # The last override of a key wins (as in Hydra's BasicSweeper).
        cli_params: dict[str, Param] = {}
        base: list[tuple[str, str]] = []  # (key, override)
        for o, where in rest:
            key = o.key_or_group
            if o.is_hydra_override() or o.is_delete():
                base.append((key, o.input_line))
            elif o.is_sweep_override():
                param = self.param_from_override(o, where)
                if param is not None:
                    base = [b for b in base if b[0] != key]
                    cli_params[key] = param
            elif key in file_keys or key in cli_params or (key == seed_key and seeds_set):
                if key == seed_key and settings.get("seeds", (None, ""))[0] is not None:
                    self.problem(where, f"{key} is fixed here and replicated by {settings['seeds'][1]}: keep one")
                    continue
                cli_params[key] = self.fixed_from_override(o, where)
            else:
                base = [b for b in base if b[0] != key]
                base.append((key, o.input_line))
        spec = self.build(data, source, settings, list(cli_params.values()))
        return SweepRequest(spec=spec, base_overrides=tuple(line for _, line in base), sweep_file=file_path)

    def param_from_override(self, o: Override, where: str) -> Param | None:
        prefix = "+" if o.type == OverrideType.ADD else "++" if o.type == OverrideType.FORCE_ADD else ""
        common = {
            "key": o.key_or_group,
            "source": where,
            "prefix": prefix,
            "package": o.package,
            "is_group": self.is_group(o.key_or_group),
        }
        if o.is_discrete_sweep():
            if isinstance(o._value, Glob) and o.config_loader is None:
                o.config_loader = default_config_loader()  # glob() lists the group's options
            try:
                texts = list(o.sweep_string_iterator())
            except HydraException as err:
                self.problem(where, str(err))
                return None
            choices = tuple(Choice(parse_value(t), t) for t in texts)
            if not choices:
                self.problem(where, "the sweep has no values")
                return None
            int_range = None
            sweep = o._value
            if isinstance(sweep, RangeSweep) and not sweep.shuffle and all(_is_int(c.value) for c in choices):
                int_range = (choices[0].value, choices[-1].value, int(sweep.step))
            return Param(kind="values", choices=choices, int_range=int_range, **common)
        if o.is_interval_sweep():
            sweep = o._value
            assert isinstance(sweep, IntervalSweep)
            log, is_int = "log" in sweep.tags, "int" in sweep.tags
            unknown = set(sweep.tags) - {"log", "int"}
            if unknown:
                self.problem(where, f"unknown tag(s) {sorted(unknown)}: use tag(log, ...) and/or tag(int, ...)")
            name = ("int_" if is_int else "") + ("log_uniform" if log else "uniform")
            low, high = sweep.start, sweep.end
            if is_int:
                if not (float(low).is_integer() and float(high).is_integer()):
                    self.problem(where, f"tag(int, interval({low}, {high})) needs integer bounds")
                    return None
                low, high = int(low), int(high)
            if not self.check_bounds(where, name, low, high, None, log):
                return None
            return Param(kind="distribution", distribution=name, low=low, high=high, log=log, **common)
        self.problem(where, f"unsupported sweep {o.value_type}")
        return None

    def fixed_from_override(self, o: Override, where: str) -> Param:
        prefix = "+" if o.type == OverrideType.ADD else "++" if o.type == OverrideType.FORCE_ADD else ""
        choice = Choice(o.value(), o.get_value_element_as_str())
        return Param(
            key=o.key_or_group,
            source=where,
            kind="value",
            choices=(choice,),
            prefix=prefix,
            package=o.package,
            is_group=self.is_group(o.key_or_group),
        )

    # -- the sweep node ----------------------------------------------------------------

    def build(
        self,
        data: Mapping[str, Any],
        source: str,
        settings: Mapping[str, tuple[Any, str]],
        cli_params: list[Param],
    ) -> SweepSpec:
        """The spec from the file's node, the command line's settings and its parameters."""
        if not isinstance(data, Mapping):
            self.problem(source, f"a sweep is a mapping, got {data!r}")
            data = {}
        data = translate_wandb_fields(data, source, self.problem, self.notes.append)  # W&B's own fields
        raw: dict[str, tuple[Any, str]] = {k: (v, f"{source}: {k}") for k, v in data.items()}
        metric_parts: dict[str, tuple[Any, str]] = {}
        optuna_parts: dict[str, tuple[Any, str]] = {}
        for key, (value, where) in settings.items():
            if key.startswith("metric."):
                metric_parts[key[len("metric.") :]] = (value, where)
            elif key.startswith("optuna."):
                optuna_parts[key[len("optuna.") :]] = (value, where)
            else:
                raw[key] = (value, where)
        for key, (_, where) in raw.items():
            if key not in _SPEC_FIELDS:
                self.problem(where, f"unknown sweep setting '{key}'{did_you_mean(key, _SPEC_FIELDS)}")

        def get(key: str, default: Any = None) -> tuple[Any, str]:
            # null means "not set" (conf/config.yaml declares every setting as null)
            value, where = raw.get(key, (None, f"{source}: {key}"))
            return (default if value is None else value), where

        method, where = get("method", "grid")
        if method not in METHODS:
            self.problem(where, f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
            method = "grid"
        metric = self.metrics(*get("metric"), metric_parts)
        seed_key, where = get("seed_key", SEED_KEY)
        if not isinstance(seed_key, str) or not seed_key:
            self.problem(where, f"seed_key is a config key, got {seed_key!r}")
            seed_key = SEED_KEY

        params: dict[str, Param] = {}
        file_params, where = get("parameters", {})
        if file_params is None:
            file_params = {}
        if not isinstance(file_params, Mapping):
            self.problem(where, f"parameters is a mapping of key -> definition, got {file_params!r}")
            file_params = {}
        for key, entry in file_params.items():
            for param in self.file_params(str(key), entry, f"{source}: parameters.{key}"):
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
                if all(_is_int(c.value) and c.value >= 0 for c in p.choices):
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
        budget = self.positive_int(budget, budget_where, "budget", allow_none=True)
        parallel = self.positive_int(*get("parallel", 1), "parallel")
        seed, where = get("seed", 0)
        if not _is_int(seed):
            self.problem(where, f"seed (the sweep's random seed) is an integer, got {seed!r}")
            seed = 0
        name, name_where = get("name")
        if name is not None and (bad := path_name(str(name))):
            self.problem(name_where, f"name {name!r} names the sweep's directory (multirun/PROJECT/NAME-ID): {bad}")
            name = None

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
            self.problem(f"{source}: budget", f"method {method} needs a budget (the number of jobs to run)")
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
        return SweepSpec(
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
            source=source,
            notes=tuple(self.notes),
        )

    def metrics(self, value: Any, where: str, parts: Mapping[str, tuple[Any, str]]) -> tuple[Metric, ...]:
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
        return tuple(metrics) or (Metric(),)

    def file_params(self, key: str, entry: Any, where: str) -> list[Param]:
        prefix = key[: len(key) - len(key.lstrip("+"))]
        key = key.lstrip("+")
        if prefix not in ("", "+", "++"):
            self.problem(where, f"'{prefix}' is not a Hydra prefix (+ adds a key, ++ adds or overrides)")
            prefix = ""
        common = {"key": key, "source": where, "prefix": prefix, "is_group": self.is_group(key)}
        if isinstance(entry, str):  # a Hydra sweep expression, as in hydra.sweeper.params
            try:
                o = OverridesParser.create().parse_override(f"{prefix}{key}={entry}")
            except HydraException as err:
                self.problem(where, f"{entry!r} is not a Hydra value or sweep: {err}")
                return []
            if o.is_sweep_override():
                param = self.param_from_override(o, where)
                return [param] if param else []
            return [replace(self.fixed_from_override(o, where), source=where)]
        if isinstance(entry, list):
            choices = self.choices(entry, where)
            return [Param(kind="values", choices=choices, **common)] if choices else []
        if not isinstance(entry, Mapping):
            choice = self.choice(entry, where)
            return [Param(kind="value", choices=(choice,), **common)] if choice else []
        for name in entry:
            if name not in _PARAM_FIELDS:
                hint = did_you_mean(str(name), _PARAM_FIELDS)
                self.problem(where, f"unknown field '{name}'{hint} (fields: {', '.join(_PARAM_FIELDS)})")
        if "parameters" in entry:  # W&B's nested form: optimizer: {parameters: {lr: ...}}
            nested = entry["parameters"]
            if not isinstance(nested, Mapping) or len(entry) != 1:
                self.problem(where, "nested parameters: {parameters: {subkey: definition, ...}} and nothing else")
                return []
            out: list[Param] = []
            for sub, sub_entry in nested.items():
                out += self.file_params(f"{prefix}{key}.{sub}", sub_entry, f"{where}.parameters.{sub}")
            return out
        dist = entry.get("distribution")
        if dist is None:
            if "value" in entry and "values" in entry:
                self.problem(where, "give value (fixed) or values (swept), not both")
                return []
            if "value" in entry:
                choice = self.choice(entry["value"], where + ".value")
                return [Param(kind="value", choices=(choice,), **common)] if choice else []
            if "values" in entry:
                choices = self.choices(entry["values"], where + ".values")
                return [Param(kind="values", choices=choices, **common)] if choices else []
            if "min" in entry or "max" in entry:
                both_int = _is_int(entry.get("min")) and _is_int(entry.get("max"))
                dist = "int_uniform" if both_int else "uniform"  # W&B infers it the same way
            else:
                self.problem(where, "needs values: [...], value: x, or distribution: ... with min/max")
                return []
        if dist not in DISTRIBUTIONS:
            if dist in _NO_NORMAL:
                why = "Optuna, which samples random and optuna sweeps, has no such distribution"
            else:
                why = f"supported: {', '.join(DISTRIBUTIONS)}{did_you_mean(str(dist), DISTRIBUTIONS)}"
            self.problem(where, f"unknown distribution {dist!r} ({why})")
            return []
        kind, log = DISTRIBUTIONS[dist]
        name = "log_uniform" if dist == "log_uniform_values" else dist
        if kind == "constant":
            choice = self.choice(entry.get("value"), where + ".value") if "value" in entry else None
            if "value" not in entry:
                self.problem(where, "distribution constant needs value: x")
            return [Param(kind="value", choices=(choice,), **common)] if choice else []
        if kind == "categorical":
            choices = self.choices(entry.get("values"), where + ".values")
            return [Param(kind="values", choices=choices, **common)] if choices else []
        low, high = entry.get("min"), entry.get("max")
        step = entry.get("q", entry.get("step"))
        if "q" in entry and "step" in entry:
            self.problem(where, "q and step are the same thing: give one")
        if dist == "q_uniform" and step is None:
            self.problem(where, "q_uniform needs q (the step)")
            return []
        if not self.check_bounds(where, name, low, high, step, log, is_int=kind == "int"):
            return []
        return [Param(kind="distribution", distribution=name, low=low, high=high, step=step, log=log, **common)]

    def check_bounds(
        self, where: str, name: str, low: Any, high: Any, step: Any, log: bool, is_int: bool | None = None
    ) -> bool:
        is_int = name.startswith("int_") if is_int is None else is_int
        ok = True
        for label, bound in (("min", low), ("max", high)):
            if bound is None:
                self.problem(where, f"{name} needs {label}")
                ok = False
            elif not _is_number(bound) or (is_int and not _is_int(bound)):
                self.problem(where, f"{label} of {name} is {'an integer' if is_int else 'a number'}, got {bound!r}")
                ok = False
        if not ok:
            return False
        if low >= high:
            self.problem(where, f"min ({low}) must be below max ({high})")
            return False
        if log and low <= 0:
            self.problem(
                where,
                f"{name} needs min > 0, got min={low} (min and max are the values themselves, "
                "as in W&B's log_uniform_values; write min: 1e-6, not an exponent)",
            )
            return False
        if step is not None:
            if not _is_number(step) or step <= 0 or (is_int and not _is_int(step)):
                self.problem(where, f"q/step of {name} is a positive {'integer' if is_int else 'number'}, got {step!r}")
                return False
            if log:
                self.problem(where, f"{name} with q/step: Optuna has no stepped log distribution")
                return False
            ratio = (high - low) / step
            if abs(ratio - round(ratio)) > 1e-9 * max(1.0, abs(ratio)):
                self.problem(where, f"max - min ({high - low:g}) must be a multiple of q/step ({step:g})")
                return False
        return True

    def choice(self, value: Any, where: str) -> Choice | None:
        try:
            text = format_value(value)
        except ValueError as err:
            self.problem(where, str(err))
            return None
        return Choice(value, text)

    def choices(self, values: Any, where: str) -> tuple[Choice, ...]:
        if not isinstance(values, list) or not values:
            self.problem(where, f"values is a non-empty list, got {values!r}")
            return ()
        out = tuple(self.choice(v, f"{where}[{i}]") for i, v in enumerate(values))
        return tuple(c for c in out if c is not None)

    def seeds(self, value: Any, where: str) -> tuple[int, ...] | None:
        if value is None:
            return None
        if _is_int(value):
            if value < 1:
                self.problem(where, f"seeds: N (a number of replicates >= 1) or a list of seeds, got {value}")
                return None
            return tuple(range(value))
        if isinstance(value, list) and value and all(_is_int(v) and v >= 0 for v in value):
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
            keys = tuple(str(k).lstrip("+") for k in group)
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

    def positive_int(self, value: Any, where: str, name: str, allow_none: bool = False) -> Any:
        if value is None and allow_none:
            return None
        if not _is_int(value) or value < 1:
            self.problem(where, f"{name} is an integer >= 1, got {value!r}")
            return None if allow_none else 1
        return value
