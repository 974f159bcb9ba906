"""The asynchronous launcher contract the sweeper drives: submit, poll, cancel.

A launcher never blocks on a batch: the sweeper keeps `parallel` jobs in flight and hands
over the next job the moment one finishes. Each job is `python -m rllm_sweeps OVERRIDES` (the
training app) in its own directory, so a job under a sweep is exactly a job run by hand (the local launcher forks it
from a process that has the libraries imported already: launchers/warm_start.py).
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass, field
from pathlib import Path

from rllm_sweeps.records.resources import Resources
from rllm_sweeps.records.status import FailureKind
from rllm_sweeps.records.store import StoreSync


class JobState(enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"  # the process ended; its result.json says how


@dataclass(frozen=True)
class LaunchRequest:
    index: int
    job_dir: Path
    argv: list[str]  # the command, e.g. [python, -m, rllm_sweeps, *overrides, hydra.run.dir=...]
    resources: Resources  # resources.* of the job
    env: dict[str, str] = field(default_factory=dict)  # extra environment (PYTHONPATH, the launch record's path)
    generation: int = 0  # the attempt's generation (records/attempts.py; 0: not launched by a sweep)


@dataclass
class PollStatus:
    """What `poll` says of a launched job: where it is and, once ended, how (result.json says the rest)."""

    state: JobState
    returncode: int | None = None
    detail: str = ""  # e.g. the scheduler's job id or reason
    failure: str | None = None  # an infrastructure reason the scheduler saw (node failure, OOM kill)
    kind: FailureKind | None = None  # whose fault the end was, where the scheduler knows (a time limit)
    log: str = ""  # the end of the scheduler's log of the job, where it ended badly


class Launcher[Handle](abc.ABC):
    """Submit, poll, cancel; the optional capabilities below have defaults (a launcher that has
    one overrides it), so the sweeper asks instead of probing with hasattr. `Handle`: what
    `submit` returns and the other methods take back, named by each launcher (submitit's `Job`,
    a local process, a Ray job's submission id); the sweeper only holds it."""

    name: str
    # True: submit_array queues every job at once, throttled by the scheduler (SLURM arrays).
    queues_arrays: bool = False

    @abc.abstractmethod
    def submit(self, request: LaunchRequest) -> Handle:
        """Start the job (or queue it with the scheduler); returns a handle. Never waits for it."""

    @abc.abstractmethod
    def poll(self, handle: Handle) -> PollStatus:
        """Where the job is now. Cheap: the sweeper calls it often."""

    @abc.abstractmethod
    def cancel(self, handle: Handle) -> None:
        """Stop the job (it checkpoints on SIGTERM) and wait briefly for it."""

    def preflight(self, shapes: list[Resources]) -> list[str]:
        """What the scheduler would refuse, per distinct job shape (resources.*), before anything
        is submitted; none by default."""
        return []

    def unavailable(self) -> str | None:
        """Why the scheduler cannot be asked from this machine (no client, no configuration, its
        controller down), with what to do; None where it can, and by default. A dry run then skips
        `preflight`; a run is refused."""
        return None

    def storage_problem(self, sweep_dir: Path) -> str | None:
        """Why the jobs could not write their records into `sweep_dir` where they run (the Ray
        cluster's nodes do not see it), with what to do; None by default (local processes see it,
        a SLURM cluster's nodes share the login node's file systems)."""
        return None

    def use_store(self, store: StoreSync) -> str | None:
        """Keep the sweep's records on the object store `store`, the sweeper working in its mirror
        (records/store.py): None where the launcher's jobs can, else why not, with what to do. By
        default they cannot: local and SLURM jobs write their records at a path."""
        return (
            f"hydra.sweep.dir={store.uri}: the {self.name} launcher's jobs write their records at a path; give a "
            "path (or mount the store), or run on a Ray cluster: hydra/launcher=ray_cluster (docs/RAY.md)"
        )

    # What `flags` are, in the dry run's lines: "sbatch" (SLURM), "Ray job" (the entrypoint's resources).
    flags_label: str = ""

    def flags(self, resources: Resources) -> list[str]:
        """What the scheduler is asked for a job of these resources.* (SLURM: its sbatch flags), for
        the dry run; none by default."""
        return []

    def gpu_memory_share(self, resources: Resources) -> tuple[float, int] | None:
        """(fraction, bytes of the GPU) of a GPU's memory a job of these resources.* may use, where
        the launcher knows the GPU the job will run on; None by default (a scheduler's node is not
        this machine)."""
        return None

    def reattach(self, job_dirs: list[Path]) -> dict[Path, Handle]:
        """Handles of jobs an earlier sweeper left live with the scheduler, by job directory, so a
        rerun polls them instead of submitting again; none by default (a local job dies with its
        sweeper)."""
        return {}

    def submit_array(self, requests: list[LaunchRequest], parallel: int) -> list[Handle]:
        """Every job at once, at most `parallel` running (where `queues_arrays`)."""
        raise NotImplementedError(f"the {self.name} launcher does not queue arrays")
