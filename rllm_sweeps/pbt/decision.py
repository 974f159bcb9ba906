"""Population-based training's decisions, pure: who exploits whom, and with which settings.

Asynchronous, as in Ray Tune's PBT: a trial decides when it reaches its perturbation
interval, against the latest score of every other trial (nobody waits for stragglers).
A trial in the bottom quantile copies the checkpoint of one in the top quantile and
explores from its settings: each mutated key is resampled from the key's own sweep
distribution (its Domain: the sweep parameter's Optuna distribution, written down by the
sweeper, drawn through Optuna's RandomSampler as the sweep's space samples) with a
probability, else multiplied by one of the factors. The job that applies a decision
(loads the checkpoint, replaces its settings) lives elsewhere; this module only decides.
Both the sweeper (which builds the settings from the sweep DSL: sweep/pbt_settings.py) and
the job (pbt/member.py) use it, so it knows nothing of the DSL.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

from pydantic import PlainSerializer, PlainValidator
from pydantic.dataclasses import dataclass as record

from rllm_sweeps.optuna_quiet import quiet_optuna
from rllm_sweeps.records.model import Migration, same_shape


def _distribution(value: Any) -> Any:
    """An Optuna distribution, or its JSON (pbt.json's) made one."""
    from optuna.distributions import BaseDistribution, json_to_distribution

    return value if isinstance(value, BaseDistribution) else json_to_distribution(json.dumps(value))


def _distribution_json(value: Any) -> Any:
    from optuna.distributions import distribution_to_json

    return json.loads(distribution_to_json(value))


# An Optuna distribution in a record: Optuna's own JSON of it ({"name": ..., "attributes": {...}}).
OptunaDistribution = Annotated[
    Any,
    PlainValidator(_distribution, json_schema_input_type=dict[str, Any]),
    PlainSerializer(_distribution_json, return_type=dict[str, Any]),
]


@record(frozen=True)
class Domain:
    """Where a mutated key's values lie: its sweep parameter's Optuna distribution (what a resample
    draws from, what a perturbation stays inside) and, for a categorical key, its values in order."""

    key: str
    distribution: OptunaDistribution  # an optuna.distributions.BaseDistribution
    values: tuple[Any, ...] | None = None  # a categorical key's values (a perturbation moves to a neighbour)


@record(frozen=True)
class Mutation:
    """How one key explores: resampled from `domain` with `resample_probability`, else multiplied
    by one of `factors` (a categorical key moves to a neighbouring value)."""

    # No defaults here or in PbtSettings: PBT's defaults are the sweep's `pbt:` block's, defined once
    # (sweep/pbt_settings.py's PbtSpec); a record states what the sweep chose.
    domain: Domain
    factors: tuple[float, ...]
    resample_probability: float


# PBT's default burn-in, a share of a trial's steps (the sweep's `pbt.burn_in` when unset). Chosen on
# issue 47's real tier (docs/BENCHMARKS.md): an lr high enough to lead the first validations and
# collapse later had been copied by the whole population when decisions began at the first interval.
BURN_IN_SHARE = 0.5


def burn_in_steps(burn_in: int | None, total_steps: int) -> int:
    """A trial's burn-in in steps: `burn_in` as set, else BURN_IN_SHARE of its `total_steps`."""
    return burn_in if burn_in is not None else int(total_steps * BURN_IN_SHARE)


@record(frozen=True)
class PbtSettings:
    population: int
    interval: int  # training steps between decisions
    quantile: float  # the bottom (top) fraction that exploits (is exploited)
    mutations: tuple[Mutation, ...] = ()
    seed: int = 0
    # No exploit before this step; None: BURN_IN_SHARE of the trial's steps (a pbt.json written before
    # burn_in existed has none: the sweeper rewrites it at a resume, with the sweep's setting)
    burn_in: int | None = None

    def first_exploit(self, total_steps: int) -> int:
        """The first step a trial of `total_steps` steps may copy another at (before: it reports only)."""
        return burn_in_steps(self.burn_in, total_steps)


@record(frozen=True)
class TrialState:
    """What a trial last reported: its score at `step` (None before its first) and its settings.
    The record of the PBT board's trial_<k>.json (pbt/board.py)."""

    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: same_shape}

    trial: int
    step: int
    score: float | None
    # The mutated keys' values (trainer.lr -> 3e-4): a categorical mutation's values are any JSON value.
    settings: dict[str, Any] = field(default_factory=dict)
    schema_version: int = 1


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


def decide(me: TrialState, states: Sequence[TrialState], settings: PbtSettings, total_steps: int) -> Decision:
    """The decision of trial `me` (of `total_steps` steps) at its interval, against the latest `states`
    (itself included).

    Reproducible: the randomness is seeded by (sweep seed, trial, step).
    """
    if me.score is None or me.step < settings.first_exploit(total_steps):
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
        key = mutation.domain.key
        if key not in out or rng.random() < mutation.resample_probability:
            out[key] = resample(mutation.domain, rng.randrange(2**31))
        else:
            out[key] = perturb(mutation, out[key], rng)
    return out


def resample(domain: Domain, seed: int) -> Any:
    """A value drawn from the key's own sweep distribution (Optuna's RandomSampler, as the sweep's space draws)."""
    import optuna

    with quiet_optuna():
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
        trial = study.ask(fixed_distributions={domain.key: domain.distribution})
    sampled = trial.params[domain.key]
    if domain.values is not None:
        return domain.values[int(domain.distribution.to_internal_repr(sampled))]
    return int(sampled) if isinstance(domain.distribution, optuna.distributions.IntDistribution) else sampled


def perturb(mutation: Mutation, value: Any, rng: random.Random) -> Any:
    domain = mutation.domain
    if domain.values is not None:
        values = list(domain.values)
        i = values.index(value) if value in values else 0
        return values[min(max(i + rng.choice((-1, 1)), 0), len(values) - 1)]
    new = value * rng.choice(mutation.factors)
    dist = domain.distribution
    new = min(max(new, dist.low), dist.high)
    return int(round(new)) if isinstance(value, int) and not isinstance(value, bool) else new
