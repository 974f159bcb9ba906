"""PBT's shared board: each trial's latest score, as files a trial's job reads and writes itself.

    <board>/trial_<k>.json    TrialState (pbt/decision.py): trial k's latest report

A job at its perturbation interval writes its own line and reads everyone's (decision.decide), so
nobody waits for stragglers and no sweeper has to be up for a decision: a sweeper crash loses no
step. Each file is replaced whole (write_record): a reader never sees half of one.
The board lives on the sweep directory's file system, which SLURM jobs share with the sweeper.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from rllm_sweeps.pbt.decision import TrialState
from rllm_sweeps.records.model import read_record, write_record


class PopulationBoard:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, trial: int) -> Path:
        return self.root / f"trial_{trial}.json"

    def report(self, state: TrialState) -> None:
        """Trial `state.trial`'s latest score (an earlier step's never replaces a later one's)."""
        previous = self.read(state.trial)
        if previous is not None and previous.step > state.step:
            return
        write_record(self.path(state.trial), state)

    def read(self, trial: int) -> TrialState | None:
        try:
            return read_record(TrialState, self.path(trial))
        except FileNotFoundError:
            return None

    def states(self) -> list[TrialState]:
        """Every trial's latest report, by trial number."""
        out = []
        for path in sorted(self.root.glob("trial_*.json")):
            with contextlib.suppress(ValueError):
                if (state := self.read(int(path.stem.removeprefix("trial_")))) is not None:
                    out.append(state)
        return sorted(out, key=lambda s: s.trial)
