"""What every search in bench/search_peers.py shares: the space, the budget, a simulated trial on the
surrogate, what a search hands back. No search logic lives here."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from surrogate import Segment, Surrogate

LR_KEY, CLIP_KEY = "trainer.lr", "algorithm.eps_clip"
LR_RANGE = (3e-4, 1e-2)  # the real grid's corners: the surrogate is fitted inside them
CLIP_RANGE = (0.05, 0.5)
# The project's sweep DSL for the space (what a user writes on the command line).
SPACE_ARGS = [
    f"{LR_KEY}=tag(log,interval({LR_RANGE[0]},{LR_RANGE[1]}))",
    f"{CLIP_KEY}=interval({CLIP_RANGE[0]},{CLIP_RANGE[1]})",
]
CONFIRM_TOP, CONFIRM_SEEDS = 2, 2  # the confirmation variants: the top 2 points x 2 fresh seeds


@dataclass
class Outcome:
    """What a search selected (its schedule: one segment for a fixed config), its own claim and its cost."""

    schedule: list[Segment]
    claim: float  # the search's value of its selection (one seed, or the confirmation's mean)
    steps: int  # training steps spent, confirmation included
    trials: int
    notes: dict[str, float] = field(default_factory=dict)


class Sim:
    """The surrogate under one search seed: trial n's noise is the same stream in every method
    (common random numbers), and the budget of training steps is counted here."""

    def __init__(self, surrogate: Surrogate, seed: int, budget_steps: int) -> None:
        self.s = surrogate
        self.seed = seed
        self.budget = budget_steps
        self.spent = 0

    def rng(self, trial: int, stream: int = 0) -> np.random.Generator:
        return np.random.default_rng([self.seed, stream, trial])

    @property
    def left(self) -> int:
        return self.budget - self.spent

    def full_run(self, schedule: list[Segment], trial: int, stream: int = 0) -> float:
        """A whole run of a schedule; its final validation (the value a job's result reports)."""
        self.spent += self.s.steps
        return self.s.run(schedule, self.rng(trial, stream))[-1][1]

    def confirm(self, schedules: dict[str, list[Segment]], seeds: int = CONFIRM_SEEDS) -> dict[str, list[float]]:
        """Fresh-seed replicates of each schedule (stream 1: seeds no search job used)."""
        out: dict[str, list[float]] = {}
        for i, (name, schedule) in enumerate(schedules.items()):
            out[name] = [self.full_run(schedule, 1000 * i + k, stream=1) for k in range(seeds)]
        return out
