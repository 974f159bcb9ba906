"""Sweeps over workflow settings on the local launcher: real jobs of the solver-judge workflow
(tiny model, one step or a few), real processes, real Optuna; per-role metrics in the records and the
report, and as the metric Optuna searches and prunes on."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from rllm_sweeps.records.result import JobResult
from rllm_sweeps.study import open_storage

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
# One step on 8 prompts x 4 episodes (no assertion counts steps), one validation at the end on 8 prompts.
QUICK = ["trainer.total_batches=1", "trainer.val_before_train=false", "trainer.test_freq=0", "task.dataset.val_size=8"]
QUICK += ["data.train_batch_size=8", "rollout.n=4", "trainer.save_freq=-1"]


def sweep(sweep_dir: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(REPO / "train.py"), "-m", "workflow=solver_judge", *args, f"hydra.sweep.dir={sweep_dir}"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def job_results(sweep_dir: Path) -> list[JobResult]:
    return [JobResult.read(p.parent) for p in sorted(sweep_dir.glob("jobs/*/result.json"))]


def test_a_grid_over_n_solutions_and_lr_runs_four_jobs_with_per_role_metrics_in_records_and_report(tmp_path):
    proc = sweep(
        tmp_path,
        *QUICK,
        "workflow.n_solutions=1,2",
        "trainer.lr=1e-3,3e-3",
        "sweep.metric=[{name: val_judge_acc},{name: val_solver_acc}]",
        "hydra.sweeper.parallel=2",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = job_results(tmp_path)
    assert len(results) == 4 and all(r.status == "completed" for r in results)
    for r in results:
        n = 1 if "workflow.n_solutions=1" in r.overrides else 2
        assert r.final["val_turns_mean"] == n + 1  # n solvers + the judge
        assert r.final["val_num_samples"] == 8 * (n + 1)  # trajectories: 8 val prompts x (n + 1)
        assert {"val_solver_acc", "val_judge_acc"} <= set(r.final) and "val_judge_acc" in r.validations[-1]
    assert "val_judge_acc" in proc.stdout  # the sweep's table
    rows = list(csv.DictReader((tmp_path / "report" / "jobs.csv").open()))
    assert len(rows) == 4 and all(row["val_judge_acc_final"] != "" for row in rows)
    assert "val_judge_acc" in (tmp_path / "report" / "report.md").read_text()


def test_optuna_searches_and_prunes_on_the_judges_accuracy(tmp_path):
    # A judge counts as right when it names a solution (workflow.correct_reward=0): after a step or
    # two the trials' judge accuracies differ, and ASHA (rung at every validation, keep the top
    # half) prunes on them. One trial at a time: each trial's rung sees the earlier trials'
    # values, so what is pruned does not depend on which job validates first. 3 steps: rungs at
    # steps 1 and 2 (seed 0: the second trial is pruned at step 1; a 4th step changed nothing).
    steps = 3
    proc = sweep(
        tmp_path,
        "trainer.lr=tag(log,interval(1e-4,3e-2))",
        "sweep.method=optuna",
        "sweep.metric=val/judge_acc",  # rLLM's spelling of val_judge_acc
        "sweep.budget=3",
        "sweep.parallel=1",
        "sweep.seed=0",
        "sweep.optuna.pruner=asha",
        "sweep.optuna.pruner_options={min_resource: 1, reduction_factor: 2}",
        "workflow.correct_reward=0.0",
        f"trainer.total_batches={steps}",
        "trainer.test_freq=1",
        "trainer.val_before_train=false",
        "trainer.save_freq=-1",
        "data.train_batch_size=8",
        "task.dataset.val_size=8",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    study = optuna.load_study(study_name=tmp_path.name, storage=open_storage(str(tmp_path / "optuna.journal")))
    trials = study.get_trials()
    finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    assert sum(t.state in finished for t in trials) == 3
    # Every trial's intermediate values are the judge's accuracy at its validations: what the pruner saw.
    for t in trials:
        (job,) = t.user_attrs["jobs"]
        result = JobResult.read(tmp_path / "jobs" / job)
        reported = {v["step"]: v["val_judge_acc"] for v in result.validations}
        assert t.intermediate_values and all(reported[s] == v for s, v in t.intermediate_values.items())
        if t.state == optuna.trial.TrialState.PRUNED:
            assert result.status == "pruned" and result.steps < steps
    pruned = [t for t in trials if t.state == optuna.trial.TrialState.PRUNED]
    assert pruned, [(t.number, t.intermediate_values) for t in trials]
    assert f"best trial #{study.best_trial.number}: val_judge_acc (maximize) = " in proc.stdout
