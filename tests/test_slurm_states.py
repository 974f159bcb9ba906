"""Each SLURM end state read as the sweeper must (launchers/slurm_states.py), on recorded output."""

from __future__ import annotations

from pathlib import Path

import pytest

from launchers.slurm_states import INFRASTRUCTURE, USER, classify_end, is_live, launch_failure

DATA = Path(__file__).parent / "data" / "slurm_logs"
# What srun printed when slurmd died while it launched the job's step (recorded on the local cluster).
STEP_LAUNCH_LOG = (DATA / "step_launch_failed.err").read_text()
USER_CRASH_LOG = (DATA / "user_crash.err").read_text()


def test_a_step_slurm_could_not_launch_is_an_infrastructure_failure_with_srun_s_reason():
    end = classify_end("FAILED", STEP_LAUNCH_LOG, started=False)
    assert end.kind == INFRASTRUCTURE and end.failure is not None
    assert "Task launch for StepId=" in end.reason and "failed on node" in end.reason


def test_a_crash_of_the_jobs_own_code_is_a_user_failure():
    end = classify_end("FAILED", USER_CRASH_LOG, started=True)
    assert end.kind == USER and end.failure is None and end.returncode == 1
    assert launch_failure(USER_CRASH_LOG) is None


def test_a_job_that_failed_before_its_process_started_and_left_no_log_is_infrastructure():
    assert classify_end("FAILED", "", started=False).kind == INFRASTRUCTURE
    assert classify_end("FAILED", "", started=True).kind == USER


@pytest.mark.parametrize(
    "state, kind",
    [
        ("COMPLETED", None),
        ("NODE_FAIL", INFRASTRUCTURE),
        ("BOOT_FAIL", INFRASTRUCTURE),
        ("OUT_OF_MEMORY", INFRASTRUCTURE),
        ("PREEMPTED", INFRASTRUCTURE),
        ("REVOKED", INFRASTRUCTURE),
        ("CANCELLED by 0", USER),
        ("TIMEOUT", USER),
        ("DEADLINE", USER),
        ("SPECIAL_EXIT", USER),
        ("SOMETHING_NEW", USER),
    ],
)
def test_every_terminal_state_has_a_kind_and_a_reason(state, kind):
    end = classify_end(state)
    assert end.kind == kind and end.reason
    assert (end.failure is not None) == (kind == INFRASTRUCTURE)
    assert end.returncode == (0 if kind is None else 1)


def test_a_timed_out_job_is_told_how_to_give_it_more_time():
    assert "resources.time_min" in classify_end("TIMEOUT").reason


@pytest.mark.parametrize("state", ["PENDING", "RUNNING", "REQUEUED", "REQUEUE_HOLD", "SUSPENDED", "COMPLETING"])
def test_queued_and_running_states_are_live(state):
    assert is_live(state)


@pytest.mark.parametrize("state", ["COMPLETED", "FAILED", "CANCELLED by 0", "NODE_FAIL", "OUT_OF_MEMORY", "UNKNOWN"])
def test_ended_states_are_not_live(state):
    assert not is_live(state)


def test_a_state_a_requeue_may_follow_counts_as_live_for_reattachment():
    assert is_live("TIMEOUT") and is_live("PREEMPTED")
