"""Who may use a job's directory, and when: one process at a time (a lock), and only a run of the
configuration whose records are there. Every refusal comes before anything in it is written."""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import time
from pathlib import Path
from typing import IO

from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import JobStatus


class JobRefused(ValueError):
    """The directory holds another configuration's record: this run may not use it. Raised before
    anything in the directory is written (the message says which directory to use instead)."""


class JobLost(OSError):
    """The job's directory is still held by an earlier attempt (an infrastructure failure)."""


def hold_job_dir(job_dir: Path, wait_s: float = 300) -> IO[str]:
    """An exclusive lock on the job directory, held until the process exits: never two
    attempts of one job writing at once. Waits up to `wait_s` for an earlier holder."""
    lock_path = JobPaths(job_dir).lock
    lock = lock_path.open("a+")
    deadline = time.monotonic() + wait_s
    waited = False
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise JobLost(f"an earlier attempt of this job still holds {lock_path} after {wait_s:.0f}s") from None
            if not waited:
                print("waiting for an earlier attempt of this job to stop", file=sys.stderr, flush=True)
                waited = True
            time.sleep(1)
    return lock


def note_holder(lock: IO[str]) -> None:
    """Write who holds the job directory into its lock file: once the run may use the directory."""
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()} {socket.gethostname()}\n")
    lock.flush()


def write_hydra_record(where: Path, cfg: DictConfig, hydra_cfg: DictConfig) -> None:
    """Hydra's `.hydra/` (its `hydra.output_subdir`, off in conf/: Hydra would write it before the job
    may use the directory): the job's config, Hydra's config, the command's overrides."""
    where.mkdir(exist_ok=True)
    (where / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    (where / "hydra.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create({"hydra": hydra_cfg})))
    (where / "overrides.yaml").write_text(OmegaConf.to_yaml(hydra_cfg.overrides.task))


def refusal_reason(resume_mode: str, job_dir: Path, chash: str, previous: JobResult | None) -> str | None:
    """Why this run may not use `job_dir` (None: it may): another configuration completed there, or
    left checkpoints a resume would mix with this one's (trainer.resume_mode=disable starts over)."""
    from rllm_sweeps.training.checkpoints import latest_checkpoint

    if previous is None or previous.config_hash == chash or resume_mode == "disable":
        return None
    if previous.status is not JobStatus.COMPLETED and latest_checkpoint(JobPaths(job_dir).checkpoints) is None:
        return None  # an earlier run that left nothing to keep
    what = "the completed job" if previous.status is JobStatus.COMPLETED else "checkpoints"
    return (
        f"{job_dir} holds {what} of another configuration (config hash {previous.config_hash}, this run's "
        f"{chash}); nothing was changed there. Run it in another directory (drop hydra.run.dir=... to get one "
        f"named after your overrides, or set trainer.experiment_name=...), or add trainer.resume_mode=disable "
        f"to start over in this one (its records are then moved aside, to {JobPaths(job_dir).replaced()})"
    )


def move_aside(job_dir: Path) -> Path | None:
    """trainer.resume_mode=disable in a directory holding records: they go to replaced/<k>/ (the lock
    this run holds, and earlier runs moved aside, stay), never deleted. None: nothing to move."""
    paths = JobPaths(job_dir)
    records = [p for p in job_dir.iterdir() if p.name not in paths.kept_aside]
    if not records:
        return None
    aside = paths.replaced()
    aside.mkdir(parents=True)
    for path in records:
        path.rename(aside / path.name)
    return aside
