"""The Optuna sweeper's (and the confirmation stage's) jobs, planned one point at a time with the
planner's checks (planner.py), after the sweep is checked once."""

from __future__ import annotations

from collections.abc import Sequence

from rllm_sweeps.config.native import quiet_skyrl
from rllm_sweeps.problems import ConfigIssue
from rllm_sweeps.records.plan import PlannedJob
from rllm_sweeps.sweep.constraints import Constraint, ConstraintEvalError
from rllm_sweeps.sweep.planner import Planner
from rllm_sweeps.sweep.space import Point
from rllm_sweeps.sweep.spec import SweepError, SweepSpec


class TrialPlanner:
    """Jobs one point at a time (the Optuna sweeper's trials), after the sweep is checked once.

    trials = TrialPlanner(spec, base_overrides)            # SweepError: unknown keys, bad base
    trials.violated(point)                                 # the constraints the point breaks
    trials.jobs(point, first_index=8, point_index=4)       # composed + validated; SweepError
    """

    def __init__(self, spec: SweepSpec, base_overrides: Sequence[str], pending: Sequence[ConfigIssue] = ()) -> None:
        self.spec = spec
        self._planner = Planner(spec, list(base_overrides))
        with quiet_skyrl():
            self._planner.check(list(pending))

    def violated(self, point: Point) -> list[Constraint]:
        """The constraints `point` breaks (none: it is feasible). SweepError when one cannot be evaluated."""
        planner = self._planner
        if not self.spec.constraints:
            return []
        planner.issues.clear()
        read = planner.scanner.reader(point, planner.scanner.constraint_keys)
        if read is None:
            raise SweepError(list(planner.issues))
        broken = []
        for c in self.spec.constraints:
            try:
                if not c.holds(read):
                    broken.append(c)
            except (ConstraintEvalError, KeyError) as err:
                what = f"missing key {err}" if isinstance(err, KeyError) else str(err)
                message = f"{c.source}: constraint '{c.text}' at [{' '.join(point.overrides)}]: {what}"
                raise SweepError([ConfigIssue(c.source, message)]) from None
        return broken

    def jobs(self, point: Point, first_index: int, point_index: int) -> list[PlannedJob]:
        """The point's jobs (one per seed), numbered from `first_index`. SweepError when invalid."""
        planner = self._planner
        planner.issues.clear()
        with quiet_skyrl():
            jobs, bad = planner.materialize([point], None, first_index, point_index)
        if bad:
            raise SweepError(bad)
        return jobs


__all__ = ["TrialPlanner"]
