"""One parameter's definition -> Param, in either of its syntaxes, every problem collected.

In a sweep file (`parameters:`), W&B's shapes:

    trainer.lr: {values: [1e-4, 3e-4]}                 # a grid dimension / a categorical choice
    trainer.lr: {distribution: log_uniform_values, min: 1e-6, max: 1e-3}   # W&B's names and meanings:
    trainer.lr: {distribution: log_uniform, min: -13.8, max: -6.9}          # the same range (exponents)
    rollout.n: 8                                        # fixed (also [4, 8], {value: 8})
    optimizer: {parameters: {lr: ...}}                  # W&B's nested form

or a Hydra sweep expression, in a file (`rollout.n: "choice(4,8)"`) or on the command line
(`key=a,b`, `range`, `glob`, `interval(a,b)`, `tag(log, interval(a,b))`).
Each distribution name means what W&B's documentation says (sweep/distributions.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Glob, IntervalSweep, Override, OverrideType, RangeSweep
from hydra.errors import HydraException

from rllm_sweeps.config.override_values import format_value, parse_value
from rllm_sweeps.config.overrides import config_groups
from rllm_sweeps.config.private_api import config_loader
from rllm_sweeps.config.source import current_source
from rllm_sweeps.override_text import split_prefix
from rllm_sweeps.problems import Problems, did_you_mean
from rllm_sweeps.sweep.distributions import DISTRIBUTIONS, Distribution
from rllm_sweeps.sweep.param import Choice, Param

_PARAM_FIELDS = ("values", "value", "distribution", "min", "max", "q", "step", "parameters", "mu", "sigma")
_MAX_EXPONENT = 700.0  # exp() of more overflows a float
_CHOICE_KINDS = ("categorical", "constant")  # a parameter's values, not a drawn distribution


def legacy_log_uniform(low: float, high: float) -> str:
    """The refusal of a log_uniform whose positive bounds an earlier version read as the values."""
    return (
        f"log_uniform's min and max are natural-log exponents (W&B's meaning): min: {low:g}, max: {high:g} "
        f"means values in [{math.exp(low):.4g}, {math.exp(high):.4g}]; earlier rllm-sweeps read them as the "
        f"values. For values in [{low:g}, {high:g}] write distribution: log_uniform_values (for the exponents' "
        f"range: log_uniform_values with min: {math.exp(low):.4g}, max: {math.exp(high):.4g})"
    )


def is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return (is_integer(value) or isinstance(value, float)) and math.isfinite(value)


def default_config_loader() -> Any:
    """Hydra's config loader over conf/ (what the Hydra app has; for glob() outside it)."""
    return config_loader(current_source())


