"""What a SLURM job's state means to the sweeper: still live, or ended, and why, and whose fault.

Pure decisions over what `sacct` and the job's SLURM log say, so they are tested on recorded
outputs (tests/test_slurm_states.py) as well as on the real local cluster.

Every terminal state is either a success, an *infrastructure* failure (the machine's fault: worth
running again, from the last checkpoint) or a *user* failure (the job's own: a retry would fail the
same way). A step that SLURM could not launch (the node daemon died while `srun` started the task)
ends FAILED like a crash of the job's code; the SLURM log tells them apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from rllm_sweeps.records.status import TIME_LIMIT_FIX, FailureKind

# sacct's terminal states, each with its kind and what to say (None: success).
ENDED: dict[str, tuple[FailureKind | None, str]] = {
    "COMPLETED": (None, "completed"),
    "FAILED": (FailureKind.USER, "the job's process failed (SLURM state FAILED)"),
    "CANCELLED": (FailureKind.USER, "cancelled outside the sweep: scancel or an administrator (SLURM state CANCELLED)"),
    "TIMEOUT": (
        FailureKind.TIME_LIMIT,
        f"over its time limit with its requeues spent (SLURM state TIMEOUT): {TIME_LIMIT_FIX}",
    ),
    "DEADLINE": (FailureKind.USER, "past its deadline (SLURM state DEADLINE)"),
    "OUT_OF_MEMORY": (FailureKind.INFRASTRUCTURE, "killed for memory (SLURM state OUT_OF_MEMORY)"),
    "NODE_FAIL": (FailureKind.INFRASTRUCTURE, "node failure (SLURM state NODE_FAIL)"),
    "BOOT_FAIL": (FailureKind.INFRASTRUCTURE, "node failed to boot (SLURM state BOOT_FAIL)"),
    "PREEMPTED": (FailureKind.INFRASTRUCTURE, "preempted (SLURM state PREEMPTED)"),
    "REVOKED": (FailureKind.INFRASTRUCTURE, "revoked by a sibling cluster (SLURM state REVOKED)"),
    "SPECIAL_EXIT": (
        FailureKind.USER,
        "held by SLURM after a special exit (SLURM state SPECIAL_EXIT): scontrol release it",
    ),
}
# Ended for a moment only: submitit requeues a timed-out job, SLURM a preempted one.
REQUEUE_MAY_FOLLOW = frozenset({"TIMEOUT", "PREEMPTED"})
# Ended states after which SLURM itself requeues a batch job (JobRequeue=1, its default).
REQUEUED_BY_SLURM = frozenset({"NODE_FAIL", "BOOT_FAIL"})
# Not ended: the job may still run (UNKNOWN: sacct does not know the id, e.g. purged).
LIVE = frozenset(
    {
        "PENDING",
        "RUNNING",
        "REQUEUED",
        "REQUEUE_FED",
        "REQUEUE_HOLD",
        "RESIZING",
        "SUSPENDED",
        "CONFIGURING",
        "COMPLETING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
    }
)

# Lines of a job's SLURM log that say SLURM, not the job, failed: the step was never launched
# or its node stopped answering.
_LAUNCH_FAILURES = (
    re.compile(r"srun: error: Task launch for \S+ failed on node .*"),
    re.compile(r"srun: error: Unable to create step.*"),
    re.compile(r"srun: error: .*(Communication connection failure|Zero Bytes were transmitted).*"),
    re.compile(r"srun: error: Node failure on .*"),
    re.compile(r"srun: error: Application launch failed.*"),
    re.compile(r"srun: error: Unable to contact slurm controller.*"),
    re.compile(r"slurmstepd: error: \*\*\* .* DUE TO NODE FAILURE.*"),
)


# What submitit writes when the warning before a time limit came with the job's requeues spent: the job
# exits (SLURM state FAILED, before the limit) instead of being requeued.
REQUEUES_SPENT = "Job not requeued because: timed-out too many times"


def base_state(state: str) -> str:
    """sacct writes `CANCELLED by 0`: the state is the first word."""
    return state.split()[0] if state.strip() else "UNKNOWN"


def is_live(state: str) -> bool:
    """The job may still run (or run again): a rerun of the sweep reattaches to it."""
    s = base_state(state)
    return s in LIVE or s in REQUEUE_MAY_FOLLOW


def launch_failure(log: str) -> str | None:
    """The line of a SLURM log that says the job's step could not be launched, if any."""
    lines = log.splitlines()
    for pattern in _LAUNCH_FAILURES:  # the most telling first: the one that names the node
        for line in reversed(lines):
            if match := pattern.search(line):
                return match.group(0).strip()
    return None


@dataclass(frozen=True)
class Ending:
    """How a job ended, for the sweeper: `failure` (an infrastructure reason) makes it retry."""

    returncode: int
    kind: FailureKind | None  # None: success
    reason: str
    failure: str | None  # set when kind is infrastructure


def classify_end(state: str, log: str = "", started: bool = True) -> Ending:
    """A terminal state, read with the job's SLURM log (`log`) and whether its process ever started."""
    s = base_state(state)
    kind, reason = ENDED.get(s, (FailureKind.USER, f"ended in SLURM state {s}"))
    if s == "FAILED":
        if REQUEUES_SPENT in log:
            kind = FailureKind.TIME_LIMIT
            reason = f"warned before its time limit with its requeues spent (SLURM state FAILED): {TIME_LIMIT_FIX}"
        elif line := launch_failure(log):
            kind, reason = FailureKind.INFRASTRUCTURE, f"SLURM could not launch the job's step (state FAILED): {line}"
        elif not started and not log.strip():
            kind, reason = (
                FailureKind.INFRASTRUCTURE,
                "failed before the job's process started, with no log (state FAILED)",
            )
    if kind is None:
        return Ending(0, None, reason, None)
    return Ending(1, kind, reason, reason if kind.is_infrastructure else None)


class JobWatch:
    """One SLURM job's states as the sweeper polls them from `sacct`, read as: still live, or ended.

    Two things make this more than a lookup: a requeue shows an ended state only for a moment (a
    timed-out job that submitit requeues, a preempted one), so such a state ends the job only once it
    has stayed `requeue_grace_s`; and a job whose node failed is requeued by SLURM itself, so `sacct`
    may show it RUNNING, then PENDING, never NODE_FAIL: then how its last run ended is asked.
    """

    def __init__(self, requeue_grace_s: float) -> None:
        self.requeue_grace_s = requeue_grace_s
        self.ran = False  # seen RUNNING since the last requeue
        self.ending_since: float | None = None  # when a state a requeue may follow was first seen

    def observe(self, state: str, now: float, last_ended: Callable[[], str | None]) -> tuple[str, bool] | None:
        """(the terminal state, whether SLURM requeued the job after it), or None while the job is
        live. `last_ended` asks SLURM how the job's latest finished run ended (sacct --duplicates)."""
        state = base_state(state)
        if state == "RUNNING":
            self.ran = True
        elif state == "PENDING" and self.ran:
            self.ran = False
            ended = last_ended()
            if ended in REQUEUED_BY_SLURM:
                # The sweeper decides about retries (counted, bounded by max_retries): this is the end.
                return ended, True
        if state in REQUEUE_MAY_FOLLOW:
            self.ending_since = now if self.ending_since is None else self.ending_since
            if now - self.ending_since < self.requeue_grace_s:
                return None
        else:
            self.ending_since = None
        if state in LIVE or state == "UNKNOWN":  # UNKNOWN: sacct does not list a fresh job yet
            return None
        return state, False
