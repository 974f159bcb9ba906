"""A workflow job on the real local SLURM cluster: the solver-judge workflow through RayJaxBackend
(skyrl.jax.use_ray=true) with 2 JAX processes on the job's Ray cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rllm_sweeps.records.attempts import latest_scheduler_id
from rllm_sweeps.records.result import JobResult

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.slurm]
QUICK = [
    "trainer.total_batches=2",
    "trainer.val_before_train=false",
    "trainer.test_freq=0",
    "trainer.save_freq=-1",
    "task.dataset.val_size=8",
    "data.train_batch_size=8",
    "rollout.n=4",
    "resources.cpus_per_task=2",  # one CPU per JAX process (RayJaxBackend's actors ask one each)
    "resources.mem_gb=8",
    "resources.time_min=15",
]


def test_a_solver_judge_job_trains_on_slurm_through_ray_jax_backend_with_two_processes(slurm_env, tmp_path):
    sweep_dir = tmp_path / "sweep"
    args = ["workflow=solver_judge", "skyrl.jax.use_ray=true", "skyrl.jax.num_processes=2"]
    proc = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "-m", *QUICK, *args, "cluster=local", f"hydra.sweep.dir={sweep_dir}"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (job_dir,) = [p.parent for p in sweep_dir.glob("jobs/*/result.json")]
    result = JobResult.read(job_dir)
    assert result.status == "completed" and result.steps == 2
    assert result.backend == "RayJaxBackend" and result.processes == 2
    assert {"val_solver_acc", "val_judge_acc"} <= set(result.final) and result.final["val_turns_mean"] == 3.0
    assert latest_scheduler_id(job_dir)  # it ran as a SLURM job
