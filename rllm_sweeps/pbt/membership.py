"""A PBT trial's membership (`pbt.json` in its job directory): what its job needs to take part.

    {"trial": 2, "board": "SWEEP_DIR/pbt_board", "trials": {"0": "SWEEP_DIR/jobs/0000-…", …},
     "settings": {...the decisions' settings: PbtSettings...},
     "metric": {"name": "val_reward_mean", "goal": "maximize"}, "keys": ["trainer.lr", …]}

The sweeper writes it before the trial's first launch, with the settings it made of the sweep's
`pbt:` block (sweep/pbt_settings.py); the job reads it at its start and acts at each interval
(pbt/member.py) without reading the sweep DSL. A job without one is a plain job (a rerun of a
trial is one: its schedule replays what the trial trained).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rllm_sweeps.pbt.decision import PbtSettings
from rllm_sweeps.records.atomic import write_text_atomic
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.plan import Metric


@dataclass(frozen=True)
class PbtMembership:
    trial: int  # this trial's number (its plan index)
    board: Path  # the population's score board
    trials: Mapping[int, Path]  # every trial's job directory (whose checkpoints it may copy)
    settings: PbtSettings  # the decisions' settings (interval, quantile, mutations, seed)
    metric: Metric  # the score a trial reports (the sweep's first metric)
    keys: tuple[str, ...]  # the swept keys (the settings a trial's schedule sets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "board": str(self.board),
            "trials": {str(k): str(v) for k, v in sorted(self.trials.items())},
            "settings": self.settings.to_dict(),
            "metric": {"name": self.metric.name, "goal": self.metric.goal},
            "keys": list(self.keys),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PbtMembership:
        return cls(
            trial=int(d["trial"]),
            board=Path(d["board"]),
            trials={int(k): Path(v) for k, v in d["trials"].items()},
            settings=PbtSettings.from_dict(d["settings"]),
            metric=Metric(str(d["metric"]["name"]), str(d["metric"]["goal"])),
            keys=tuple(str(k) for k in d["keys"]),
        )


def write_membership(job_dir: Path, membership: PbtMembership) -> Path:
    return write_text_atomic(JobPaths(Path(job_dir)).pbt, json.dumps(membership.to_dict(), indent=2) + "\n")


def read_membership(job_dir: Path) -> PbtMembership | None:
    """The job's membership, or None: not a PBT trial."""
    try:
        text = JobPaths(Path(job_dir)).pbt.read_text()
    except FileNotFoundError:
        return None
    return PbtMembership.from_dict(json.loads(text))
