"""The Optuna search on the real local SLURM cluster: its trials are SLURM jobs that report to
the study (journal file on the shared file system) and are told as they end."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import optuna
import pytest
from test_slurm_sweep import sacct_jobs

from rllm_sweeps.results import JobResult
from rllm_sweeps.study import open_storage

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.slurm]
SHORT = [
    "trainer.total_batches=4",
    "trainer.test_freq=1",
    "data.train_batch_size=8",
    "task.dataset.val_size=8",
    "resources.cpus_per_task=1",  # two jobs fit on the 2-CPU node at once
    "resources.mem_gb=4",
    "resources.time_min=10",
]


def test_the_shipped_example_runs_its_trials_as_slurm_jobs_and_its_study_loads(slurm_env, tmp_path):
    """conf/sweep/lr_optuna.yaml with cluster=local. Its budget is cut from 12 trials to 4 (2 at a
    time, not 3) on the command line: the CI cluster is one 2-CPU node, and 12 SLURM jobs would
    add minutes to CI; the 12-trial run is tests/test_optuna.py on the local launcher."""
    since = datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "train.py"),
            "-m",
            "+sweep=lr_optuna",
            *SHORT,
            "sweep.budget=4",
            "sweep.parallel=2",
            "cluster=local",
            f"hydra.sweep.dir={tmp_path}",
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    study = optuna.load_study(study_name=tmp_path.name, storage=open_storage(str(tmp_path / "optuna.journal")))
    finished = [t for t in study.get_trials() if t.state.is_finished() and t.state != optuna.trial.TrialState.FAIL]
    assert len(finished) == 4
    assert f"best parameters: trainer.lr={study.best_trial.params['trainer.lr']!r}" in proc.stdout
    # Every trial's job ran as a SLURM job and reported from there (each has intermediate values).
    names = {f"rllm-{p.name}" for p in tmp_path.glob("jobs/*")}
    jobs = [j for j in sacct_jobs("rllm-", since) if j["name"] in names]
    assert len(jobs) == len(names) == 4 and {j["state"] for j in jobs} == {"COMPLETED"}, jobs  # pruned exits 0
    assert all(t.intermediate_values for t in finished)
    results = [JobResult.read(p.parent) for p in tmp_path.glob("jobs/*/result.json")]
    status = {optuna.trial.TrialState.COMPLETE: "completed", optuna.trial.TrialState.PRUNED: "pruned"}
    assert sorted(r.status for r in results) == sorted(status[t.state] for t in finished)
