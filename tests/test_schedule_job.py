"""A job trains with the schedule in its directory (records/schedule.py): a PBT trial's or a
replay's settings per step range, read afresh at each step. Real SkyRL (JAX on CPU)."""

from __future__ import annotations

import pytest
from test_job import run_job, train_steps

from rllm_sweeps.records.schedule import Parent, Schedule, Segment, write_schedule
from rllm_sweeps.results import JobResult, read_metrics

pytestmark = pytest.mark.slow


def test_a_job_changes_its_settings_where_its_schedule_says(tmp_path):
    job_dir = tmp_path / "job"
    write_schedule(job_dir, Schedule((Segment(0, {"lr": 1e-5}), Segment(2, {"lr": 4e-5}, Parent(1, 2)))))
    done = run_job(job_dir, "trainer.total_batches=3", "trainer.test_freq=3", "trainer.lr=2e-5")
    assert done.returncode == 0, done.stdout[-3000:]
    assert JobResult.read(job_dir).status == "completed"
    assert train_steps(job_dir) == [1, 2, 3]
    lrs = [r["lr"] for r in read_metrics(job_dir) if r["kind"] == "train"]
    assert lrs == pytest.approx([1e-5, 1e-5, 4e-5])
