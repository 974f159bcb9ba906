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

from rllm_sweeps.records.attempts import read_attempts
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


def start_sweep(
    sweep_dir: Path,
    *args: str,
    slow: bool = True,
    reward_s: float = 0.02,
    launcher: tuple[str, ...] = ("cluster=local",),
) -> subprocess.Popen:
    quick = QUICK if launcher == ("cluster=local",) else [a for a in QUICK if not a.startswith("resources.")]
    return subprocess.Popen(
        [sys.executable, str(REPO / "train.py"), "-m", *quick, *(SLOW if slow else []), *args, *launcher]
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


def test_a_job_whose_requeues_are_spent_before_it_finishes_fails_as_time_limit_with_the_fix(slurm_env, tmp_path):
    # 200 steps of >= 3.84 s (the reward's sleeps: little CPU) against a 1-minute limit and one
    # requeue, written in hydra-submitit-launcher's names: the first warning requeues the job, which
    # resumes; at the second submitit will not requeue it again. The job saw only the SIGTERM that
    # stopped it (a preemption, to it); the sweep records the time-limit failure it is, with the fix.
    submitit = ["hydra/launcher=submitit_slurm", "hydra.launcher.partition=debug", "hydra.launcher.timeout_min=1"]
    submitit += ["hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=4", "hydra.launcher.signal_delay_s=30"]
    sweeper = start_sweep(
        tmp_path,
        "trainer.total_batches=200",
        "trainer.save_freq=5",
        reward_s=0.12,
        launcher=(*submitit, "hydra.launcher.max_num_timeout=1"),
    )
    out, _ = sweeper.communicate(timeout=900)
    assert sweeper.returncode == 1, out[-3000:]
    job_dir = next(tmp_path.glob("jobs/*"))
    result = JobResult.read(job_dir)
    assert result.status == "failed" and result.failure_kind == "time-limit", (result.status, out[-4000:])
    assert "requeues spent" in result.error and "resources.time_min" in result.error and result.retries == 0
    assert "1 of the failed jobs reached their time limit with their requeues spent" in out
    # Requeued once, as max_num_timeout says (two incarnations of one SLURM job), and resumed: no step twice.
    runs = read_attempts(job_dir)
    assert [a.restart_count for a in runs] == [0, 1] and len({a.scheduler_id for a in runs}) == 1
    steps = train_steps(job_dir)
    assert steps == list(range(1, len(steps) + 1)), steps


def test_a_user_error_is_not_retried(slurm_env, tmp_path):
    sweeper = start_sweep(tmp_path, "task.reward=tests.probes.failing_reward:broken_reward", slow=False)
    out, _ = sweeper.communicate(timeout=600)
    assert sweeper.returncode == 1, out[-3000:]
    result = JobResult.read(next(tmp_path.glob("jobs/*")))
    assert result.status == "failed" and result.failure_kind == "user" and result.retries == 0
    assert "retrying" not in out
