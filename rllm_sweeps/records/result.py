"""A job's record: result.json, one per job, written atomically (by the job, and by the sweeper for a
job that died without writing its own). The report, resume, `status` and the search strategies read
jobs through it (a pydantic model, records/model.py), so a sweep directory is self-describing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import ClassVar

from pydantic.dataclasses import dataclass

from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.memory import MemoryFit
from rllm_sweeps.records.model import Migration, read_record, same_shape, write_record
from rllm_sweeps.records.status import DIVERGED_FIX, NON_FINITE_REWARD_FIX, FailureKind, JobStatus

SCHEMA_VERSION = 1  # result.json was the first record to carry one: a file without it is 0, the same shape
# result.json's phase_time_s: the seconds of each phase, summed over the job's training steps; each step's
# are its train record's time_<phase>_s (training/metrics.py's StepTimes measures them).
PHASES = ("sample", "forward_backward", "optim", "other")


def phase_metric(phase: str) -> str:
    """The train record's key of a phase's seconds in one step."""
    return f"time_{phase}_s"


@dataclass(frozen=True)
class TrainingSummary:
    """What a job's training did (the job's loop: job/train.py), for its result.json."""

    steps: int  # training steps completed
    finished: bool  # every planned step ran
    final: dict[str, float]  # the last validation's metrics
    best: dict[str, float]  # each judged metric's best value, by its goal
    validations: list[dict[str, float]]  # every validation's metrics, with its step
    phase_time_s: dict[str, float]  # by PHASES
    backend: str  # the SkyRL backend class that trained
    processes: int  # JAX processes
    nodes: int  # nodes of the job's Ray cluster
    workflow: str  # the workflow class that ran the episodes, module:Class (a user's own, too)
    pruned_at: int | None = None  # the step its Optuna trial's pruner stopped it at
    exports: PolicyExports = field(default_factory=lambda: PolicyExports())  # the policies it exported
    memory_fit: MemoryFit | None = None  # SkyRL's JAX engine: its sizes and out-of-memory retries


@dataclass(frozen=True)
class Divergence:
    """Where a job's training first produced a non-finite number (training/divergence.py raises it;
    the job then failed with the ``diverged`` kind)."""

    step: int  # the 1-based training step (0: the validation before training)
    quantity: str  # the first non-finite quantity: "reward", "sampler logprob", "loss", "grad_norm", ...
    value: str  # "nan", "inf" or "-inf" (as text: JSON has no NaN)
    where: str  # which part of the step: "the rewards", "mini batch 2 of 8", "validation"

    def message(self) -> str:
        fix = NON_FINITE_REWARD_FIX if self.quantity == "reward" else DIVERGED_FIX
        return f"training diverged at step {self.step} ({self.where}): {self.quantity} is {self.value}; {fix}"


@dataclass(frozen=True)
class ExportedPolicy:
    """One policy a job exported: a PEFT LoRA adapter directory (training/policy_export.py)."""

    path: str  # the adapter's directory, relative to the job's (JobPaths.exported)
    step: int  # training steps it had
    metric: str | None = None  # the best policy: the metric it is best by
    value: float | None = None  # the best policy: that metric's value at its validation


@dataclass(frozen=True)
class PolicyExports:
    """The policies a job exported (none yet while it runs), or why it has none."""

    final: ExportedPolicy | None = None  # the policy as training ended (completed, pruned or stopped)
    best: ExportedPolicy | None = None  # the best by the job's judged metric, where it validated after a step
    not_exported: str | None = None  # why there is no final policy (a diverged job's weights are not finite)


@dataclass
class JobResult:
    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: same_shape}

    status: JobStatus
    config_hash: str
    overrides: list[str] = field(default_factory=list)
    steps: int = 0  # training steps completed
    final: dict[str, float] = field(default_factory=dict)  # last validation's metrics
    best: dict[str, float] = field(default_factory=dict)  # best value of each judged metric, by its goal
    validations: list[dict[str, float]] = field(default_factory=list)  # every validation's metrics, with its step
    wall_time_s: float = 0.0  # this attempt, from job start to end
    phase_time_s: dict[str, float] = field(default_factory=dict)  # by PHASES
    started_at: float = 0.0  # unix time of this attempt's start
    ended_at: float | None = None
    restarts: int = 0  # times the job was resumed from a checkpoint
    attempts: int = 1  # times its process was started (SLURM's requeues too; records/attempts.py)
    nodes: int = 1  # nodes of the job's Ray cluster (resources.nodes until it has trained)
    engine: str = "jax"  # skyrl.engine
    backend: str = ""  # the SkyRL backend class that trained (JaxBackend, RayJaxBackend, ...)
    workflow: str = ""  # the workflow class that ran the episodes, module:Class ("": not trained yet)
    processes: int = 1  # JAX processes (RayJaxBackend: one per bundle)
    error: str | None = None  # the tail of the error, for failed jobs
    failure_kind: FailureKind | None = None  # for a failed job: whose fault
    divergence: Divergence | None = None  # for a diverged job: where its training first went non-finite
    exports: PolicyExports = field(default_factory=PolicyExports)  # the policies it exported (export/)
    gpus: str | None = None  # the CUDA_VISIBLE_DEVICES the job ran with (None: not set)
    memory_fit: MemoryFit | None = None  # its engine's sizes, how chosen, out-of-memory retries (records/memory.py)
    retries: int = 0  # times the sweep launched the job again after an infrastructure failure
    retry_reasons: list[str] = field(default_factory=list)  # why, one line per retry
    versions: dict[str, str] = field(default_factory=dict)
    git_revision: str | None = None
    schema_version: int = SCHEMA_VERSION

    def record_training(self, summary: TrainingSummary, stop_requested: bool) -> None:
        """What the training did, and the state it ended in. A stop that came after the last step
        stopped nothing: the job completed."""
        self.steps, self.final, self.best = summary.steps, summary.final, summary.best
        self.validations, self.phase_time_s = summary.validations, summary.phase_time_s
        self.backend, self.processes, self.nodes = summary.backend, summary.processes, summary.nodes
        self.exports = summary.exports
        self.memory_fit = summary.memory_fit
        self.workflow = summary.workflow
        if stop_requested and not summary.finished:
            self.status = JobStatus.PREEMPTED
        else:
            self.status = JobStatus.PRUNED if summary.pruned_at is not None else JobStatus.COMPLETED

    def write(self, job_dir: Path) -> Path:
        return write_record(JobPaths(Path(job_dir)).result, self)

    @classmethod
    def read(cls, job_dir: Path) -> JobResult | None:
        """The job's result, or None if it has none (never started, or died before writing).
        RecordError, naming the file and the field, for one that does not read."""
        try:
            return read_record(cls, JobPaths(Path(job_dir)).result)
        except FileNotFoundError:
            return None
