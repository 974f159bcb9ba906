"""The `confirm:` block of any sweep: after the search, its top configs re-run with fresh seeds.

    confirm: {top: 3, seeds: 4}      # the 3 best points, 4 new seed replicates each (12 jobs)
    confirm: {top: 2, seeds: [101, 102, 103]}

On the command line: `sweep.confirm.top=3 sweep.confirm.seeds=4`. A number of seeds means that
many seeds no job of the search used (the next ones above the search's largest); a list must
hold none the search used. sweep/confirm.py plans and runs the stage, report/confirmation.py
ranks its configs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rllm_sweeps.sweep.block_settings import block_settings, is_int
from rllm_sweeps.sweep.node import node_fields


@dataclass(frozen=True)
class ConfirmSpec:
    top: int = 3  # points re-run
    seeds: int | tuple[int, ...] = 3  # new replicates of each: how many, or which

    @property
    def n_seeds(self) -> int:
        return self.seeds if isinstance(self.seeds, int) else len(self.seeds)

    @property
    def jobs(self) -> int:
        """Jobs the stage adds (at most: a search with fewer completed points confirms those)."""
        return self.top * self.n_seeds

    def fresh_seeds(self, used: set[int]) -> tuple[int, ...]:
        """The seeds of the stage: the given ones, or the next ones above every seed the search used."""
        if not isinstance(self.seeds, int):
            return self.seeds
        first = max(used, default=-1) + 1
        return tuple(range(first, first + self.seeds))

    def to_dict(self) -> dict[str, Any]:
        return {"top": self.top, "seeds": self.seeds if isinstance(self.seeds, int) else list(self.seeds)}


def parse_confirm_settings(block: Any, where: str, parts: Mapping[str, tuple[Any, str]], problem: Any) -> ConfirmSpec:
    """The `confirm:` block with the command line's `sweep.confirm.KEY` settings on top."""
    raw = block_settings(block, where, parts, node_fields("confirm"), "confirm", problem)
    d = ConfirmSpec()
    top, at = raw.get("top", (d.top, f"{where}.top"))
    if not is_int(top) or top < 1:
        problem(at, f"confirm.top is the number of best points re-run, an integer >= 1; got {top!r}")
        top = d.top
    seeds, at = raw.get("seeds", (d.seeds, f"{where}.seeds"))
    if is_int(seeds):
        if seeds < 2:
            problem(at, f"confirm.seeds needs 2 replicates or more (a confidence interval, a test); got {seeds}")
            seeds = d.seeds
    elif isinstance(seeds, list | tuple) and len(seeds) >= 2 and all(is_int(s) and s >= 0 for s in seeds):
        if len(set(seeds)) != len(seeds):
            problem(at, f"confirm.seeds repeat: {list(seeds)}")
        seeds = tuple(seeds)
    else:
        problem(at, f"confirm.seeds is a number >= 2 or a list of 2 or more seeds >= 0; got {seeds!r}")
        seeds = d.seeds
    return ConfirmSpec(int(top), seeds)
