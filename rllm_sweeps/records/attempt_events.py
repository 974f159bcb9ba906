"""A line of attempts.jsonl: one event of a job's life on the scheduler, told apart by `event`
(records/attempts.py says who writes each and what the job's attempts are made of)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from rllm_sweeps.problems import RecordError
from rllm_sweeps.records.model import Migration, load, same_shape


class _Event(BaseModel):
    # Scheduler ids are text (SLURM's "41_0", Ray's "rllm-..."); a bare SLURM number reads as text too.
    model_config = ConfigDict(frozen=True, coerce_numbers_to_str=True)

    time: float  # epoch seconds
    generation: int = 0  # the attempt's fencing generation (records/attempts.py); 0 before fencing
    schema_version: int = 1
    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: same_shape}


class Submitted(_Event):
    """The sweeper submitted a scheduler job for this job."""

    event: Literal["submitted"] = "submitted"
    scheduler_id: str
    folder: str | None = None  # where the scheduler's client keeps its files (submitit's folder)
    ray_address: str | None = None  # the Ray cluster a Ray job was submitted to (launchers/ray_cluster.py)


class Started(_Event):
    """The wrapper is about to start the training process."""

    event: Literal["start"] = "start"
    scheduler_id: str | None = None  # None: run with no scheduler
    restart_count: int = 0  # SLURM's requeues of this scheduler job
    host: str | None = None
    pid: int | None = None
    forked: bool = False  # forked from the local launcher's fork server, not a fresh interpreter


class Ended(_Event):
    """An attempt ended: by its wrapper, or reconstructed by the sweeper from SLURM's accounting."""

    event: Literal["end"] = "end"
    scheduler_id: str | None = None
    restart_count: int | None = None  # None: the end closes the latest start of its scheduler job
    exit_code: int | None = None  # None: not known (killed, or reconstructed)
    source: str | None = None  # "sacct": reconstructed by the sweeper; None: its wrapper's


AttemptEvent = Annotated[Submitted | Started | Ended, Field(discriminator="event")]  # the published schema
Event = Submitted | Started | Ended
EVENTS: dict[str, type[Event]] = {"submitted": Submitted, "start": Started, "end": Ended}


def load_event(data: Any, source: str) -> Event:
    """A line of attempts.jsonl from its JSON data, by its `event`."""
    kind = data.get("event") if isinstance(data, dict) else None
    if kind not in EVENTS:
        raise RecordError(
            f"{source}: not an attempt event: field 'event': expected one of {sorted(EVENTS)}, got {kind!r}"
        )
    return load(EVENTS[kind], data, source)
