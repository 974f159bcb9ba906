"""PBT's decisions (rllm_sweeps/pbt/decision.py): quantiles, exploit choice, explore, ties, unscored trials."""

from __future__ import annotations

import random

import pytest

from rllm_sweeps.pbt.decision import (
    Continue,
    Exploit,
    Mutation,
    PbtSettings,
    TrialState,
    decide,
    explore,
    quantiles,
    resample,
)
from rllm_sweeps.sweep.param import Choice, Param
from rllm_sweeps.sweep.pbt_settings import domain_of

# The trials' steps: their decisions at step 3 come after the default burn-in (half of them).
TOTAL = 6

# The keys' sweep parameters, as the sweeper writes their domains down for the trials' jobs.
LR = domain_of(
    Param(
        key="trainer.lr",
        source="test",
        kind="distribution",
        distribution="log_uniform_values",
        low=1e-6,
        high=1e-3,
        log=True,
    )
)
TEMP = domain_of(
    Param(
        key="generator.temperature",
        source="test",
        kind="values",
        choices=tuple(Choice(v, str(v)) for v in (0.6, 0.8, 1.0)),
    )
)


def _states(*scores: float | None) -> list[TrialState]:
    return [TrialState(trial=i, step=3, score=s, settings={"trainer.lr": 1e-4}) for i, s in enumerate(scores)]


def test_quantiles_take_the_ceiling_of_the_fraction_and_never_overlap() -> None:
    split = quantiles(_states(0.1, 0.4, 0.3, 0.2), 0.25)
    assert split.bottom == (0,) and split.top == (1,)
    split = quantiles(_states(0.1, 0.4, 0.3, 0.2, 0.5), 0.5)  # ceil(2.5)=3 capped at half: 2
    assert split.bottom == (0, 3) and split.top == (4, 1)


def test_trials_without_a_score_are_left_out_of_the_ranking() -> None:
    split = quantiles(_states(None, 0.4, None, 0.2), 0.25)
    assert split.bottom == (3,) and split.top == (1,)
    assert quantiles(_states(None, 0.4, None, None), 0.25) == quantiles([], 0.25)


def test_a_trial_with_no_score_yet_continues() -> None:
    states = _states(None, 0.9, 0.8, 0.7)
    assert decide(states[0], states, PbtSettings(population=4, interval=3, quantile=0.25), TOTAL) == Continue()


def test_a_tie_with_the_top_quantile_never_exploits() -> None:
    states = _states(0.5, 0.5, 0.5, 0.5)
    assert quantiles(states, 0.25).bottom == ()
    assert all(
        decide(s, states, PbtSettings(population=4, interval=3, quantile=0.25), TOTAL) == Continue() for s in states
    )


def test_the_bottom_trial_exploits_a_top_one_and_the_others_continue() -> None:
    states = _states(0.1, 0.9, 0.5, 0.6)
    settings = PbtSettings(population=4, interval=3, quantile=0.5, mutations=(Mutation(LR, (0.8, 1.2), 0.25),))
    decision = decide(states[0], states, settings, TOTAL)
    assert isinstance(decision, Exploit)
    assert decision.source_trial in (1, 3) and decision.source_step == 3
    assert decide(states[1], states, settings, TOTAL) == Continue()
    assert decide(states[3], states, settings, TOTAL) == Continue()


def test_no_trial_exploits_before_the_burn_in_and_the_bottom_one_does_from_it() -> None:
    # Each at its own step: the trials report during the burn-in (others rank them), none copies.
    explicit = PbtSettings(population=4, interval=3, quantile=0.25, burn_in=6)
    default = PbtSettings(population=4, interval=3, quantile=0.25)  # burn-in: half of the trial's steps
    for settings, total in ((explicit, 30), (default, 12), (default, 13)):
        for step, expected in ((3, Continue), (5, Continue), (6, Exploit), (9, Exploit)):
            states = [TrialState(i, step, s, {"trainer.lr": 1e-4}) for i, s in enumerate((0.1, 0.9, 0.5, 0.6))]
            assert isinstance(decide(states[0], states, settings, total), expected), (settings.burn_in, total, step)
    assert default.first_exploit(20) == 10 and PbtSettings(4, 3, 0.25, burn_in=0).first_exploit(20) == 0


def test_decisions_are_reproducible_and_depend_on_the_seed() -> None:
    states = _states(0.1, 0.9, 0.8, 0.2, 0.7, 0.6, 0.5, 0.4)
    mutations = (Mutation(LR, (0.8, 1.2), resample_probability=0.5),)
    runs = [decide(states[0], states, PbtSettings(8, 3, 0.25, mutations, seed=s), TOTAL) for s in (1, 1, 2, 3, 4)]
    assert runs[0] == runs[1]
    assert len({(d.source_trial, d.settings["trainer.lr"]) for d in runs}) > 1


def test_perturbing_multiplies_by_a_factor_and_stays_in_range() -> None:
    rng = random.Random(0)
    out = explore({"trainer.lr": 1e-4}, (Mutation(LR, factors=(0.5, 2.0), resample_probability=0.0),), rng)
    assert out["trainer.lr"] in (pytest.approx(5e-5), pytest.approx(2e-4))
    top = explore({"trainer.lr": 1e-3}, (Mutation(LR, factors=(2.0,), resample_probability=0.0),), rng)
    assert top["trainer.lr"] == 1e-3  # clamped to the distribution's max


def test_resampling_draws_from_the_keys_sweep_distribution() -> None:
    drawn = {resample(LR, seed) for seed in range(20)}
    assert len(drawn) == 20 and all(1e-6 <= v <= 1e-3 for v in drawn)
    rng = random.Random(0)
    always = explore({"trainer.lr": 5.0}, (Mutation(LR, (0.8, 1.2), resample_probability=1.0),), rng)
    assert 1e-6 <= always["trainer.lr"] <= 1e-3


def test_a_categorical_key_moves_to_a_neighbouring_value() -> None:
    rng = random.Random(0)
    for _ in range(10):
        out = explore({"generator.temperature": 0.8}, (Mutation(TEMP, (0.8, 1.2), resample_probability=0.0),), rng)
        assert out["generator.temperature"] in (0.6, 1.0)
