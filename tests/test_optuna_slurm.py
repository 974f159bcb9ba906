"""The Optuna search on the real local SLURM cluster: its trials are SLURM jobs that report to
the study (journal file on the shared file system) and are told as they end."""

from __future__ import annotations

import re
import subprocess
from datetime import datetime
from pathlib import Path

import optuna
import pytest
from test_optuna import FINISHED, SHORT, env, load_study, sweep_cmd
from test_slurm_sweep import sacct_jobs

from rllm_sweeps.records.result import JobResult

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.slurm]
# The shipped example as tests/test_optuna.py runs it (4-step jobs), sized for the CI node.
SLURM_SHORT = [*SHORT, "resources.cpus_per_task=1", "resources.mem_gb=4", "resources.time_min=10"]
TRIALS = 4


def test_the_shipped_example_runs_its_trials_3_at_a_time_as_slurm_jobs_and_its_study_loads(slurm_env, tmp_path):
    """conf/sweep/lr_optuna.yaml with cluster=local, on a budget of 4 trials (tests/test_optuna.py
    runs all 12 of the example locally), 3 in flight. The CI node has 2 CPUs, so SLURM runs two of
    the three at once and queues the third."""
    since = datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    proc = subprocess.run(
        sweep_cmd(tmp_path, *SLURM_SHORT, f"sweep.budget={TRIALS}", "cluster=local"),
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    study = load_study(tmp_path)
    trials = study.get_trials()
    finished = [t for t in trials if t.state in FINISHED]
    assert len(finished) == TRIALS and sorted(t.number for t in trials) == list(range(len(trials)))
    assert max(int(n) for n in re.findall(r"(\d+) in flight", proc.stdout)) == 3  # parallel=3
    assert f"best parameters: trainer.lr={study.best_trial.params['trainer.lr']!r}" in proc.stdout
    # Every trial's job ran as a SLURM job and reported from there (each has intermediate values).
    names = {f"rllm-{p.name}" for p in tmp_path.glob("jobs/*")}
    jobs = [j for j in sacct_jobs("rllm-", since) if j["name"] in names]
    assert len(jobs) == len(names) == TRIALS and {j["state"] for j in jobs} == {"COMPLETED"}, jobs  # pruned exits 0
    assert all(t.intermediate_values for t in finished)
    results = [JobResult.read(p.parent) for p in tmp_path.glob("jobs/*/result.json")]
    status = {optuna.trial.TrialState.COMPLETE: "completed", optuna.trial.TrialState.PRUNED: "pruned"}
    assert sorted(r.status for r in results) == sorted(status[t.state] for t in finished)
