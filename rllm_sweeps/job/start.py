"""The job's directory claimed for this run, before anything in it is written: the lock (an earlier
attempt gone first), the attempt fence, the earlier run's record, a refusal, and a fresh start's
records moved aside. Ends the run here, with its record, when there is nothing for it to do."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rllm_sweeps.job.config import JobConfig
from rllm_sweeps.job.outcome import print_outcome
from rllm_sweeps.job_dir import JobLost, JobRefused, hold_job_dir, move_aside, note_holder, refusal_reason
from rllm_sweeps.records.attempts import AttemptFence
from rllm_sweeps.records.launch import JobLaunch
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import FailureKind, JobStatus


@dataclass(frozen=True)
class JobStart:
    """The directory is this run's: what every later stage knows of it."""

    job_dir: Path
    lock: IO[str]  # held until the run ends (closed: the next attempt may start)
    fence: AttemptFence  # whether this attempt may still write (a sweep may have launched it again)
    launch: JobLaunch | None  # what the sweep handed this attempt (None: run by hand), read once
    previous: JobResult | None  # the earlier run's record in the directory (None: none, or moved aside)

    @property
    def paths(self) -> JobPaths:
        return JobPaths(self.job_dir)


def claim(job: JobConfig, job_dir: Path, launch: JobLaunch | None) -> JobStart | JobResult:
    """The directory held for this run, or the run's record when it ends here (an attempt lost or
    superseded; the same job completed already). Raises JobRefused, having changed nothing, when
    the directory holds another configuration's completed record or checkpoints."""
    try:
        # Before reading or writing anything: an earlier attempt of this job (one whose node
        # was declared dead while its process still ran) must be gone first.
        lock = hold_job_dir(job_dir)
    except JobLost as err:  # nothing written: the directory belongs to the other attempt
        return _infrastructure_failure(job, str(err))
    fence = AttemptFence(job_dir, None if launch is None else launch.generation)
    if not fence.current():  # the sweep launched this job again after giving up on this attempt
        lost = _infrastructure_failure(job, fence.why_stale())
        lock.close()
        return lost
    previous = JobResult.read(job_dir)
    if _completed_already(job, previous):
        lock.close()
        print(
            f"job {job.config_hash} in {job_dir} already completed (trainer.resume_mode=disable to train again: "
            f"its records are moved aside, to {JobPaths(job_dir).replaced()})"
        )
        print_outcome(previous)
        return previous
    refusal = refusal_reason(job.resume_mode, job_dir, job.config_hash, previous)
    if refusal is not None:  # refused before anything in the directory changed
        lock.close()
        raise JobRefused(refusal)
    # From here on the directory is this run's.
    if job.resume_mode == "disable" and previous is not None and launch is None:
        # Starting over by hand: the earlier run's records are moved aside, never deleted (a sweep's
        # own job keeps its launch records: the runner never starts a completed one again).
        aside = move_aside(job_dir)
        what = "completed job" if previous.status is JobStatus.COMPLETED else "earlier run"
        print(f"note: trainer.resume_mode=disable: the {what}'s records ({previous.config_hash}) moved to {aside}")
        previous = None
    note_holder(lock)
    return JobStart(job_dir, lock, fence, launch, previous)


def _completed_already(job: JobConfig, previous: JobResult | None) -> bool:
    return (
        previous is not None
        and previous.status is JobStatus.COMPLETED
        and previous.config_hash == job.config_hash
        and job.resume_mode == "auto"
    )


def _infrastructure_failure(job: JobConfig, why: str) -> JobResult:
    print(f"failed: {why}", file=sys.stderr)
    return JobResult(
        status=JobStatus.FAILED, config_hash=job.config_hash, error=why, failure_kind=FailureKind.INFRASTRUCTURE
    )


__all__ = ["JobStart", "claim"]
