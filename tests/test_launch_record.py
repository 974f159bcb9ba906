"""A sweep's job gets what its sweeper decided in its launch record (records/launch.py), one file per
attempt, never rewritten: an older attempt keeps its generation; the job reads its judged metrics,
its Optuna trial and its pruner from it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import optuna
import pytest

from launchers.local import LocalLauncher
from rllm_sweeps.records import attempts
from rllm_sweeps.records.launch import LAUNCH_ENV, JobLaunch, OptunaTrial, PrunerSettings, current_launch, read_launch
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.plan import Metric, PlannedJob
from rllm_sweeps.records.resources import Resources
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.study import STUDY_ATTR, SweepAttrs, TrialAddress, open_storage, storage_url
from rllm_sweeps.sweep.runner import JobToRun, StaticSource, SweepRunner, job_dir_for

REPO = Path(__file__).resolve().parents[1]
QUICK = ["trainer.total_batches=4", "trainer.test_freq=2", "trainer.save_freq=0", "task.dataset.val_size=8"]
QUICK += ["data.train_batch_size=8", "rollout.n=4", "trainer.val_before_train=false"]
SHAPE = Resources(nodes=1, gpus_per_node=0, cpus_per_task=2, jobs_per_gpu=1, mem_gb=8, time_min=60)


def one_job_runner(tmp_path: Path, metrics: list[Metric]) -> tuple[SweepRunner, PlannedJob]:
    job = PlannedJob(0, ["trainer.seed=0"], {}, "p0", 0, None, "h0", SHAPE)
    source = StaticSource(SimpleNamespace(jobs=[job]), tmp_path)
    return SweepRunner(source, tmp_path, LocalLauncher(gpus=()), 1, metric=metrics[0], metrics=metrics), job


def test_an_older_attempts_launch_record_keeps_its_generation_after_a_newer_one_is_written(tmp_path):
    runner, job = one_job_runner(tmp_path, [Metric()])
    run = JobToRun(job, job_dir_for(tmp_path, job))
    first = runner.request(run)  # the attempt a node SLURM lost touch with may start (or read) late
    second = runner.request(run)  # the sweeper gave up on it and launched the job again
    old, new = Path(first.env[LAUNCH_ENV]), Path(second.env[LAUNCH_ENV])
    assert old != new and old.parent == new.parent == run.job_dir
    assert (first.generation, second.generation) == (1, 2)
    assert read_launch(old).generation == 1  # the newer record changed nothing of the older one's
    assert current_launch({LAUNCH_ENV: str(old)}).generation == 1
    assert current_launch({LAUNCH_ENV: str(new)}).generation == 2
    assert not attempts.AttemptFence(run.job_dir, read_launch(old).generation).current()
    assert attempts.AttemptFence(run.job_dir, read_launch(new).generation).current()
    # The environment carries the record's path alone: nothing of the sweeper's context besides.
    assert {k for k in second.env if k.startswith("RLLM_")} == {LAUNCH_ENV}


def test_a_new_attempts_launch_record_removes_those_before_the_previous_attempts(tmp_path):
    runner, job = one_job_runner(tmp_path, [Metric()])
    run = JobToRun(job, job_dir_for(tmp_path, job))
    requests = [runner.request(run) for _ in range(3)]
    assert sorted(JobPaths(run.job_dir).launches()) == [2, 3]  # generation 1's attempt was superseded twice
    assert read_launch(Path(requests[-1].env[LAUNCH_ENV])).generation == 3  # the current attempt reads its own
    assert read_launch(Path(requests[-2].env[LAUNCH_ENV])).generation == 2  # the previous one learns it is stale
    attempts.raise_generation(run.job_dir)  # a retry: the runner gives up on generation 3 first (finish)
    retry = runner.request(run)
    assert retry.generation == 5 and sorted(JobPaths(run.job_dir).launches()) == [3, 5]  # not by number: 3 stays


def test_the_launch_record_reads_back_as_written_and_a_job_by_hand_has_none(tmp_path):
    trial = OptunaTrial.at(TrialAddress("/x/optuna.journal", "s", 3, 1, 2), PrunerSettings("MedianPruner", {"a": 1}))
    launch = JobLaunch(4, "abc", (Metric("val_loss", "minimize"), Metric()), trial)
    path = launch.write(tmp_path)
    assert path == JobPaths(tmp_path).launch(4)
    assert read_launch(path) == launch
    assert current_launch({}) is None
    with pytest.raises(ValueError, match=f"launch record .*missing.json \\({LAUNCH_ENV}\\) is unreadable"):
        read_launch(tmp_path / "missing.json")


@pytest.mark.slow
def test_a_sweeps_job_reads_its_judged_metrics_and_optuna_trial_from_its_launch_record(tmp_path):
    url = storage_url(None, tmp_path)
    study = optuna.create_study(study_name="s", storage=open_storage(url), direction="minimize")
    study.set_user_attr(STUDY_ATTR, SweepAttrs(["val_reward_mean"], "none").attribute())
    number = study.ask().number
    # Not the default (val_reward_mean, maximized, alone): the record's own.
    metrics = [Metric("val_reward_std", "minimize"), Metric("val_reward_mean", "maximize")]
    runner, job = one_job_runner(tmp_path, metrics)
    job = PlannedJob(0, QUICK, {}, "p0", 0, None, "h0", SHAPE)
    run = JobToRun(job, job_dir_for(tmp_path, job), OptunaTrial.at(TrialAddress(url, "s", number), PrunerSettings()))
    request = runner.request(run)
    env = {**os.environ, **request.env, "RLLM_SWEEPS_WARM_SERVER": "off"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    done = subprocess.run(request.argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = JobResult.read(run.job_dir)
    assert len(result.validations) == 2
    stds, means = ([v[k] for v in result.validations] for k in ("val_reward_std", "val_reward_mean"))
    assert result.best == {"val_reward_std": min(stds), "val_reward_mean": max(means)}  # the record's metrics
    reported = optuna.load_study(study_name="s", storage=open_storage(url)).trials[number].intermediate_values
    assert reported == {v["step"]: v["val_reward_mean"] for v in result.validations}  # to the record's trial
    assert json.loads(JobPaths(run.job_dir).launch(1).read_text())["trial"]["trial"] == number