class ParamParser:
    """Parameters from either syntax; each problem goes to `problem` (naming where it was written)."""

    def __init__(self, problem: Problems) -> None:
        self.problem = problem
        self._groups: set[str] | None = None

    def is_group(self, key: str) -> bool:
        if self._groups is None:
            self._groups = config_groups()
        return "/" in key or key in self._groups

    # -- a sweep file's entry -----------------------------------------------------------

    def file_params(self, key: str, entry: Any, where: str) -> list[Param]:
        """A sweep file's `parameters.KEY` entry: one parameter (several for W&B's nested form)."""
        prefix, key = split_prefix(key)
        if prefix not in ("", "+", "++"):  # a delete (~) is no parameter
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
                param = self.from_override(o, where)
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
                both_int = is_integer(entry.get("min")) and is_integer(entry.get("max"))
                dist = "int_uniform" if both_int else "uniform"  # W&B infers it the same way
            else:
                self.problem(where, "needs values: [...], value: x, or distribution: ... with min/max")
                return []
        if dist == "constant":
            choice = self.choice(entry.get("value"), where + ".value") if "value" in entry else None
            if "value" not in entry:
                self.problem(where, "distribution constant needs value: x")
            return [Param(kind="value", choices=(choice,), **common)] if choice else []
        if dist == "categorical":
            choices = self.choices(entry.get("values"), where + ".values")
            return [Param(kind="values", choices=choices, **common)] if choices else []
        drawn = DISTRIBUTIONS.get(str(dist))
        if drawn is None:
            known = (*DISTRIBUTIONS, *_CHOICE_KINDS)
            self.problem(
                where, f"unknown distribution {dist!r}{did_you_mean(str(dist), known)} (known: {', '.join(known)})"
            )
            return []
        if "q" in entry and "step" in entry:
            self.problem(where, "q and step are the same thing: give one")
        step = entry.get("q", entry.get("step"))
        if drawn.shape == "normal":
            return self.normal(drawn, entry, step, where, common)
        low, high = entry.get("min"), entry.get("max")
        if not self.check_bounds(where, drawn.name, low, high, step, drawn):
            return []
        return [
            Param(kind="distribution", distribution=drawn.name, low=low, high=high, step=step, log=drawn.log, **common)
        ]

    def normal(
        self, drawn: Distribution, entry: Mapping[str, Any], step: Any, where: str, common: dict[str, Any]
    ) -> list[Param]:
        """W&B's normal family: mu (default 0), sigma (default 1), q (default 1) for the quantized ones."""
        ok = True
        for name in ("min", "max"):
            if name in entry:
                self.problem(where, f"{drawn.name} takes mu and sigma (W&B's normal family), not {name}")
                ok = False
        mu, sigma = entry.get("mu"), entry.get("sigma")
        if mu is not None and not is_number(mu):
            self.problem(where, f"mu of {drawn.name} is a number, got {mu!r}")
            ok = False
        if sigma is not None and not (is_number(sigma) and sigma > 0):
            self.problem(where, f"sigma of {drawn.name} is a number > 0, got {sigma!r}")
            ok = False
        if step is not None and not drawn.quantized:
            self.problem(where, f"{drawn.name} takes no q (q_{drawn.name} rounds to multiples of q)")
            ok = False
        if step is not None and not (is_number(step) and step > 0):
            self.problem(where, f"q of {drawn.name} is a number > 0, got {step!r}")
            ok = False
        if not ok:
            return []
        return [
            Param(kind="distribution", distribution=drawn.name, step=step, mu=mu, sigma=sigma, log=drawn.log, **common)
        ]

    def check_bounds(self, where: str, name: str, low: Any, high: Any, step: Any, drawn: Distribution) -> bool:
        """min/max (and q/step) of a range distribution, read as `drawn` reads them."""
        is_int = drawn.integer
        ok = True
        for label, bound in (("min", low), ("max", high)):
            if bound is None:
                self.problem(where, f"{name} needs {label}")
                ok = False
            elif not is_number(bound) or (is_int and not is_integer(bound)):
                self.problem(where, f"{label} of {name} is {'an integer' if is_int else 'a number'}, got {bound!r}")
                ok = False
        if not ok:
            return False
        if low >= high:
            self.problem(where, f"min ({low}) must be below max ({high})")
            return False
        if drawn.bounds != "values":
            if max(abs(low), abs(high)) > _MAX_EXPONENT:
                self.problem(where, f"{name}: min and max are natural-log exponents; exp({high:g}) is out of range")
                return False
            if name == "log_uniform" and low > 0:
                # Before issue 52 this project read log_uniform's bounds as the values: refuse rather
                # than silently sweep another range.
                self.problem(where, legacy_log_uniform(low, high))
                return False
        elif drawn.log and low <= 0:
            self.problem(
                where,
                f"{name} needs min > 0, got min={low} (min and max are the values themselves; "
                "for natural-log exponents, as in W&B's fastai example, write distribution: log_uniform)",
            )
            return False
        if step is not None:
            if not is_number(step) or step <= 0 or (is_int and not is_integer(step)):
                self.problem(where, f"q/step of {name} is a positive {'integer' if is_int else 'number'}, got {step!r}")
                return False
            if drawn.log and not drawn.quantized:
                self.problem(where, f"{name} with q/step: Optuna has no stepped log distribution (q_{name} rounds)")
                return False
            if not drawn.quantized:  # int_uniform's step: Optuna's IntDistribution steps from min
                ratio = (high - low) / step
                if abs(ratio - round(ratio)) > 1e-9 * max(1.0, abs(ratio)):
                    self.problem(where, f"max - min ({high - low:g}) must be a multiple of step ({step:g})")
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

    # -- a Hydra override ----------------------------------------------------------------

    def from_override(self, o: Override, where: str) -> Param | None:
        """A sweep override (`key=a,b`, `range(...)`, `interval(...)`, ...) as a parameter."""
        prefix = "+" if o.type == OverrideType.ADD else "++" if o.type == OverrideType.FORCE_ADD else ""
        common = {
            "key": o.key_or_group,
            "source": where,
            "prefix": prefix,
            "package": o.package,
            "is_group": self.is_group(o.key_or_group),
        }
        if o.is_discrete_sweep():
            if isinstance(o.value(), Glob) and o.config_loader is None:
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
            sweep = o.value()
            if isinstance(sweep, RangeSweep) and not sweep.shuffle and all(is_integer(c.value) for c in choices):
                int_range = (choices[0].value, choices[-1].value, int(sweep.step))
            return Param(kind="values", choices=choices, int_range=int_range, **common)
        if o.is_interval_sweep():
            sweep = o.value()
            assert isinstance(sweep, IntervalSweep)
            log, is_int = "log" in sweep.tags, "int" in sweep.tags
            unknown = set(sweep.tags) - {"log", "int"}
            if unknown:
                self.problem(where, f"unknown tag(s) {sorted(unknown)}: use tag(log, ...) and/or tag(int, ...)")
            # Hydra's (and hydra-optuna-sweeper's) tag(log, ...) takes the values themselves
            name = (
                "int_log_uniform"
                if is_int and log
                else "int_uniform"
                if is_int
                else "log_uniform_values"
                if log
                else "uniform"
            )
            low, high = sweep.start, sweep.end
            if is_int:
                if not (float(low).is_integer() and float(high).is_integer()):
                    self.problem(where, f"tag(int, interval({low}, {high})) needs integer bounds")
                    return None
                low, high = int(low), int(high)
            if not self.check_bounds(where, name, low, high, None, DISTRIBUTIONS[name]):
                return None
            return Param(kind="distribution", distribution=name, low=low, high=high, log=log, **common)
        self.problem(where, f"unsupported sweep {o.value_type}")
        return None

    def fixed_from_override(self, o: Override, where: str) -> Param:
        """A plain override (`key=value`) of a key the sweep sweeps elsewhere: a fixed parameter."""
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
