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

from rllm_sweeps.records.launch import LAUNCH_ENV, JobLaunch, OptunaTrial, current_launch, read_launch
from rllm_sweeps.records.plan import Metric
from rllm_sweeps.study import STUDY_ATTR, SweepAttrs, TrialAddress, open_storage, storage_url
from rllm_sweeps.sweep.optuna_settings import OptunaSettings, pruner_settings
from rllm_sweeps.training.trial import MetricNotReported, TrialReporter

pytestmark = pytest.mark.slow  # eight worker processes on one journal

REPO = Path(__file__).resolve().parents[1]


def make_study(tmp_path: Path, pruner: str = "median", metrics: tuple[str, ...] = ("val_reward_mean",)) -> str:
    """A study as a sweep makes it (its settings on the study); returns the storage URL."""
    url = storage_url(None, tmp_path)
    study = optuna.create_study(
        study_name="s", storage=open_storage(url), directions=["maximize"] * len(metrics), load_if_exists=True
    )
    study.set_user_attr(STUDY_ATTR, SweepAttrs(list(metrics), pruner).attribute())
    return url


def job_trial(url: str, number: int, replica: int = 0, replicas: int = 1) -> OptunaTrial:
    """A job's trial as its launch record carries it: the study's pruner, as the sweeper hands it."""
    study = optuna.load_study(study_name="s", storage=open_storage(url))
    attrs = SweepAttrs.of_study(study.user_attrs, study.study_name)
    pruner = pruner_settings(OptunaSettings(pruner=attrs.pruner, pruner_options=attrs.pruner_options))
    return OptunaTrial.at(TrialAddress(url, "s", number, replica, replicas), pruner)


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
    first, second = (TrialReporter(job_trial(url, trial.number, k, 2), total_steps=4) for k in (0, 1))
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
    first, second = (TrialReporter(job_trial(url, trial.number, k, 2), total_steps=4) for k in (0, 1))
    first.on_validation({"step": 1, "val_reward_mean": 0.0})
    second.on_validation({"step": 1, "val_reward_mean": 0.1})  # completes step 1: mean 0.05 < median 0.7
    assert second.pruned_at == 1 and first.pruned_at is None
    first.on_validation({"step": 2, "val_reward_mean": 0.1})  # its next validation sees the prune
    assert first.pruned_at == 2


def test_the_pruner_is_not_asked_at_the_last_step_nor_for_the_validation_before_training(tmp_path):
    url = make_study(tmp_path, pruner="percentile")
    study = optuna.load_study(study_name="s", storage=open_storage(url))
    trial = study.ask()
    reporter = TrialReporter(job_trial(url, trial.number), total_steps=2)
    reporter.on_validation({"step": 0, "val_reward_mean": 0.0})
    reporter.on_validation({"step": 2, "val_reward_mean": 0.0})
    assert study.trials[0].intermediate_values == {2: 0.0} and reporter.pruned_at is None


def test_a_metric_the_training_does_not_report_fails_at_the_first_validation(tmp_path):
    url = make_study(tmp_path, metrics=("val_accuracy",))
    study = optuna.load_study(study_name="s", storage=open_storage(url))
    reporter = TrialReporter(job_trial(url, study.ask().number), total_steps=3)
    with pytest.raises(MetricNotReported, match=r"'val_accuracy'.*val_reward_mean, val_reward_std"):
        reporter.on_validation({"step": 0, "val_reward_mean": 0.0, "val_reward_std": 0.0})


def test_a_trial_address_comes_from_the_launch_record_and_is_checked(tmp_path):
    trial = job_trial(make_study(tmp_path, pruner="asha"), 3, 1, 2)
    launch = JobLaunch(1, "digest", (Metric(),), trial)
    path = launch.write(tmp_path / "job")
    assert current_launch({LAUNCH_ENV: str(path)}) == launch  # the address, and the study's pruner
    assert launch.trial.pruner.cls == "SuccessiveHalvingPruner"
    assert current_launch({}) is None  # a job run by hand
    data = json.loads(path.read_text())
    del data["trial"]["trial"]
    (tmp_path / "incomplete.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"incomplete.json .*unreadable: .*'trial.trial': field required"):
        read_launch(tmp_path / "incomplete.json")
    data["trial"] |= {"trial": 3, "replica": 2}
    (tmp_path / "out_of_range.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"replica 2/2: out of range"):
        read_launch(tmp_path / "out_of_range.json")
