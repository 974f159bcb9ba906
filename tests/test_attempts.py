"""A job's attempt records and fencing (rllm_sweeps/records/attempts.py)."""

from __future__ import annotations

import json

from rllm_sweeps.records import attempts
from rllm_sweeps.records.attempt_events import Submitted
from rllm_sweeps.records.launch import LAUNCH_ENV, JobLaunch, judged_metrics
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.metrics import best_values
from rllm_sweeps.records.plan import Metric
from rllm_sweeps.records.result import JobResult


def test_each_start_is_paired_with_its_end_and_an_attempt_killed_with_its_wrapper_stays_open(tmp_path):
    attempts.record_start(tmp_path, "7", restart_count=0, generation=1)
    attempts.record_end(tmp_path, "7", 143, generation=1)
    attempts.record_start(tmp_path, "7", restart_count=1, generation=1)  # SLURM requeued it
    runs = attempts.read_attempts(tmp_path)
    assert [(a.scheduler_id, a.restart_count, a.exit_code) for a in runs] == [("7", 0, 143), ("7", 1, None)]
    assert runs[0].duration_s is not None and runs[1].ended_at is None


def test_an_attempts_end_is_seen_only_for_that_scheduler_job_and_requeue(tmp_path):
    # What a multi-node job's other nodes read to leave when rank 0's train.py was killed outright.
    attempts.record_start(tmp_path, "7_0", restart_count=0, generation=1)
    assert not attempts.attempt_ended(tmp_path, "7_0", 0)
    attempts.record_end(tmp_path, "7_0", -9, generation=1)
    assert attempts.attempt_ended(tmp_path, "7_0", 0)
    # SLURM requeued it: the first attempt's end is not the second's.
    assert not attempts.attempt_ended(tmp_path, "7_0", 1)
    attempts.record_start(tmp_path, "7_0", restart_count=1, generation=1)
    assert not attempts.attempt_ended(tmp_path, "7_0", 1)
    attempts.record_start(tmp_path, "8", restart_count=1, generation=2)  # another scheduler job
    attempts.record_end(tmp_path, "8", 0, generation=2)
    assert not attempts.attempt_ended(tmp_path, "7_0", 1)
    attempts.record_end(tmp_path, "7_0", 0, generation=1)
    assert attempts.attempt_ended(tmp_path, "7_0", 1)


def test_total_time_counts_every_attempt_not_only_the_last(tmp_path):
    lines = [
        {"event": "start", "time": 100.0, "scheduler_id": "7", "generation": 1},
        {"event": "end", "time": 130.0, "scheduler_id": "7", "generation": 1},
        {"event": "start", "time": 200.0, "scheduler_id": "8", "generation": 2},
    ]
    JobPaths(tmp_path).attempts.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"cut')
    runs = attempts.read_attempts(tmp_path)  # a line cut short by a crash is skipped
    assert attempts.total_time_s(runs, last_end=250.0) == 30.0 + 50.0


def test_the_sweepers_submissions_are_remembered_newest_last(tmp_path):
    assert attempts.latest_scheduler_id(tmp_path) is None
    attempts.append_event(tmp_path, Submitted(time=1.0, scheduler_id="11_0", folder="/f", generation=1))
    attempts.append_event(tmp_path, Submitted(time=2.0, scheduler_id="12", folder=None, generation=2))
    assert [s.scheduler_id for s in attempts.submissions(tmp_path)] == ["11_0", "12"]
    assert attempts.latest_scheduler_id(tmp_path) == "12"


def test_a_superseded_attempt_may_not_write_and_the_current_one_may(tmp_path):
    first = attempts.raise_generation(tmp_path)
    old = attempts.AttemptFence(tmp_path, generation=first)
    assert old.current()
    second = attempts.raise_generation(tmp_path)  # the sweeper launched the job again
    new = attempts.AttemptFence(tmp_path, generation=second)
    with old.writing() as may:
        assert not may
    with new.writing() as may:
        assert may
    assert "superseded" in old.why_stale()


def test_a_job_run_by_hand_is_never_fenced(tmp_path, monkeypatch):
    monkeypatch.delenv(LAUNCH_ENV, raising=False)
    attempts.raise_generation(tmp_path)
    assert attempts.AttemptFence(tmp_path).current()


def test_best_follows_each_metrics_goal():
    history = [
        {"step": 1, "val_loss": 0.9, "val_reward_mean": 0.2},
        {"step": 2, "val_loss": 0.5, "val_reward_mean": 0.1},
    ]
    goals = judged_metrics(JobLaunch(1, "", (Metric("val_loss", "minimize"), Metric("val_reward_mean", "maximize"))))
    assert best_values(history, goals) == {"val_loss": 0.5, "val_reward_mean": 0.2}
    assert judged_metrics(None) == [("val_reward_mean", "maximize")]  # no sweep: the default


def test_an_old_result_without_the_new_fields_still_reads(tmp_path):
    (tmp_path / "result.json").write_text(json.dumps({"status": "completed", "config_hash": "x", "best": {"a": 1}}))
    result = JobResult.read(tmp_path)
    assert result.attempts == 1 and result.validations == []
