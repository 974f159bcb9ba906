"""A job's state (result.json's `status`) and, for a failed job, whose fault it was (`failure_kind`):
the one definition every writer (the job, the runner, the launchers) and reader (the report, resume,
the Optuna source) goes through. Both are str-valued, so result.json keeps the same strings."""

from __future__ import annotations

import enum


class JobStatus(enum.StrEnum):
    """Where a job stands, in the order a report counts them. `completed` and `pruned` are final
    successes; resume reruns the others."""

    COMPLETED = "completed"
    PRUNED = "pruned"  # stopped early by its Optuna trial's pruner, as asked
    RUNNING = "running"  # this attempt is under way, or died without writing its end
    PREEMPTED = "preempted"  # stopped by a signal (scheduler, Ctrl-C): resumable
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        """The job is done for good: neither resume nor a retry runs it again."""
        return self in (JobStatus.COMPLETED, JobStatus.PRUNED)


class FailureKind(enum.StrEnum):
    """Why a failed job failed: the user's (config, reward code: not retried), the infrastructure's
    (worth a retry elsewhere), the accelerator's memory (SkyRL's JAX engine retried it at half size
    down to 1 within the attempt; not retried by the sweep: the same job on the same share fails
    again; OUT_OF_MEMORY_FIX says what to change), its time limit, reached with its requeues
    spent (not retried: TIME_LIMIT_FIX), or its training diverged (a loss, gradient or metric turned
    NaN or infinite: not retried, the same settings diverge again; DIVERGED_FIX)."""

    USER = "user"
    INFRASTRUCTURE = "infrastructure"
    OUT_OF_MEMORY = "out-of-memory"
    TIME_LIMIT = "time-limit"  # over its time limit with its requeues spent (TIME_LIMIT_FIX)
    DIVERGED = "diverged"  # a non-finite loss, gradient or metric (training/divergence.py; DIVERGED_FIX)

    @property
    def is_infrastructure(self) -> bool:
        """The machine's fault: the sweep launches the job again (up to its max_retries)."""
        return self is FailureKind.INFRASTRUCTURE

    @property
    def is_user(self) -> bool:
        """The job's own fault (out-of-memory included): a retry would fail the same way."""
        return not self.is_infrastructure


OUT_OF_MEMORY_FIX = (
    "lower skyrl.jax.train_micro_batch_size or skyrl.jax.sample_max_num_sequences, or give each job a GPU "
    "of its own (resources.jobs_per_gpu=1)"
)

TIME_LIMIT_FIX = (
    "give it more time (resources.time_min; submitit_slurm: hydra.launcher.timeout_min) or more requeues "
    "(hydra.launcher.max_requeues; submitit_slurm: max_num_timeout): each requeue resumes from its last checkpoint"
)

DIVERGED_FIX = (
    "try a lower trainer.lr (a tenth), gradient clipping (trainer.max_grad_norm=1.0) if it is off, or the "
    "model in float32 (its config.json's dtype)"
)
# A sweep's note on its diverged jobs: each job's error names the quantity and its own fix.
DIVERGED_HINT = "each one's result.json (divergence, error) says at which step, which quantity and what to try"
NON_FINITE_REWARD_FIX = "the reward function (task.reward) or environment returned it: make it return a finite number"

# The final states as a set, for a status held as a plain string (a report's row, where two more
# report-only states sit beside these).
FINAL_STATUSES = frozenset(s for s in JobStatus if s.is_final)
