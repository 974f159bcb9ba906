"""What goes wrong on a cluster, on the real local SLURM cluster: time limits, user errors.

A node whose daemon dies (NODE_FAIL, retried, resumed, the old attempt fenced off) is in
tests/test_slurm_chaos.py, with the other faults a sweep must survive.

Training steps are made slow on purpose (tests/probes/slow_reward.py, a sleep per reward
call) so that a job outlives its time limit, or a node failure, whatever the machine's load.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_slurm_sweep import QUICK

from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.result import JobResult

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.slurm]
# 32 reward calls per step at SLOW_REWARD_S (20 ms: every step takes at least 0.64 s).
SLOW = [
    "task.reward=tests.probes.slow_reward:slow_reward",
    "data.train_batch_size=8",
    "trainer.mini_batch_size=4",
    "rollout.n=4",
]


def start_sweep(sweep_dir: Path, *args: str, slow: bool = True, reward_s: float = 0.02) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(REPO / "train.py"), "-m", *QUICK, *(SLOW if slow else []), *args, "cluster=local"]
        + [f"hydra.sweep.dir={sweep_dir}"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "SLOW_REWARD_S": str(reward_s)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(predicate, what: str, sweeper: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if sweeper.poll() is not None or time.monotonic() > deadline:
            sweeper.kill()
            pytest.fail(f"{what}: not seen within {timeout:.0f}s\n{sweeper.stdout.read()[-3000:]}")
        time.sleep(0.5)


def train_steps(job_dir: Path) -> list[int]:
    return [r["step"] for r in read_metrics(job_dir) if r["kind"] == "train"]


def test_a_job_longer_than_its_time_limit_is_checkpointed_requeued_and_finishes(slurm_env, tmp_path):
    # At least 192 s of training (50 steps of >= 3.84 s, the reward's sleeps: little CPU, so it runs
    # beside the rest of the suite) against a 3-minute limit whose warning comes 30 s early (+-30 s:
    # SLURM checks limits every ~30 s). An attempt trains at most ~165 s after its start-up, so the
    # job needs at least one requeue; the warning lands 120-180 s after the attempt's start, past the
    # ~70 s start-up of a loaded machine, so every attempt saves progress. It may take up to 5.
    sweeper = start_sweep(
        tmp_path,
        "trainer.total_batches=50",
        "trainer.save_freq=5",
        "resources.time_min=3",
        "hydra.launcher.signal_delay_s=30",
        "hydra.launcher.max_requeues=5",
        reward_s=0.12,
    )
    out, _ = sweeper.communicate(timeout=1200)
    assert sweeper.returncode == 0, out[-3000:]
    job_dir = next(tmp_path.glob("jobs/*"))
    result = JobResult.read(job_dir)
    assert result.status == "completed" and result.steps == 50
    assert 1 <= result.restarts <= 5, result.restarts  # requeued, within max_requeues
    assert train_steps(job_dir) == list(range(1, 51))  # resumed from checkpoints: continuous


def test_a_user_error_is_not_retried(slurm_env, tmp_path):
    sweeper = start_sweep(tmp_path, "task.reward=tests.probes.failing_reward:broken_reward", slow=False)
    out, _ = sweeper.communicate(timeout=600)
    assert sweeper.returncode == 1, out[-3000:]
    result = JobResult.read(next(tmp_path.glob("jobs/*")))
    assert result.status == "failed" and result.failure_kind == "user" and result.retries == 0
    assert "retrying" not in out
