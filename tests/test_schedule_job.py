"""A job trains with the schedule in its directory (records/schedule.py): a PBT trial's or a
replay's settings per step range, read afresh at each step; `rllm-sweeps rerun` trains it
again from its records alone. Real SkyRL (JAX on CPU)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_job import REPO, job_env, run_job, train_steps

from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.schedule import Parent, Schedule, Segment, write_schedule
from rllm_sweeps.rerun import drift

pytestmark = pytest.mark.slow

SCHEDULE = Schedule((Segment(0, {"lr": 1e-5}), Segment(2, {"lr": 4e-5}, Parent(1, 2))))


def _per_step(job_dir) -> list[dict]:  # noqa: ANN001
    """Each step's metrics but its times (wall clock differs from run to run)."""
    return [
        {k: v for k, v in r.items() if not k.startswith("time")}
        for r in read_metrics(job_dir)
        if r["kind"] in ("train", "val")
    ]


def test_a_job_follows_its_schedule_and_a_rerun_from_its_records_gives_identical_metrics(tmp_path):
    job_dir = tmp_path / "job"
    write_schedule(job_dir, SCHEDULE)
    done = run_job(job_dir, "trainer.total_batches=3", "trainer.test_freq=3", "trainer.lr=2e-5")
    assert done.returncode == 0, done.stdout[-3000:]
    assert JobResult.read(job_dir).status == "completed"
    assert train_steps(job_dir) == [1, 2, 3]
    lrs = [r["lr"] for r in read_metrics(job_dir) if r["kind"] == "train"]
    assert lrs == pytest.approx([1e-5, 1e-5, 4e-5])  # the schedule's, not trainer.lr's

    out = tmp_path / "again"
    rerun = subprocess.run(
        [sys.executable, "-m", "rllm_sweeps.cli", "rerun", str(job_dir), "--out", str(out)],
        cwd=REPO,
        env=job_env(),
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert JobResult.read(out).status == "completed"
    assert _per_step(out) == _per_step(job_dir)
    # The comparison covers the rewards and losses of every step, not only the step numbers.
    assert all("reward_mean" in r for r in _per_step(out) if r["kind"] == "train")


def test_a_rerun_warns_of_each_difference_in_code_or_packages() -> None:
    recorded = JobResult(
        status="completed", config_hash="x", versions={"skyrl": "0.4.0", "jax": "0.5"}, git_revision="a"
    )
    assert drift(recorded, {"skyrl": "0.4.0", "jax": "0.5"}, "a") == []
    lines = drift(recorded, {"skyrl": "0.4.1"}, "b")
    assert lines == [
        "git revision b differs from the recorded a",
        "jax not installed differs from the recorded 0.5",
        "skyrl 0.4.1 differs from the recorded 0.4.0",
    ]
