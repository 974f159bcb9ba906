"""A row of metrics.jsonl: what the training loop reported at one step (`train`) or one validation
(`val`), told apart by `kind`.

The metrics themselves are open-ended (a workflow's roles add val_<role>_acc, a tracker's names
are the loop's): each is a field of the row beside `kind`, `step` and `time`, a number (or null).

Every release wrote `kind` on every row (since metrics.jsonl began, 821d408): a row without one was
not written by rllm-sweeps, and reads as a RecordError rather than as a guess.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from rllm_sweeps.problems import RecordError
from rllm_sweeps.records.model import Migration, load, same_shape

# A metric's value: the loop's numbers (NaN where a step had none), null where none was measured, or a
# word the loop reports beside them (a skipped step's reason).
MetricValue = bool | int | float | str | None


class _Row(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    __pydantic_extra__: dict[str, MetricValue]  # the metrics, by name

    step: int  # 1-based training step (0: a validation before training)
    time: float | None = None  # when it was written (epoch seconds); absent in the first releases
    schema_version: int = 1
    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: same_shape}

    @property
    def metrics(self) -> dict[str, MetricValue]:
        return dict(self.__pydantic_extra__ or {})

    def as_dict(self) -> dict[str, Any]:
        """The row as its line's JSON object, less its version stamp (what a plot or a test compares)."""
        return {k: v for k, v in self.model_dump().items() if k != "schema_version"}

    # A row also reads as that object: row["loss"], row.get("val_reward_mean"), row.items().
    def __getitem__(self, name: str) -> Any:
        return self.as_dict()[name]

    def __contains__(self, name: object) -> bool:
        return name in self.as_dict()

    def __iter__(self) -> Any:  # the names, as a dict's (pydantic's own yields (name, value) pairs)
        return iter(self.as_dict())

    def keys(self) -> Any:
        return self.as_dict().keys()

    def get(self, name: str, default: Any = None) -> Any:
        return self.as_dict().get(name, default)

    def items(self) -> Any:
        return self.as_dict().items()

    def value(self, name: str) -> float | None:
        """The metric `name` (or `step`, `time`) as a finite number, or None: not reported, not a number."""
        v = self.step if name == "step" else self.time if name == "time" else (self.__pydantic_extra__ or {}).get(name)
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None


class TrainRow(_Row):
    """A training step's metrics (loss, reward_mean, lr, the phases' times, ...)."""

    kind: Literal["train"] = "train"
    total_steps: int | None = None  # the job's steps in all (a sweep's progress line); absent before fb306e1


class ValRow(_Row):
    """A validation's metrics (VALIDATION_METRICS, a workflow's role and episode metrics)."""

    kind: Literal["val"] = "val"


MetricsRow = Annotated[TrainRow | ValRow, Field(discriminator="kind")]
ROWS: dict[str, type[TrainRow] | type[ValRow]] = {"train": TrainRow, "val": ValRow}


def load_row(data: Any, source: str) -> TrainRow | ValRow:
    """A row of metrics.jsonl from its JSON data, by its `kind` (each kind migrates on its own)."""
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind not in ROWS:
        raise RecordError(
            f"{source}: not a metrics row: field 'kind': expected one of {sorted(ROWS)}, got {kind!r} "
            f"(every release of rllm-sweeps wrote it)"
        )
    return load(ROWS[kind], data, source)
