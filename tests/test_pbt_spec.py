"""`method: pbt` in the sweeps DSL: its `pbt:` block, what a population may differ in, the
settings every trial gets, and what a trial's composed config must hold. Pure parsing, plus one
dry-run plan (composed, not trained)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rllm_sweeps.pbt.membership import PbtMembership, read_membership, write_membership
from rllm_sweeps.sweep.parse_cli import parse_sweep
from rllm_sweeps.sweep.pbt_settings import pbt_settings
from rllm_sweeps.sweep.pbt_source import first_settings
from rllm_sweeps.sweep.spec import SweepError, SweepSpec

PBT = ["trainer.lr=tag(log,interval(1e-4,1e-2))", "sweep.method=pbt", "sweep.pbt.population=4", "sweep.pbt.interval=3"]


def test_a_pbt_sweep_runs_its_population_at_once_with_a_validation_and_checkpoint_at_each_interval() -> None:
    request = parse_sweep([*PBT, "trainer.total_batches=12"])
    spec = request.spec
    assert spec.method == "pbt" and spec.budget == 4 and spec.parallel == 4
    assert spec.pbt.interval == 3 and spec.pbt.quantile == 0.25
    assert request.base_overrides == ("trainer.total_batches=12", "trainer.test_freq=3", "trainer.save_freq=3")
    settings = pbt_settings(spec.pbt, spec.parameters, spec.seed)
    assert [m.domain.key for m in settings.mutations] == ["trainer.lr"]
    assert SweepSpec.from_dict(spec.to_dict()).pbt == spec.pbt  # plan.json and pbt.json give it back
    # The user's own frequencies stay (the planner checks that they divide the interval).
    kept = parse_sweep([*PBT, "trainer.test_freq=1"]).base_overrides
    assert kept == ("trainer.test_freq=1", "trainer.save_freq=3")


def test_a_sweep_file_sets_every_pbt_setting(tmp_path: Path) -> None:
    path = tmp_path / "pbt.yaml"
    path.write_text(
        "method: pbt\n"
        "parameters:\n"
        "  trainer.lr: {distribution: log_uniform_values, min: 1.0e-4, max: 1.0e-2}\n"
        "  algorithm.kl_beta: {values: [0.0, 0.01, 0.1]}\n"
        "pbt: {population: 6, interval: 5, burn_in: 10, quantile: 0.5, factors: [0.5, 2], resample_probability: 0,"
        " mutate: [trainer.lr]}\n"
    )
    spec = parse_sweep([f"+sweep={path}"]).spec
    settings = pbt_settings(spec.pbt, spec.parameters, spec.seed)
    assert (settings.population, settings.interval, settings.burn_in, settings.quantile) == (6, 5, 10, 0.5)
    (mutation,) = settings.mutations
    assert mutation.domain.key == "trainer.lr" and mutation.factors == (0.5, 2.0) and mutation.resample_probability == 0
    # A trial's first schedule: its drawn value of every swept key, by the loop's field name.
    assert first_settings({"trainer.lr": 1e-3, "algorithm.kl_beta": 0.1, "rollout.n": 4}, spec.swept_keys) == {
        "lr": 1e-3,
        "kl_beta": 0.1,
    }


def test_a_trials_membership_gives_its_job_the_sweepers_settings_without_the_sweep_dsl(tmp_path: Path) -> None:
    spec = parse_sweep([*PBT, "algorithm.kl_beta=0.0,0.01,0.1", "sweep.metric.goal=minimize"]).spec
    settings = pbt_settings(spec.pbt, spec.parameters, spec.seed)
    assert [m.domain.values for m in settings.mutations] == [None, (0.0, 0.01, 0.1)]  # kl_beta: categorical
    trials = {0: tmp_path / "a", 1: tmp_path / "b"}
    membership = PbtMembership(1, tmp_path / "board", trials, settings, spec.metric[0], spec.swept_keys)
    write_membership(tmp_path, membership)
    assert read_membership(tmp_path) == membership  # pbt.json gives back distributions, values, metric, keys
    assert membership.metric.goal == "minimize" and membership.keys == ("trainer.lr", "algorithm.kl_beta")


def test_bad_pbt_settings_are_all_refused_at_once_each_with_its_fix() -> None:
    with pytest.raises(SweepError) as err:
        parse_sweep(
            [
                *PBT,
                "rollout.n=4,8",
                "sweep.seeds=2",
                "sweep.budget=8",
                "sweep.pbt.population=1",
                "sweep.pbt.quantile=0.7",
                "sweep.pbt.factors=[]",
                "sweep.pbt.mutate=[trainer.lrr]",
                "sweep.pbt.intervall=3",
                "sweep.pbt.burn_in=-1",
            ]
        )
    text = str(err.value)
    for expected in (
        "pbt.population is the number of trials, an integer >= 2; got 1",
        "pbt.quantile is a fraction of the population in (0, 0.5]",
        "pbt.factors is a non-empty list of positive numbers",
        "pbt.mutate names 'trainer.lrr', not a swept parameter; did you mean 'trainer.lr'?",
        "unknown pbt setting 'intervall'; did you mean 'interval'?",
        "pbt.burn_in is a number of training steps >= 0 before the first decision; got -1",
        "rollout.n cannot change mid-run",
        "give rollout.n one value",
        "a PBT population shares one seed",
        "a PBT sweep's jobs are its population",
    ):
        assert expected in text, text


@pytest.mark.slow
def test_the_plan_refuses_trials_that_would_never_reach_an_interval_or_skip_its_checkpoint() -> None:
    from rllm_sweeps.sweep.plan import render_plan
    from rllm_sweeps.sweep.planner import plan_sweep

    with pytest.raises(SweepError) as err:
        plan_sweep([*PBT, "trainer.total_batches=3", "trainer.save_freq=2"], limit=2, validate=False)
    text = str(err.value)
    assert "trainer.save_freq=2 must divide pbt.interval=3" in text and "use trainer.save_freq=3" in text
    assert "trainer.total_batches=3 leaves no perturbation interval before the last step" in text
    with pytest.raises(SweepError) as err:
        plan_sweep([*PBT, "trainer.total_batches=6", "sweep.pbt.burn_in=4"], limit=2, validate=False)
    assert "trainer.total_batches=6 ends before the first decision after pbt.burn_in=4 (at step 6" in str(err.value)
    plan = plan_sweep([*PBT, "trainer.total_batches=6"], limit=4, validate=False)
    assert len(plan.jobs) == 4 and len({j.params["trainer.lr"] for j in plan.jobs}) == 4
    assert "every 3 steps from its burn-in (50% of its steps) the bottom 0.25 copies" in render_plan(plan)
    burnt = plan_sweep([*PBT, "trainer.total_batches=12", "sweep.pbt.burn_in=6"], limit=4, validate=False)
    assert "every 3 steps from its burn-in (step 6) the bottom" in render_plan(burnt)


def test_the_docs_state_pbt_defaults_as_pbt_spec_defines_them() -> None:
    from rllm_sweeps.sweep.pbt_settings import defaults_text

    docs = (Path(__file__).resolve().parents[1] / "docs" / "SWEEPS.md").read_text()
    row = next(line for line in docs.splitlines() if line.startswith("| `pbt` |"))
    assert defaults_text() in row
