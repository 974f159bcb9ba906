"""The search space of a spec: its points, as a lazy grid or as samples.

A grid is never materialised: point i is decoded from i (mixed radix, the last
dimension fastest, as Hydra's BasicSweeper orders its product), so a 100,000-point grid
costs nothing until its points are asked for. A zip group is one dimension whose rows
set several keys. Sampling methods draw from Optuna distributions with Optuna's
RandomSampler through an in-memory study's ask(), so the Optuna sweeper searches the
very same space.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rllm_sweeps.optuna_quiet import quiet_optuna
from rllm_sweeps.sweep.param import Choice, Param, grid_size
from rllm_sweeps.sweep.spec import SweepSpec


@dataclass(frozen=True)
class Point:
    """One point of the space: a choice per parameter (fixed ones included), in spec order."""

    index: int  # position in the grid, or the sample's number
    choices: tuple[tuple[Param, Choice], ...]

    @functools.cached_property
    def params(self) -> dict[str, Any]:  # read once per point by the constraints and once by the cost
        return {p.key: c.value for p, c in self.choices}

    @property
    def overrides(self) -> list[str]:
        return [p.override(c) for p, c in self.choices]

    def value(self, key: str) -> Any:
        for p, c in self.choices:
            if p.key == key:
                return c.value
        raise KeyError(key)


@dataclass(frozen=True)
class Dim:
    """One grid dimension: a parameter, or a zip group whose rows set several parameters."""

    params: tuple[Param, ...]
    rows: tuple[tuple[Choice, ...], ...]

    @property
    def name(self) -> str:
        if len(self.params) == 1:
            return self.params[0].key
        return "zip(" + ",".join(p.key for p in self.params) + ")"


class SearchSpace:
    """The points of a spec (without seeds: those replicate every point)."""

    def __init__(self, spec: SweepSpec) -> None:
        self.spec = spec
        zipped = {key: group for group in spec.zip for key in group}
        by_key = {p.key: p for p in spec.parameters}
        dims: list[Dim] = []
        done: set[str] = set()
        for p in spec.parameters:
            if p.key in done or p.kind == "value":
                continue
            if p.key in zipped:
                group = tuple(by_key[k] for k in zipped[p.key])
                rows = tuple(zip(*(q.choices for q in group), strict=True))
                dims.append(Dim(group, rows))
                done.update(zipped[p.key])
            else:
                dims.append(Dim((p,), tuple((c,) for c in p.choices) if p.kind == "values" else ()))
                done.add(p.key)
        self.dims = tuple(dims)
        self.fixed = tuple((p, p.choices[0]) for p in spec.parameters if p.kind == "value")
        self._order = {p.key: i for i, p in enumerate(spec.parameters)}

    # -- grid --------------------------------------------------------------------------

    @property
    def grid_size(self) -> int:
        """Points of the full grid (before constraints)."""
        return grid_size(self.spec.parameters, self.spec.zip)

    def point(self, index: int) -> Point:
        """Grid point `index` (0-based; the last dimension varies fastest)."""
        picked: list[tuple[Param, Choice]] = list(self.fixed)
        rest = index
        for dim in reversed(self.dims):
            rest, i = divmod(rest, len(dim.rows))
            picked += zip(dim.params, dim.rows[i], strict=True)
        return self._point(index, picked)

    def grid(self, start: int = 0) -> Iterator[Point]:
        for i in range(start, self.grid_size):
            yield self.point(i)

    def _point(self, index: int, picked: list[tuple[Param, Choice]]) -> Point:
        picked.sort(key=lambda pc: self._order[pc[0].key])
        return Point(index, tuple(picked))

    # -- sampling ----------------------------------------------------------------------

    def distributions(self) -> dict[str, Any]:
        """Optuna distributions of the searched dimensions, by name (a zip group samples a row)."""
        from optuna.distributions import CategoricalDistribution

        out: dict[str, Any] = {}
        for dim in self.dims:
            if len(dim.params) == 1:
                out[dim.name] = dim.params[0].optuna_distribution()
            else:
                out[dim.name] = CategoricalDistribution(tuple(range(len(dim.rows))))
        return out

    def point_from_sample(self, index: int, sample: dict[str, Any]) -> Point:
        """The point of Optuna parameters (a trial's `params`) named as in `distributions()`."""
        picked: list[tuple[Param, Choice]] = list(self.fixed)
        for dim in self.dims:
            value = sample[dim.name]
            if len(dim.params) == 1:
                picked.append((dim.params[0], dim.params[0].choice_for(value)))
            else:
                picked += zip(dim.params, dim.rows[int(value)], strict=True)
        return self._point(index, picked)

    def sample(self, n: int, accept: Callable[[Point], bool] = lambda _: True, max_draws: int | None = None) -> Samples:
        """`n` points drawn with Optuna's RandomSampler(seed=spec.seed), skipping rejected ones.

        Reproducible: the same spec (same seed) gives the same points, in the same order.
        """
        import optuna

        max_draws = max_draws if max_draws is not None else max(1000, 100 * n)
        distributions = self.distributions()
        points: list[Point] = []
        draws = 0
        with quiet_optuna():
            study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=self.spec.seed))
            while len(points) < n and draws < max_draws:
                trial = study.ask(fixed_distributions=distributions)
                draws += 1
                point = self.point_from_sample(len(points), trial.params)
                if accept(point):
                    points.append(point)
                    study.tell(trial, 0.0)
                else:
                    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        return Samples(points=points, draws=draws)


@dataclass(frozen=True)
class Samples:
    points: list[Point]
    draws: int  # points drawn, rejected ones (constraints) included
