"""Attempts' ends that their wrapper could not record, taken from SLURM's accounting.

The task wrapper (slurm_task.py) records each attempt's `start` and `end` in attempts.jsonl. When the
wrapper itself is killed (srun force-terminates the step after its kill wait, a requeue kills the
batch script, the node dies), the `end` is never written, and the job's time would run on to its
next record. SLURM knows when each run of the job ended: `sacct --duplicates` lists one record per
run (a requeued job has one per incarnation, in order), each with its Start and End. When the
sweeper sees the job end, each attempt left without an end is given the End of SLURM's run of the
same incarnation (the attempt's `restart_count` is SLURM_RESTART_COUNT: the run's position), marked
`"source": "sacct"`. Starts stay as the wrapper recorded them (a few seconds after SLURM's Start:
the wrapper's own start-up).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass

from rllm_sweeps.records.attempt_events import Event, Started, Submitted

# sacct's fields, in this order, one run a line (--parsable2); SLURM_TIME_FORMAT=%s makes the times
# seconds since the epoch (no time zone to guess).
SACCT_FIELDS = "JobID,Start,End,State"
SACCT_ENV = {"SLURM_TIME_FORMAT": "%s"}


@dataclass(frozen=True)
class SlurmRun:
    """One run (incarnation) of a SLURM job, as sacct lists it."""

    job_id: str
    start: float | None  # None: not started (Unknown)
    end: float | None  # None: not ended
    state: str


def _time(text: str) -> float | None:
    text = text.strip()
    if text.isdigit():
        return float(text)
    try:  # SLURM's default format: local time, ISO 8601 without a zone
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None  # Unknown, None


def parse_runs(sacct_output: str) -> list[SlurmRun]:
    """`sacct --duplicates --allocations --noheader --parsable2 -o JobID,Start,End,State` output,
    in sacct's order (oldest run first)."""
    runs = []
    for line in sacct_output.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 4 or not parts[0]:
            continue
        runs.append(SlurmRun(parts[0], _time(parts[1]), _time(parts[2]), parts[3].split()[0] if parts[3] else ""))
    return runs


@dataclass(frozen=True)
class MissingEnd:
    """An end to record for an attempt whose wrapper did not."""

    scheduler_id: str
    generation: int
    restart_count: int
    time: float


def missing_ends(events: Iterable[Event], scheduler_id: str, runs: list[SlurmRun]) -> list[MissingEnd]:
    """The attempts of `scheduler_id` (attempts.jsonl's events) that have a start but no end, each
    with the End of SLURM's run of its incarnation, where that run has ended."""
    ended: set[tuple[int, int]] = set()
    started: dict[tuple[int, int], Started] = {}
    for e in events:
        if isinstance(e, Submitted) or e.scheduler_id != scheduler_id:
            continue
        key = (e.generation, -1 if e.restart_count is None else e.restart_count)
        if isinstance(e, Started):
            started[key] = e
        else:
            if key[1] < 0:  # an end without its restart count: the latest start of its generation
                key = max((k for k in started if k[0] == key[0] and k not in ended), default=key)
            ended.add(key)
    mine = [r for r in runs if r.job_id == scheduler_id]
    out = []
    for (generation, restarts), start in sorted(started.items()):
        if (generation, restarts) in ended or not 0 <= restarts < len(mine):
            continue
        end = mine[restarts].end
        if end is not None:
            out.append(MissingEnd(scheduler_id, generation, restarts, max(end, start.time)))
    return out


__all__ = ["SACCT_ENV", "SACCT_FIELDS", "MissingEnd", "SlurmRun", "missing_ends", "parse_runs"]
