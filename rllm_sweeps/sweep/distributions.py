"""Parameter distributions: every W&B distribution name with W&B's meaning, and how it is drawn here.

`DISTRIBUTIONS` is the one table: the sweep-file parser checks names and fields against it, a
distribution parameter is sampled through it (`space`, `value`), the dry run describes each one
with it (`describe`: `trainer.lr: log-uniform over [1.0e-4, 1.0e-2]`) and docs/SWEEPS.md's
"W&B field -> what it becomes" table is generated from it (`doc_rows`).

W&B's definitions (docs.wandb.ai, "Sweep configuration options", `distribution`; the `wandb`
column below condenses them): `log_uniform` returns X between exp(min) and exp(max) (min, max are
natural-log exponents), `log_uniform_values` X between min and max; `q_*` is round(X / q) * q of
the unquantized one, q defaulting to 1 (W&B's sampler returns integers when q is an integer);
`inv_log_uniform` returns X with log(1/X) uniform in [min, max], `inv_log_uniform_values` with
log(1/X) uniform in [log(1/max), log(1/min)]; `normal` has mean mu (default 0) and standard
deviation sigma (default 1), `log_normal` has log(X) normal.

Optuna, which samples every random and optuna sweep, has uniform and log-uniform distributions
(float or int, stepped or not) and categorical ones. W&B's others are drawn in one of those and
mapped by `value`: an inverse log-uniform X is log-uniform over [exp(-max), exp(-min)] (log X is
uniform when log 1/X is); a quantized one rounds the drawn X; a normal one is
mu + sigma * Phi^-1(u) of u drawn uniformly in (0, 1), so random search draws W&B's distribution
exactly and Optuna's samplers search its quantiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Protocol

# The quantile u of a normal draw stays inside (0, 1): Phi^-1 is infinite at the ends.
_U_EDGE = 1e-12


class Drawn(Protocol):
    """What a distribution reads of a parameter (sweep/param.py's Param)."""

    @property
    def distribution(self) -> str | None: ...
    @property
    def low(self) -> float | int | None: ...
    @property
    def high(self) -> float | int | None: ...
    @property
    def step(self) -> float | int | None: ...
    @property
    def mu(self) -> float | None: ...
    @property
    def sigma(self) -> float | None: ...


@dataclass(frozen=True)
class Distribution:
    """One distribution name: its fields, W&B's definition, and how it is drawn."""

    name: str
    wandb: str  # W&B's definition ("" for this project's own names)
    shape: str = "range"  # "range": min, max | "normal": mu, sigma
    bounds: str = "values"  # range: min/max are "values", "exponents" or "inverse exponents" (inv_log_uniform)
    log: bool = False  # log-uniform (range) / log-normal (normal)
    integer: bool = False  # integers (int_uniform, int_log_uniform)
    quantized: bool = False  # q_*: round(X / q) * q

    @property
    def fields(self) -> tuple[str, ...]:
        return ("min", "max") if self.shape == "range" else ("mu", "sigma")

    @property
    def direct(self) -> bool:
        """Whether the drawn value is the value itself (no rounding, no quantile): what PBT perturbs."""
        return self.shape == "range" and not (self.quantized and self.log)

    # -- the range, and what is drawn -----------------------------------------------------

    def value_bounds(self, p: Drawn) -> tuple[float, float]:
        """The range of the unquantized X: min/max read as values, exponents or inverse exponents."""
        low, high = float(_given(p.low)), float(_given(p.high))
        if self.bounds == "exponents":
            return math.exp(low), math.exp(high)
        if self.bounds == "inverse exponents":
            return math.exp(-high), math.exp(-low)
        return low, high

    def value_range(self, p: Drawn) -> tuple[float, float]:
        """The values a job may get (W&B's documented range): both ends included."""
        if self.shape == "normal":
            return (0.0 if self.log else -math.inf), math.inf
        low, high = self.value_bounds(p)
        if self.quantized:
            q = q_of(p)
            return _multiple(low, q), _multiple(high, q)
        return low, high

    def space(self, p: Drawn) -> Any:
        """The Optuna distribution a sampler draws from."""
        from optuna.distributions import FloatDistribution, IntDistribution

        if self.shape == "normal":
            return FloatDistribution(0.0, 1.0)  # the quantile
        low, high = self.value_bounds(p)
        if self.integer:
            return IntDistribution(int(low), int(high), log=self.log, step=int(p.step or 1))
        if self.quantized and not self.log:  # q_uniform: Optuna's stepped distribution over W&B's range
            q = q_of(p)
            low, high = self.value_range(p)
            if _is_int(q):
                return IntDistribution(int(low), int(high), step=q)
            return FloatDistribution(low, high, step=q)
        return FloatDistribution(low, high, log=self.log)

    def value(self, p: Drawn, drawn: Any) -> Any:
        """The job's value of a draw from `space`."""
        if self.integer or (self.quantized and not self.log and _is_int(q_of(p))):
            return int(drawn)
        x = float(drawn)
        if self.shape == "normal":
            u = min(max(x, _U_EDGE), 1 - _U_EDGE)
            x = NormalDist(_or(p.mu, 0.0), _or(p.sigma, 1.0)).inv_cdf(u)
            if self.log:
                x = math.exp(x)
        if self.quantized and (self.log or self.shape == "normal"):
            q = q_of(p)
            x = round(x / q) * q
            return int(x) if _is_int(q) else x
        return x

    # -- words ------------------------------------------------------------------------------

    def describe(self, p: Drawn) -> str:
        """`log-uniform over [1.0e-4, 1.0e-2]`: what the parameter's values are, whatever the syntax."""
        what = ("integer " if self.integer else "") + ("log-" if self.log else "")
        if self.shape == "normal":
            mu, sigma = _num(_or(p.mu, 0.0)), _num(_or(p.sigma, 1.0))
            head = f"{what}normal with mean {mu}, standard deviation {sigma}" + (" of log X" if self.log else "")
            return head + (f", rounded to multiples of {_num(q_of(p))}" if self.quantized else "")
        low, high = self.value_range(p)
        text = f"{what}uniform over [{_num(low, self.log)}, {_num(high, self.log)}]"
        if self.quantized:
            text += f" in multiples of {_num(q_of(p))}"
        elif p.step is not None and p.step != 1:
            text += f" in steps of {_num(p.step)}"
        return text

    def becomes(self) -> str:
        """What the name becomes here (the docs table's column)."""
        if self.shape == "normal":
            base = "Optuna `FloatDistribution(0, 1)` (the quantile u); the job gets mu + sigma x Phi^-1(u)"
            base += ", exponentiated" if self.log else ""
            return base + (", rounded to a multiple of q" if self.quantized else "")
        rng = {
            "values": "[min, max]",
            "exponents": "[exp(min), exp(max)]",
            "inverse exponents": "[exp(-max), exp(-min)]",
        }[self.bounds]
        if self.integer:
            return f"Optuna `IntDistribution({rng}{', log=True' if self.log else ''}, step)`"
        if self.quantized and self.log:
            return f"Optuna `FloatDistribution({rng}, log=True)`; the job gets round(X / q) x q"
        if self.quantized:
            return (
                "Optuna's stepped distribution over the multiples of q in [min, max] "
                "(`IntDistribution` when q is an integer)"
            )
        return f"Optuna `FloatDistribution({rng}{', log=True' if self.log else ''})`"


def q_of(p: Drawn) -> float | int:
    """A quantized distribution's q (W&B's default: 1)."""
    return p.step if p.step is not None else 1


def _given(value: float | int | None) -> float | int:
    assert value is not None, "checked by the parser"
    return value


def _or(value: float | None, default: float) -> float:
    return default if value is None else float(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _multiple(x: float, q: float | int) -> float:
    """round(x / q) * q, and x itself when it is one (no float noise: 0.1 stays 0.1)."""
    k = round(x / q)
    return x if math.isclose(x / q, k, rel_tol=1e-9, abs_tol=1e-12) else float(f"{k * q:.12g}")


def _num(x: float | int, log: bool = False) -> str:
    """1.0e-4 for a fraction on a log scale and for very small or large numbers; 0.25 or 32 otherwise."""
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x != 0 and ((log and abs(x) < 1) or not 1e-3 <= abs(x) < 1e5):
        mantissa, exp = f"{x:.1e}".split("e")
        return f"{mantissa}e{int(exp)}"
    return f"{x:g}"


def _d(name: str, wandb: str, **kw: Any) -> Distribution:
    return Distribution(name, wandb, **kw)


DISTRIBUTIONS: dict[str, Distribution] = {
    d.name: d
    for d in (
        _d("uniform", "continuous uniform over [min, max]"),
        _d("q_uniform", "round(X / q) x q, X uniform over [min, max]; q defaults to 1", quantized=True),
        _d("log_uniform", "X in [exp(min), exp(max)], log X uniform over [min, max]", bounds="exponents", log=True),
        _d("log_uniform_values", "X in [min, max], log X uniform over [log min, log max]", log=True),
        _d(
            "q_log_uniform",
            "round(X / q) x q, X log_uniform (exponents); q defaults to 1",
            bounds="exponents",
            log=True,
            quantized=True,
        ),
        _d(
            "q_log_uniform_values",
            "round(X / q) x q, X log_uniform_values; q defaults to 1",
            log=True,
            quantized=True,
        ),
        _d(
            "inv_log_uniform",
            "X with log(1/X) uniform over [min, max]",
            bounds="inverse exponents",
            log=True,
        ),
        _d("inv_log_uniform_values", "X with log(1/X) uniform over [log(1/max), log(1/min)]", log=True),
        _d("int_uniform", "integers, uniform over [min, max]", integer=True),
        _d("normal", "normal with mean mu (default 0), standard deviation sigma (default 1)", shape="normal"),
        _d("q_normal", "round(X / q) x q, X normal; q defaults to 1", shape="normal", quantized=True),
        _d("log_normal", "X with log X normal (mu, sigma)", shape="normal", log=True),
        _d(
            "q_log_normal",
            "round(X / q) x q, X log_normal; q defaults to 1",
            shape="normal",
            log=True,
            quantized=True,
        ),
        _d("int_log_uniform", "", integer=True, log=True),  # this project's: integers, log-uniform over the values
    )
}
# categorical and constant are a parameter's values (sweep/param.py), not a drawn distribution.
CHOICE_DISTRIBUTIONS = {"categorical": "a choice among values", "constant": "the one value"}


def doc_rows() -> list[tuple[str, str, str]]:
    """docs/SWEEPS.md's table: (W&B field, W&B's meaning, what it becomes here)."""
    rows = [
        (f"`{d.name}`", d.wandb or "(this project's) integers, log-uniform over [min, max]", d.becomes())
        for d in DISTRIBUTIONS.values()
    ]
    rows += [
        ("`categorical`", "one of `values`", "the values: a categorical choice (`CategoricalDistribution`)"),
        ("`constant`", "`value`, always", "a fixed parameter: every job gets it"),
    ]
    return rows


__all__ = ["CHOICE_DISTRIBUTIONS", "DISTRIBUTIONS", "Distribution", "doc_rows", "q_of"]
