"""A job's life on the scheduler: every submission, every attempt, and which attempt may write.

`attempts.jsonl` in the job directory, one event per line, appended (never rewritten); the lines'
model is records/attempt_events.py:

    {"event": "submitted", "time", "generation", "scheduler_id", "folder"}   by the sweeper
    {"event": "start", "time", "generation", "scheduler_id", "restart_count", "host", "pid"}
    {"event": "end", "time", "generation", "scheduler_id", "restart_count", "exit_code"}  by the process wrapper
    {"event": "end", ..., "source": "sacct"}     by the sweeper, where the wrapper was killed before it
                                                 wrote its end: SLURM's End of that run

The wrapper (the SLURM task, the local launcher) writes `start` before train.py runs, so an attempt
killed during start-up still leaves a trace, and SLURM's own requeues (`restart_count`) are counted
as attempts beside the resumes that result.json's `restarts` counts.

Fencing: `generation` is the attempt's number as the sweeper sees it. When the sweeper gives up on
an attempt (its node was declared dead) and launches the job again, it raises the job's generation
(the `generation` file) first; the old attempt, which may still run on a node SLURM lost touch with,
then finds it is stale and neither writes result.json nor trains on (`AttemptFence`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rllm_sweeps.records.attempt_events import Ended, Started, Submitted, load_event
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.model import json_lines, line_of

RAY_ID_PREFIX = "rllm-"  # how a Ray job id (launchers/ray_cluster.py's submission id) starts; SLURM's are numbers


def append_event(job_dir: Path, event: Submitted | Started | Ended) -> None:
    """One line, appended in a single write (O_APPEND): concurrent writers never interleave."""
    line = line_of(event).encode()
    Path(job_dir).mkdir(parents=True, exist_ok=True)
    fd = os.open(JobPaths(Path(job_dir)).attempts, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_events(job_dir: Path) -> list[Submitted | Started | Ended]:
    """The job's events, oldest first. A line cut short by a crash is skipped (a later writer's
    line follows it); one that does not validate is a RecordError naming the file and line."""
    lines = json_lines(JobPaths(Path(job_dir)).attempts, after_a_cut_line="skip")
    return [load_event(data, source) for data, source in lines]


@dataclass(frozen=True)
class Submission:
    """A scheduler job the sweeper submitted for this job (newest last)."""

    scheduler_id: str
    folder: str | None  # where the scheduler's client keeps its files (submitit's folder)
    generation: int
    time: float


@dataclass(frozen=True)
class Attempt:
    """One run of the job's process: started, and ended if its end was seen."""

    started_at: float
    ended_at: float | None
    generation: int
    scheduler_id: str | None
    restart_count: int
    host: str | None
    exit_code: int | None

    @property
    def duration_s(self) -> float | None:
        return None if self.ended_at is None else max(0.0, self.ended_at - self.started_at)


def submissions(job_dir: Path) -> list[Submission]:
    return [
        Submission(e.scheduler_id, e.folder, e.generation, e.time)
        for e in read_events(job_dir)
        if isinstance(e, Submitted)
    ]


def read_attempts(job_dir: Path) -> list[Attempt]:
    """Each `start` paired with its `end`: of the same process (scheduler id and generation) and,
    where the end names it, the same SLURM incarnation (`restart_count`: an end reconstructed from
    sacct may come after later attempts'); an end that does not name it closes the latest start."""
    out: list[Attempt] = []
    open_: dict[tuple[str | None, int], dict[int, int]] = {}  # (scheduler id, generation) -> restart count -> index
    for e in read_events(job_dir):
        key = (e.scheduler_id, e.generation)
        if isinstance(e, Started):
            open_.setdefault(key, {})[e.restart_count] = len(out)
            out.append(
                Attempt(
                    started_at=e.time,
                    ended_at=None,
                    generation=e.generation,
                    scheduler_id=e.scheduler_id,
                    restart_count=e.restart_count,
                    host=e.host,
                    exit_code=None,
                )
            )
        elif isinstance(e, Ended) and open_.get(key):
            runs = open_[key]
            which = e.restart_count if e.restart_count is not None else max(runs, key=runs.__getitem__)
            if which not in runs:
                continue
            i = runs.pop(which)
            a = out[i]
            out[i] = Attempt(a.started_at, e.time, a.generation, a.scheduler_id, a.restart_count, a.host, e.exit_code)
    return out


