"""Where a sweep's best model is: the winner job's exported policy (training/policy_export.py).

report/model.py's `best_model` finds it. The winner is the best point by the sweep's first metric
(report.best[0]), or the confirmed best where a confirmation stage ran; of that point's completed
jobs (with a confirmation: the stage's replicates and the search's own), the one with the best final
value. Its final policy is the model: the sweep ranks final values. `rllm-sweeps export SWEEP --best`
hands it over; the report and `status` name it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rllm_sweeps.records.plan import Metric


@dataclass(frozen=True)
class BestModel:
    """The sweep's winner job and its exported final policy."""

    job_dir: Path
    metric: Metric
    value: float  # the job's final value of the metric
    why: str  # "the sweep's best point by val_reward_mean", "the confirmed best (point 3) by ..."
    adapter: Path | None  # its exported final policy (a PEFT adapter directory); None: it has none
    not_exported: str | None = None  # why it has none

    def line(self) -> str:
        """'best model: DIR/export/final (job 0001-..., val_reward_mean 0.75; the sweep's best point ...)'."""
        where = str(self.adapter) if self.adapter is not None else f"none ({self.not_exported or 'not exported'})"
        return f"best model: {where} (job {self.job_dir.name}, final {self.metric.name} {self.value:.4g}; {self.why})"


__all__ = ["BestModel"]
