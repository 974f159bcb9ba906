"""The journal-file study under concurrent writers, and the job side of a trial: real Optuna,
real processes, no training."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from rllm_sweeps.study import STUDY_ATTR, SweepAttrs, TrialAddress, open_storage, storage_url
from rllm_sweeps.training.trial import MetricNotReported, TrialReporter

pytestmark = pytest.mark.slow  # eight worker processes on one journal

REPO = Path(__file__).resolve().parents[1]


def make_study(tmp_path: Path, pruner: str = "median", metrics: tuple[str, ...] = ("val_reward_mean",)) -> str:
    """A study as a sweep makes it (its settings on the study); returns the storage URL."""
    url = storage_url(None, tmp_path)
    study = optuna.create_study(
        study_name="s", storage=open_storage(url), directions=["maximize"] * len(metrics), load_if_exists=True
    )
    study.set_user_attr(STUDY_ATTR, SweepAttrs(list(metrics), pruner).to_dict())
    return url


def test_eight_concurrent_workers_lose_no_trial_and_no_intermediate_value(tmp_path):
    url = make_study(tmp_path)
    trials, steps = 5, 8
    start_at = time.time() + 6  # after every worker has imported Optuna
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "tests.probes.optuna_worker", url, "s", str(trials), str(steps), str(start_at)]
    workers = [subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, text=True) for _ in range(8)]
    outputs = [w.communicate(timeout=300)[0] for w in workers]
    assert [w.returncode for w in workers] == [0] * 8
    done = {d["number"]: d for out in outputs for d in json.loads(out)}

    study = optuna.load_study(study_name="s", storage=open_storage(url))
    stored = study.get_trials()
    assert len(stored) == len(done) == 8 * trials  # no trial lost, none doubled
    assert sorted(t.number for t in stored) == list(range(8 * trials))
    for t in stored:
        wrote = {int(step): value for step, value in done[t.number]["reported"].items()}
        assert t.intermediate_values == wrote, f"trial {t.number}"  # every value a worker reported
        want = optuna.trial.TrialState.PRUNED if done[t.number]["pruned"] else optuna.trial.TrialState.COMPLETE
        assert t.state == want


def test_seed_replicates_report_their_mean_once_all_reached_the_step(tmp_path):
    url = make_study(tmp_path, pruner="none")
    study = optuna.load_study(study_name="s", storage=open_storage(url))
    trial = study.ask({"x": optuna.distributions.FloatDistribution(0.0, 1.0)})
    first, second = (TrialReporter(TrialAddress(url, "s", trial.number, k, 2), total_steps=4) for k in (0, 1))
    first.on_validation({"step": 1, "val_reward_mean": 0.2})
    assert study.trials[0].intermediate_values == {}  # the other replicate has not reached step 1
    second.on_validation({"step": 1, "val_reward_mean": 0.4})
    assert study.trials[0].intermediate_values == pytest.approx({1: 0.3})


def test_a_prune_stops_every_replicate_of_the_trial(tmp_path):
    url = make_study(tmp_path, pruner="median")
    study = optuna.load_study(study_name="s", storage=open_storage(url))
    x = optuna.distributions.FloatDistribution(0.0, 1.0)
    for value in (0.9, 0.8, 0.7, 0.6, 0.5):  # the median pruner's 5 startup trials
        t = study.ask({"x": x})
        t.report(value, 1)
        study.tell(t, value)
    trial = study.ask({"x": x})
    first, second = (TrialReporter(TrialAddress(url, "s", trial.number, k, 2), total_steps=4) for k in (0, 1))
    first.on_validation({"step": 1, "val_reward_mean": 0.0})
    second.on_validation({"step": 1, "val_reward_mean": 0.1})  # completes step 1: mean 0.05 < median 0.7
    assert second.pruned_at == 1 and first.pruned_at is None
    first.on_validation({"step": 2, "val_reward_mean": 0.1})  # its next validation sees the prune
    assert first.pruned_at == 2


def test_the_pruner_is_not_asked_at_the_last_step_nor_for_the_validation_before_training(tmp_path):
    url = make_study(tmp_path, pruner="percentile")
    study = optuna.load_study(study_name="s", storage=open_storage(url))
    trial = study.ask()
    reporter = TrialReporter(TrialAddress(url, "s", trial.number), total_steps=2)
    reporter.on_validation({"step": 0, "val_reward_mean": 0.0})
    reporter.on_validation({"step": 2, "val_reward_mean": 0.0})
    assert study.trials[0].intermediate_values == {2: 0.0} and reporter.pruned_at is None


def test_a_metric_the_training_does_not_report_fails_at_the_first_validation(tmp_path):
    url = make_study(tmp_path, metrics=("val_accuracy",))
    study = optuna.load_study(study_name="s", storage=open_storage(url))
    reporter = TrialReporter(TrialAddress(url, "s", study.ask().number), total_steps=3)
    with pytest.raises(MetricNotReported, match=r"'val_accuracy'.*val_reward_mean, val_reward_std"):
        reporter.on_validation({"step": 0, "val_reward_mean": 0.0, "val_reward_std": 0.0})


def test_a_trial_address_comes_from_the_environment_and_is_checked():
    address = TrialAddress("/x/optuna.journal", "s", 3, 1, 2)
    assert TrialAddress.from_env(address.to_env()) == address
    assert TrialAddress.from_env({}) is None
    with pytest.raises(ValueError, match="RLLM_SWEEPS_OPTUNA_TRIAL not set"):
        TrialAddress.from_env({k: v for k, v in address.to_env().items() if not k.endswith("TRIAL")})