def total_time_s(job_attempts: list[Attempt], last_end: float | None) -> float:
    """Time the job's attempts ran, all of them; an attempt whose end was not seen (killed with its
    wrapper) counts to `last_end` (its result's end, or its last record) when that is later."""
    total = 0.0
    for a in job_attempts:
        end = a.ended_at if a.ended_at is not None else last_end
        if end is not None and end > a.started_at:
            total += end - a.started_at
    return total


def record_start(
    job_dir: Path,
    scheduler_id: str | None,
    restart_count: int,
    generation: int,
    pid: int | None = None,
    forked: bool = False,
) -> None:
    """The wrapper's line before the training process starts (pid: the process, where the wrapper
    is not it; forked: the process was forked from the local launcher's fork server rather than
    started as a fresh interpreter)."""
    append_event(
        job_dir,
        Started(
            time=time.time(),
            generation=generation,
            scheduler_id=scheduler_id,
            restart_count=restart_count,
            host=socket.gethostname(),
            pid=pid or os.getpid(),
            forked=forked,
        ),
    )


def record_end(
    job_dir: Path,
    scheduler_id: str | None,
    exit_code: int | None,
    generation: int,
    restart_count: int | None = None,
    time_s: float | None = None,
    source: str | None = None,
) -> None:
    """An attempt's end: by its wrapper (now), or reconstructed by the sweeper (`time_s` and
    `source`: SLURM's accounting, launchers/slurm_times.py) where the wrapper was killed first."""
    end = Ended(
        time=time.time() if time_s is None else time_s,
        generation=generation,
        scheduler_id=scheduler_id,
        exit_code=exit_code,
        restart_count=restart_count,
        source=source,
    )
    append_event(job_dir, end)


def attempt_ended(job_dir: Path, scheduler_id: str, restart_count: int) -> bool:
    """The wrapper recorded the end of this scheduler job's attempt `restart_count` (SLURM's
    requeue count): the job's other nodes read it to leave even when the training process was
    killed before it could say so itself."""
    started = False
    for e in read_events(job_dir):
        if e.scheduler_id != scheduler_id:
            continue
        if isinstance(e, Started):
            started = e.restart_count == restart_count
        elif isinstance(e, Ended) and started:
            return True
    return False


# -- fencing -------------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(job_dir: Path) -> Iterator[None]:
    """The generation file's lock: the sweeper's raise and an attempt's check-then-write exclude each other."""
    Path(job_dir).mkdir(parents=True, exist_ok=True)
    paths = JobPaths(Path(job_dir))
    with open(paths.generation.with_name(f".{paths.generation.name}.lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def current_generation(job_dir: Path) -> int:
    try:
        return int(JobPaths(Path(job_dir)).generation.read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def raise_generation(job_dir: Path) -> int:
    """The sweeper gives up on the job's current attempt: from now on only the next one may write."""
    with _locked(job_dir):
        new = current_generation(job_dir) + 1
        JobPaths(Path(job_dir)).generation.write_text(f"{new}\n")
    return new


class AttemptFence:
    """Whether this process is still the job's current attempt, of `generation` (its launch
    record's, records/launch.py). A job run by hand (generation None: no launch record) is never fenced."""

    def __init__(self, job_dir: Path, generation: int | None = None) -> None:
        self.job_dir = Path(job_dir)
        self.generation = generation

    def current(self) -> bool:
        return self.generation is None or current_generation(self.job_dir) <= self.generation

    @contextlib.contextmanager
    def writing(self) -> Iterator[bool]:
        """Yields whether this attempt may write; holds the lock meanwhile, so the sweeper cannot
        supersede it half-way through a write."""
        if self.generation is None:
            yield True
            return
        with _locked(self.job_dir):
            yield self.current()

    def why_stale(self) -> str:
        return (
            f"this attempt (generation {self.generation}) was superseded: the sweep launched the job again "
            f"(generation {current_generation(self.job_dir)}); stopping without writing its records"
        )


def latest_scheduler_id(job_dir: Path) -> str | None:
    """The newest scheduler job id the sweep submitted for this job (SLURM: ID, or ID_TASK in an array)."""
    subs = submissions(job_dir)
    return subs[-1].scheduler_id if subs else None
