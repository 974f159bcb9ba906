"""`method: optuna` end to end on the local launcher: real training jobs (tiny model, a few
steps), real Optuna, real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from rllm_sweeps.records.result import JobResult
from rllm_sweeps.study import open_storage

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
# The shipped example as it is, with shorter jobs: 4 steps on 8 prompts, a validation after
# each step (the example's ASHA has its first rung at step 3: a pruned trial stops there).
SHORT = ["trainer.total_batches=4", "trainer.test_freq=1", "data.train_batch_size=8", "task.dataset.val_size=8"]
FINISHED = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)


def sweep_cmd(sweep_dir: Path, *args: str) -> list[str]:
    return [sys.executable, str(REPO / "train.py"), "-m", "+sweep=lr_optuna", *args, f"hydra.sweep.dir={sweep_dir}"]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def run(sweep_dir: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    cmd = sweep_cmd(sweep_dir, *args)
    return subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=timeout)


def load_study(sweep_dir: Path) -> optuna.Study:
    """The study as anyone opens it: Optuna's own load_study on the journal in the sweep directory."""
    return optuna.load_study(study_name=sweep_dir.name, storage=open_storage(str(sweep_dir / "optuna.journal")))


def job_results(sweep_dir: Path) -> dict[str, JobResult]:
    return {p.parent.name: JobResult.read(p.parent) for p in sorted(sweep_dir.glob("jobs/*/result.json"))}


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """conf/sweep/lr_optuna.yaml (12 trials, 3 at a time, TPE + ASHA), run once for the tests below."""
    sweep_dir = tmp_path_factory.mktemp("lr_optuna")
    return sweep_dir, run(sweep_dir, *SHORT)


