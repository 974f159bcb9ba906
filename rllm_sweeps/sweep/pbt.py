"""Population-based training's decisions, pure: who exploits whom, and with which settings.

Asynchronous, as in Ray Tune's PBT: a trial decides when it reaches its perturbation
interval, against the latest score of every other trial (nobody waits for stragglers).
A trial in the bottom quantile copies the checkpoint of one in the top quantile and
explores from its settings: each mutated key is resampled from the key's own sweep
distribution (the DSL's Param, through Optuna's RandomSampler, as space.py samples) with
a probability, else multiplied by one of the factors. The job that applies a decision
(loads the checkpoint, replaces its settings) lives elsewhere; this module only decides.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rllm_sweeps.sweep.param import Param


@dataclass(frozen=True)
class Mutation:
    """How one key explores: resampled from `param`'s distribution with `resample_probability`,
    else multiplied by one of `factors` (a categorical key moves to a neighbouring value)."""

    param: Param
    factors: tuple[float, ...] = (0.8, 1.2)
    resample_probability: float = 0.25


@dataclass(frozen=True)
class PbtSettings:
    population: int
    interval: int  # training steps between decisions
    quantile: float = 0.25  # the bottom (top) fraction that exploits (is exploited)
    mutations: tuple[Mutation, ...] = ()
    seed: int = 0


@dataclass(frozen=True)
class TrialState:
    """What a trial last reported: its score at `step` (None before its first) and its settings."""

    trial: int
    step: int
    score: float | None
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Continue:
    """Keep training with the same settings."""


@dataclass(frozen=True)
class Exploit:
    """Load `source_trial`'s checkpoint of `source_step` and continue with `settings`."""

    source_trial: int
    source_step: int
    settings: Mapping[str, Any]


Decision = Continue | Exploit


@dataclass(frozen=True)
class Quantiles:
    bottom: tuple[int, ...]  # trial numbers, worst first
    top: tuple[int, ...]  # trial numbers, best first


def quantiles(states: Sequence[TrialState], quantile: float) -> Quantiles:
    """The bottom and top `quantile` of the trials that have a score (higher is better).

    Each holds ceil(n * quantile) trials, at most half of them, so none is in both. Ties are
    settled by the trial number, and a trial tied with the top quantile's worst score is never
    in the bottom one: copying an equal trial would only discard the copier's state.
    """
    scored = sorted((s for s in states if s.score is not None), key=lambda s: (s.score, -s.trial))
    k = min(math.ceil(len(scored) * quantile), len(scored) // 2)
    if k == 0:
        return Quantiles((), ())
    top = tuple(reversed(scored[-k:]))
    floor = top[-1].score
    bottom = tuple(s for s in scored[:k] if s.score < floor)
    return Quantiles(tuple(s.trial for s in bottom), tuple(s.trial for s in top))


def decide(me: TrialState, states: Sequence[TrialState], settings: PbtSettings) -> Decision:
    """The decision of trial `me` at its interval, against the latest `states` (itself included).

    Reproducible: the randomness is seeded by (sweep seed, trial, step).
    """
    if me.score is None:
        return Continue()
    latest = {s.trial: s for s in states}
    latest[me.trial] = me
    split = quantiles(list(latest.values()), settings.quantile)
    if me.trial not in split.bottom:
        return Continue()
    rng = random.Random(f"{settings.seed}/{me.trial}/{me.step}")
    source = latest[rng.choice(split.top)]
    return Exploit(source.trial, source.step, explore(source.settings, settings.mutations, rng))


def explore(settings: Mapping[str, Any], mutations: Sequence[Mutation], rng: random.Random) -> dict[str, Any]:
    """`settings` with each mutated key resampled or perturbed (kept inside its distribution's range)."""
    out = dict(settings)
    for mutation in mutations:
        key = mutation.param.key
        if key not in out or rng.random() < mutation.resample_probability:
            out[key] = resample(mutation.param, rng.randrange(2**31))
        else:
            out[key] = perturb(mutation, out[key], rng)
    return out


def resample(param: Param, seed: int) -> Any:
    """A value drawn from the key's own sweep distribution (Optuna's RandomSampler, as space.py draws)."""
    import optuna

    from rllm_sweeps.sweep.space import _quiet_optuna

    with _quiet_optuna():
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
        trial = study.ask(fixed_distributions={param.key: param.optuna_distribution()})
    return param.choice_for(trial.params[param.key]).value


def perturb(mutation: Mutation, value: Any, rng: random.Random) -> Any:
    param = mutation.param
    if param.kind == "values" and param.int_range is None:
        values = [c.value for c in param.choices]
        i = values.index(value) if value in values else 0
        return values[min(max(i + rng.choice((-1, 1)), 0), len(values) - 1)]
    new = value * rng.choice(mutation.factors)
    dist = param.optuna_distribution()
    new = min(max(new, dist.low), dist.high)
    return int(round(new)) if isinstance(value, int) and not isinstance(value, bool) else new
