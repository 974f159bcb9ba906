"""Each SLURM end state read as the sweeper must (launchers/slurm_states.py), on recorded output."""

from __future__ import annotations

from pathlib import Path

import pytest

from launchers.slurm_states import JobWatch, classify_end, is_live, launch_failure
from rllm_sweeps.records.status import FailureKind

DATA = Path(__file__).parent / "data" / "slurm_logs"
# What srun printed when slurmd died while it launched the job's step (recorded on the local cluster).
STEP_LAUNCH_LOG = (DATA / "step_launch_failed.err").read_text()
USER_CRASH_LOG = (DATA / "user_crash.err").read_text()
# The end of the log of a job warned before its time limit with its one requeue spent (local cluster).
REQUEUES_SPENT_LOG = (DATA / "requeues_spent.err").read_text()


def test_a_step_slurm_could_not_launch_is_an_infrastructure_failure_with_srun_s_reason():
    end = classify_end("FAILED", STEP_LAUNCH_LOG, started=False)
    assert end.kind == FailureKind.INFRASTRUCTURE and end.failure is not None
    assert "Task launch for StepId=" in end.reason and "failed on node" in end.reason


def test_a_crash_of_the_jobs_own_code_is_a_user_failure():
    end = classify_end("FAILED", USER_CRASH_LOG, started=True)
    assert end.kind == FailureKind.USER and end.failure is None and end.returncode == 1
    assert launch_failure(USER_CRASH_LOG) is None


def test_a_job_that_failed_before_its_process_started_and_left_no_log_is_infrastructure():
    assert classify_end("FAILED", "", started=False).kind == FailureKind.INFRASTRUCTURE
    assert classify_end("FAILED", "", started=True).kind == FailureKind.USER


@pytest.mark.parametrize(
    "state, kind",
    [
        ("COMPLETED", None),
        ("NODE_FAIL", FailureKind.INFRASTRUCTURE),
        ("BOOT_FAIL", FailureKind.INFRASTRUCTURE),
        ("OUT_OF_MEMORY", FailureKind.INFRASTRUCTURE),
        ("PREEMPTED", FailureKind.INFRASTRUCTURE),
        ("REVOKED", FailureKind.INFRASTRUCTURE),
        ("CANCELLED by 0", FailureKind.USER),
        ("TIMEOUT", FailureKind.TIME_LIMIT),
        ("DEADLINE", FailureKind.USER),
        ("SPECIAL_EXIT", FailureKind.USER),
        ("SOMETHING_NEW", FailureKind.USER),
    ],
)
def test_every_terminal_state_has_a_kind_and_a_reason(state, kind):
    end = classify_end(state)
    assert end.kind == kind and end.reason
    assert (end.failure is not None) == (kind == FailureKind.INFRASTRUCTURE)
    assert end.returncode == (0 if kind is None else 1)


def test_a_job_warned_before_its_time_limit_with_its_requeues_spent_is_a_time_limit_failure_not_the_users_crash():
    end = classify_end("FAILED", REQUEUES_SPENT_LOG)
    assert end.kind == FailureKind.TIME_LIMIT and end.failure is None and end.returncode == 1
    assert "requeues spent" in end.reason and "resources.time_min" in end.reason and "max_requeues" in end.reason
    assert classify_end("FAILED", USER_CRASH_LOG).kind == FailureKind.USER


def test_a_timed_out_job_is_told_how_to_give_it_more_time():
    reason = classify_end("TIMEOUT").reason
    assert "requeues spent" in reason and "resources.time_min" in reason and "max_requeues" in reason


@pytest.mark.parametrize("state", ["PENDING", "RUNNING", "REQUEUED", "REQUEUE_HOLD", "SUSPENDED", "COMPLETING"])
def test_queued_and_running_states_are_live(state):
    assert is_live(state)


@pytest.mark.parametrize("state", ["COMPLETED", "FAILED", "CANCELLED by 0", "NODE_FAIL", "OUT_OF_MEMORY", "UNKNOWN"])
def test_ended_states_are_not_live(state):
    assert not is_live(state)


def test_a_state_a_requeue_may_follow_counts_as_live_for_reattachment():
    assert is_live("TIMEOUT") and is_live("PREEMPTED")


def watch(states: list[tuple[float, str]], last_ended: str | None = None, grace: float = 30.0):
    """Feed a job's polled sacct states (time, state) to a JobWatch: the first end seen, with its time."""
    w = JobWatch(requeue_grace_s=grace)
    for t, state in states:
        ended = w.observe(state, t, lambda: last_ended)
        if ended is not None:
            return t, ended
    return None


def test_a_job_that_runs_and_completes_ends_completed():
    assert watch([(0, "PENDING"), (2, "RUNNING"), (4, "RUNNING"), (6, "COMPLETED")]) == (6, ("COMPLETED", False))


def test_a_time_limit_that_submitit_requeues_is_not_the_end():
    # TIMEOUT for a moment, then the requeued job pends and runs again.
    states = [(0, "RUNNING"), (60, "TIMEOUT"), (62, "PENDING"), (64, "RUNNING"), (100, "COMPLETED")]
    assert watch(states, last_ended="TIMEOUT") == (100, ("COMPLETED", False))


def test_a_time_limit_that_stays_ends_the_job_after_the_grace():
    states = [(0, "RUNNING"), (60, "TIMEOUT"), (75, "TIMEOUT"), (91, "TIMEOUT")]
    assert watch(states, grace=30) == (91, ("TIMEOUT", False))


def test_a_node_failure_slurm_requeued_at_once_is_found_through_the_last_run():
    # sacct never showed NODE_FAIL to the poller: RUNNING, then PENDING again (JobRequeue=1).
    states = [(0, "RUNNING"), (40, "PENDING"), (42, "PENDING")]
    assert watch(states, last_ended="NODE_FAIL") == (40, ("NODE_FAIL", True))


def test_a_requeue_asked_for_with_scontrol_is_not_an_end():
    states = [(0, "RUNNING"), (10, "PENDING"), (12, "RUNNING"), (30, "COMPLETED")]
    assert watch(states, last_ended="REQUEUED") == (30, ("COMPLETED", False))


def test_a_fresh_job_sacct_does_not_know_yet_is_live():
    assert watch([(0, "UNKNOWN"), (1, "PENDING"), (3, "RUNNING")]) is None


def test_a_job_that_fails_ends_failed_and_one_cancelled_by_hand_ends_cancelled():
    assert watch([(0, "RUNNING"), (5, "FAILED")]) == (5, ("FAILED", False))
    assert watch([(0, "PENDING"), (5, "CANCELLED by 0")]) == (5, ("CANCELLED", False))