def test_the_shipped_example_runs_12_trials_3_at_a_time_prints_the_best_and_its_study_loads(example):
    sweep_dir, proc = example
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    study = load_study(sweep_dir)
    trials = study.get_trials()
    assert sum(t.state in FINISHED for t in trials) == 12
    assert sorted(t.number for t in trials) == list(range(len(trials)))
    best = study.best_trial
    assert f"best trial #{best.number}: val_reward_mean (maximize) = " in proc.stdout
    assert f"best parameters: trainer.lr={best.params['trainer.lr']!r}" in proc.stdout
    # Never more than 3 jobs at once (their recorded spans), and every slot refilled at once:
    # each trial after the first 3 was asked within seconds of another trial's end.
    spans = sorted((r.started_at, r.ended_at) for r in job_results(sweep_dir).values())
    assert len(spans) == 12
    for t, _ in spans:
        assert sum(1 for s, e in spans if s <= t < e) <= 3
    ends = [t.datetime_complete.timestamp() for t in trials]
    for t in sorted(trials, key=lambda t: t.number)[3:]:
        waited = min(t.datetime_start.timestamp() - end for end in ends if end <= t.datetime_start.timestamp())
        assert waited < 3.0, f"trial {t.number} was asked {waited:.1f}s after a slot freed"
    report = sweep_dir / "report"
    for name in ("optuna_intermediate_values.png", "optuna_timeline.png", "jobs.csv"):
        assert (report / name).stat().st_size > 0
    complete = sum(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    assert (report / "optuna_history.png").exists() == (complete >= 2)  # one completed trial is no history
    assert "optuna-dashboard" in (report / "report.md").read_text()


def test_asha_prunes_a_trial_at_a_validation_before_its_last_step(example):
    sweep_dir, proc = example
    assert proc.returncode == 0, proc.stderr[-3000:]
    study = load_study(sweep_dir)
    pruned = [r for r in job_results(sweep_dir).values() if r.status == "pruned"]
    assert pruned and all(r.steps < 4 for r in pruned)  # stopped early, at the pruner's step
    assert any(r.status == "completed" and r.steps == 4 for r in job_results(sweep_dir).values())
    for trial in study.get_trials(states=(optuna.trial.TrialState.PRUNED,)):
        (job,) = trial.user_attrs["jobs"]
        result = JobResult.read(sweep_dir / "jobs" / job)
        assert result.status == "pruned" and result.steps == max(trial.intermediate_values)
        # Stopped cleanly at that step: a checkpoint of it, and the job's Ray processes gone.
        assert (sweep_dir / "jobs" / job / "checkpoints" / f"step_{result.steps}").is_dir()
        # It exports what it had: its policy at that step (issue 55).
        final = result.exports.final
        assert final is not None and final.step == result.steps
        assert (sweep_dir / "jobs" / job / final.path / "adapter_model.safetensors").is_file()
        for pid in json.loads((sweep_dir / "jobs" / job / "ray.json").read_text())["pids"]:
            assert not Path(f"/proc/{pid}").exists()


def test_a_killed_sweeper_resumes_the_study_to_exactly_its_budget_with_no_duplicate_trials(tmp_path):
    args = sweep_cmd(tmp_path, *SHORT, "sweep.budget=4", "sweep.parallel=2")
    sweeper = subprocess.Popen(args, cwd=REPO, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    journal = tmp_path / "optuna.journal"
    while True:
        assert sweeper.poll() is None and time.monotonic() < deadline
        if journal.exists() and sum(t.state in FINISHED for t in load_study(tmp_path).get_trials()) >= 2:
            break
        time.sleep(1)
    sweeper.kill()  # SIGKILL: no chance to tell Optuna anything
    sweeper.wait()
    before = load_study(tmp_path).get_trials()
    time.sleep(3)  # its running jobs got SIGTERM (parent death) and checkpoint/exit

    again = subprocess.run(args, cwd=REPO, env=env(), capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    trials = load_study(tmp_path).get_trials()
    assert sum(t.state in FINISHED for t in trials) == 4  # exactly the budget
    assert sorted(t.number for t in trials) == list(range(len(trials)))  # no number twice
    assert not [t for t in trials if t.state == optuna.trial.TrialState.RUNNING]
    for t in trials:
        if t.state == optuna.trial.TrialState.FAIL:  # left running by the killed sweeper
            assert "the sweeper died" in t.user_attrs["failed_because"]
    for old in before:
        if old.state in FINISHED:  # finished before the kill: kept, not run again
            assert trials[old.number].state == old.state and trials[old.number].values == old.values
    assert "jobs already completed" in again.stdout


def test_a_metric_the_training_never_reports_is_refused_before_any_trial_runs(tmp_path):
    proc = run(tmp_path, "sweep.metric=val_accuracy", "sweep.budget=1", "sweep.parallel=1", *SHORT, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "'val_accuracy' is not a metric the jobs report" in proc.stderr and "val_reward_mean" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert job_results(tmp_path) == {}  # nothing ran


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("sweep.optuna.sampler=tpee", "unknown sampler 'tpee'; did you mean 'tpe'?"),
        ("sweep.optuna.pruner=hyperbnd", "unknown pruner 'hyperbnd'; did you mean 'hyperband'?"),
        ("trainer.lr=tag(log,interval(0,1e-2))", "log_uniform_values needs min > 0, got min=0"),
        ("sweep.parallel=0", "parallel is an integer >= 1, got 0"),
        ("hydra.sweeper.parallel=0", "parallel=0 is invalid"),
    ],
    ids=["unknown-sampler", "unknown-pruner", "bad-bounds", "parallel-0", "hydra-parallel-0"],
)
def test_bad_input_is_rejected_before_anything_launches(tmp_path, bad, message):
    proc = run(tmp_path / "sweep", bad, timeout=120)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert message in proc.stderr and proc.stderr.count("error:") == 1
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "sweep").exists()  # no study, no job


# W&B's grid + hyperband (the shape of W&B's examples' sweep-grid-hyperband.yaml), as small as still
# shows pruning: 3 learning rates, 2 steps, a bracket at step 1, one trial at a time (the order the
# grid sampler's seed gives, so that which trials stop is the same on every run).
GRID_HYPERBAND = """\
program: train.py
method: grid
metric: {name: val_reward_mean, goal: maximize}
parameters:
  trainer.lr: {values: [3.0e-2, 1.0e-4, 3.0e-3]}
early_terminate: {type: hyperband, min_iter: 1, eta: 2}
"""
TINY = ["trainer.total_batches=2", "trainer.test_freq=1", "trainer.val_before_train=false", "rollout.n=4"]
TINY += ["data.train_batch_size=8", "task.dataset.val_size=8", "sweep.parallel=1"]


def test_a_wandb_grid_with_hyperband_runs_every_point_on_the_local_launcher_stopping_weak_ones_early(tmp_path):
    path = tmp_path / "grid-hyperband.yaml"
    path.write_text(GRID_HYPERBAND)
    sweep_dir = tmp_path / "sweep"
    cmd = [sys.executable, str(REPO / "train.py"), "-m", f"+sweep={path}", *TINY, f"hydra.sweep.dir={sweep_dir}"]
    proc = subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    trials = load_study(sweep_dir).get_trials()
    assert sorted(t.params["trainer.lr"] for t in trials) == [1e-4, 3e-3, 3e-2]  # every grid point, once
    results = list(job_results(sweep_dir).values())
    pruned = [r for r in results if r.status == "pruned"]
    assert pruned and all(r.steps == 1 for r in pruned)  # stopped at the bracket, before the last step
    assert any(r.status == "completed" and r.steps == 2 for r in results)
