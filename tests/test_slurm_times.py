"""Attempts' ends their wrapper could not record, taken from SLURM's accounting (launchers/slurm_times.py,
records/attempts.py): pure logic on recorded sacct output, and on the real local cluster a job whose
wrapper is SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launchers.base import JobState, LaunchRequest
from launchers.slurm_times import SlurmRun, missing_ends, parse_runs
from rllm_sweeps.records import attempts
from rllm_sweeps.records.attempt_events import Ended, Started
from rllm_sweeps.records.resources import Resources

# `sacct --duplicates --allocations --noheader --parsable2 -o JobID,Start,End,State -j 41` with
# SLURM_TIME_FORMAT=%s, for a job requeued once (issue 29's chaos run: 41 s, then 58 s).
SACCT = "41|1796425391|1796425432|REQUEUED\n41|1796425470|1796425528|COMPLETED\n"


def test_sacct_runs_are_read_in_order_with_epoch_or_iso_times():
    runs = parse_runs(SACCT + "42|Unknown|Unknown|PENDING\n")
    assert runs[:2] == [
        SlurmRun("41", 1796425391.0, 1796425432.0, "REQUEUED"),
        SlurmRun("41", 1796425470.0, 1796425528.0, "COMPLETED"),
    ]
    assert runs[2] == SlurmRun("42", None, None, "PENDING")
    iso = parse_runs("7|2026-12-04T21:03:11|2026-12-04T21:03:52|CANCELLED by 0\n")[0]
    assert iso.end - iso.start == 41 and iso.state == "CANCELLED"


def _start(t: float, restarts: int, sid: str = "41") -> Started:
    return Started(time=t, scheduler_id=sid, restart_count=restarts, generation=0)


def test_each_attempt_without_an_end_gets_the_end_of_its_slurm_run():
    events = [_start(1796425395, 0), _start(1796425474, 1), Ended(time=1796425527, scheduler_id="41")]
    ends = missing_ends(events, "41", parse_runs(SACCT))
    assert [(e.restart_count, e.time) for e in ends] == [(0, 1796425432.0)]  # the requeued run's End
    assert missing_ends(events, "41", []) == []  # SLURM does not know it (yet): nothing invented
    both = [_start(1796425395, 0), _start(1796425474, 1)]
    assert [e.time for e in missing_ends(both, "41", parse_runs(SACCT))] == [1796425432.0, 1796425528.0]


def test_a_reconstructed_end_closes_its_own_attempt_and_the_job_time_matches_slurms(tmp_path):
    attempts.record_start(tmp_path, "41", 0, 0)
    attempts.record_start(tmp_path, "41", 1, 0)
    attempts.record_end(tmp_path, "41", 0, 0, restart_count=1)
    events = attempts.read_events(tmp_path)
    first, second = (e.time for e in events if e.event == "start")
    runs = [SlurmRun("41", first - 2, first + 41, "REQUEUED"), SlurmRun("41", second - 2, second + 58, "COMPLETED")]
    for end in missing_ends(events, "41", runs):
        attempts.record_end(tmp_path, "41", None, end.generation, end.restart_count, time_s=end.time, source="sacct")
    runs_read = attempts.read_attempts(tmp_path)
    assert [a.ended_at is not None for a in runs_read] == [True, True]
    assert runs_read[0].ended_at == first + 41  # not the second attempt's end
    total = attempts.total_time_s(runs_read, None)
    assert total == pytest.approx(41 + (events[2].time - second), abs=0.01)


# ---- the real cluster ------------------------------------------------------------------------

SLEEPER = "import time; time.sleep(120)"


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


@pytest.mark.slow
@pytest.mark.slurm
def test_a_job_whose_wrapper_is_killed_gets_its_end_from_sacct(slurm_env, tmp_path):
    from launchers.slurm import SlurmLauncher, SlurmSettings

    launcher = SlurmLauncher(SlurmSettings(partition="debug", poll_interval_s=0.5, requeue_grace_s=1.0))
    job_dir = tmp_path / "job"
    resources = Resources(nodes=1, gpus_per_node=0, cpus_per_task=1, jobs_per_gpu=1, mem_gb=1, time_min=5)
    request = LaunchRequest(0, job_dir, [sys.executable, "-c", SLEEPER], resources=resources)
    job = launcher.submit(request)
    deadline = time.monotonic() + 120
    while not (starts := [e for e in attempts.read_events(job_dir) if e.event == "start"]):
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.5)
    wrapper = int(starts[0].pid)
    sleeper = _children(wrapper)
    os.kill(wrapper, signal.SIGKILL)  # the wrapper dies before it can write its end
    for pid in sleeper:
        os.kill(pid, signal.SIGKILL)
    while (status := launcher.poll(job)).state != JobState.FINISHED:
        assert time.monotonic() < deadline + 120, f"the job did not end: {status}"
        time.sleep(0.5)
    ends = [e for e in attempts.read_events(job_dir) if e.event == "end"]
    assert len(ends) == 1 and ends[0].source == "sacct", ends
    sacct = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-o", "End", "-j", job.job_id],
        capture_output=True,
        text=True,
        env={**os.environ, "SLURM_TIME_FORMAT": "%s"},
    ).stdout.split()
    # SLURM's End (whole seconds), never before the attempt's recorded start
    assert float(sacct[0]) <= ends[0].time <= max(float(sacct[0]), starts[0].time), (ends, sacct)
    (run,) = attempts.read_attempts(job_dir)
    assert run.ended_at == ends[0].time
