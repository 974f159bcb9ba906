"""One training job, start to end, in its own directory:

    start (the directory claimed) -> resume point -> train (Ray where used, backend, RL loop)
    -> record (result.json: completed / failed / preempted) -> stop (the directory let go)

Every exit path writes result.json and takes the job's Ray cluster (if it has one) down. SIGTERM
(preemption, `scancel`, a SLURM time limit) stops the loop at the next step boundary, saves a
checkpoint and exits; rerunning the same command in the same directory resumes from it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from omegaconf import DictConfig

from rllm_sweeps.job.config import JobConfig
from rllm_sweeps.job.outcome import print_outcome, record_failure
from rllm_sweeps.job.provenance import git_revision, package_versions, process_starts, quiet_library_logs
from rllm_sweeps.job.start import JobStart, claim
from rllm_sweeps.job.stop_signal import StopRequested
from rllm_sweeps.job.train import train
from rllm_sweeps.job_dir import write_hydra_record
from rllm_sweeps.records.launch import current_launch
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import FailureKind, JobStatus

EXIT_PREEMPTED = 143  # 128 + SIGTERM, what a scheduler expects from a job it stopped


def run_job(job: JobConfig, overrides: list[str], job_dir: Path | None = None) -> JobResult:
    """Train one job in `job_dir` (default: Hydra's output directory).

    Raises JobRefused, having written nothing, when the directory holds another configuration's
    completed record or checkpoints."""
    hydra_record = None if job_dir is not None else _hydra_run()
    job_dir = Path(job_dir if hydra_record is None else hydra_record.runtime.output_dir).resolve()
    job_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    start = claim(job, job_dir, current_launch())
    if isinstance(start, JobResult):  # nothing for this run to do
        return start
    if hydra_record is not None:
        write_hydra_record(start.paths.hydra, job.tree, hydra_record)
    quiet_library_logs()
    result = running_record(job, start, overrides, started)
    try:
        resume_from = begin(job, start, result)
        with StopRequested() as stop:
            result.record_training(train(job, start, resume_from, stop), stop_requested=bool(stop))
    except (KeyboardInterrupt, Exception) as err:  # recorded; the caller turns it into the exit status
        record_failure(result, err, job, start.paths)
    finally:
        result.ended_at = time.time()
        result.wall_time_s = result.ended_at - started
        with start.fence.writing() as current:
            if current:
                result.write(job_dir)
    return end(job, start, result)


def _hydra_run() -> DictConfig:
    """Hydra's config of this run (its output directory, for `.hydra/`)."""
    from hydra.core.hydra_config import HydraConfig

    return HydraConfig.get()


def running_record(job: JobConfig, start: JobStart, overrides: list[str], started: float) -> JobResult:
    """result.json while the job runs: what it is, where it runs, its attempts so far."""
    result = JobResult(
        status=JobStatus.RUNNING,
        config_hash=job.config_hash,
        overrides=list(overrides),
        started_at=started,
        nodes=job.nodes,  # the Ray cluster's count once it has trained
        engine=job.engine.name,
        versions=package_versions(),
        git_revision=git_revision(),
        attempts=process_starts(start.job_dir, start.previous, job.config_hash),
        gpus=os.environ.get("CUDA_VISIBLE_DEVICES"),  # the local launcher's placement, or SLURM's
    )
    if start.previous is not None and start.previous.config_hash == job.config_hash:
        # The sweep's record of this job's earlier failed launches stays with it (a new sweeper too).
        result.retries, result.retry_reasons = start.previous.retries, list(start.previous.retry_reasons)
    return result


def begin(job: JobConfig, start: JobStart, result: JobResult) -> Path | None:
    """Before Ray or a model starts: the engine can run here, the resume point (None: from the
    start), config.yaml and result.json written. Returns the resume point."""
    from rllm_sweeps.training.checkpoints import latest_checkpoint

    job.engine.check_available()
    resume_from = None if job.resume_mode == "disable" else latest_checkpoint(start.paths.checkpoints)
    if resume_from is not None and start.previous is not None:
        result.restarts = start.previous.restarts + 1
        result.exports = start.previous.exports  # on disk until this run exports (or discards) its own
    start.paths.config.write_text(job.resolved_yaml())
    result.write(start.job_dir)
    where = f" (resuming from {resume_from.name})" if resume_from else ""
    print(f"job {job.config_hash} in {start.job_dir}{where}", flush=True)
    return resume_from


def end(job: JobConfig, start: JobStart, result: JobResult) -> JobResult:
    """The run's outcome said, the directory let go (the next attempt may start)."""
    if not start.fence.current():
        result = JobResult(
            status=JobStatus.FAILED,
            config_hash=job.config_hash,
            error=start.fence.why_stale(),
            failure_kind=FailureKind.INFRASTRUCTURE,
        )
    print_outcome(result)
    start.lock.close()
    return result


__all__ = ["EXIT_PREEMPTED", "run_job"]
