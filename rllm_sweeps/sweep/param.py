"""One parameter of a sweep: a swept or fixed key and its choices (sweep/spec.py's building block).

A parameter is written in a sweep file (parse_param.py reads both of its syntaxes: a file
entry and a Hydra sweep expression), becomes a grid dimension or a sampled distribution
(space.py), and each of its choices becomes an override of a job's command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rllm_sweeps.config.override_values import format_value
from rllm_sweeps.sweep.distributions import DISTRIBUTIONS, Distribution


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
    distribution: str | None = None  # kind distribution: a name of sweep/distributions.py's table (W&B's)
    low: float | int | None = None  # min and max as written (log_uniform: exponents)
    high: float | int | None = None  # inclusive, as in W&B and Optuna
    step: float | int | None = None  # q (q_*) or int_uniform's step
    mu: float | None = None  # W&B's normal family (None: W&B's defaults, 0 and 1)
    sigma: float | None = None
    log: bool = False
    int_range: tuple[int, int, int] | None = None  # kind values from range(): (first, last, step)
    prefix: str = ""  # Hydra's + / ++ (add a key the config lacks)
    package: str | None = None  # group@package
    is_group: bool = False  # a config-group choice (task=...), composed by Hydra

    @property
    def is_swept(self) -> bool:
        """Whether its value varies from point to point: several values (a grid dimension, a zip, a
        categorical choice) or a distribution; never a fixed value, nor a list of one."""
        return self.kind == "distribution" or (self.kind == "values" and len(self.choices) > 1)

    @property
    def key_element(self) -> str:
        """The left side of `=`, as Hydra writes it."""
        return self.prefix + self.key + (f"@{self.package}" if self.package else "")

    def override(self, choice: Choice) -> str:
        return f"{self.key_element}={choice.text}"

    @property
    def drawn(self) -> Distribution:
        """kind distribution: how its values are drawn (W&B's meaning of its name)."""
        assert self.distribution is not None
        return DISTRIBUTIONS[self.distribution]

    def optuna_distribution(self) -> Any:
        """This parameter as an Optuna distribution (sampling methods; the Optuna sweeper reuses it)."""
        from optuna.distributions import CategoricalDistribution, IntDistribution

        if self.kind == "distribution":
            return self.drawn.space(self)
        if self.int_range is not None:
            first, last, step = self.int_range
            return IntDistribution(min(first, last), max(first, last), step=abs(step))
        return CategoricalDistribution(categorical_choices(self.choices))

    def choice_for(self, sampled: Any) -> Choice:
        """The Choice of a value sampled from `optuna_distribution()`."""
        if self.kind == "values" and self.int_range is None:
            dist = self.optuna_distribution()
            return self.choices[int(dist.to_internal_repr(sampled))]
        if self.int_range is not None:
            return self.value_choice(int(sampled))
        return self.value_choice(self.drawn.value(self, sampled))

    def value_choice(self, value: Any) -> Choice:
        """The Choice of a job's value (plan.json's params), as drawn values are written."""
        return Choice(value, format_value(value))

    def describe(self) -> str:
        """What its values are, whatever the syntax: `log-uniform over [1.0e-4, 1.0e-2]`, `values [4, 8]`."""
        if self.kind == "distribution":
            return f"{self.drawn.describe(self)} ({self.distribution})"
        if self.kind == "value":
            return f"fixed {self.choices[0].text}"
        texts = [c.text for c in self.choices]
        if len(texts) > 6:  # a range(1, 1001) is not a thousand words
            texts = [*texts[:3], "...", texts[-1]]
        return f"{len(self.choices)} values [{', '.join(texts)}]"

    def to_dict(self) -> Any:
        """The DSL form (sweep-file syntax) of this parameter."""
        if self.kind == "value":
            return {"value": self.choices[0].value}
        if self.kind == "values":
            if self.int_range is not None:
                first, last, step = self.int_range
                return f"range({first},{last + step},{step})"
            return {"values": [c.value for c in self.choices]}
        out: dict[str, Any] = {"distribution": self.distribution}
        if self.drawn.shape == "normal":
            out.update({k: v for k, v in (("mu", self.mu), ("sigma", self.sigma)) if v is not None})
        else:
            out.update({"min": self.low, "max": self.high})
        if self.step is not None:
            out["step"] = self.step
        return out


def grid_size(parameters: Sequence[Param], zips: Sequence[Sequence[str]]) -> int:
    """Points of the grid the parameters span (before constraints): a zip group is one dimension of
    its rows, a fixed parameter none, a distribution one of no rows (no grid)."""
    zipped = {key: group[0] for group in zips for key in group}
    size = 1
    for p in parameters:
        if p.kind == "value" or zipped.get(p.key, p.key) != p.key:  # a zip group counts at its first key
            continue
        size *= len(p.choices) if p.kind == "values" else 0
    return size


def categorical_choices(choices: Sequence[Choice]) -> tuple[Any, ...]:
    """Optuna's categorical choices: the values when they are all plain scalars, else their texts."""
    values = [c.value for c in choices]
    if all(v is None or isinstance(v, bool | int | float | str) for v in values):
        return tuple(values)
    return tuple(c.text for c in choices)
