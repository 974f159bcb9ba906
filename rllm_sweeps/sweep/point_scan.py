"""A sweep's points before any job is composed: counted, filtered by the constraints, costed.

Constraints and resources are read from a point's values and its base config (composed once
per combination of config-group choices) when that is exact, and from the point's config
composed without validation otherwise. So a dry run of a huge grid counts and costs every
point while it composes only the jobs it shows, and a run checks each point's constraints as
the grid is decoded (planner.py composes and validates the jobs of the points kept).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rllm_sweeps.config.composed_base import Base
from rllm_sweeps.config.gpu_trainer_rules import NODE_GPUS_KEYS, node_gpus_of
from rllm_sweeps.config.job_composer import JobComposer, Setting
from rllm_sweeps.config.override_values import format_value
from rllm_sweeps.plain_tree import plain_get, related, value_is_plain
from rllm_sweeps.problems import ConfigError, ConfigIssue
from rllm_sweeps.records.resources import hours
from rllm_sweeps.sweep.constraints import ConstraintEvalError
from rllm_sweeps.sweep.space import Point, SearchSpace
from rllm_sweeps.sweep.spec import SweepSpec

# What a job's cost reads: its nodes and time, and what its GPUs per node follow (gpu_trainer_rules).
RESOURCE_KEYS = ("resources.nodes", "resources.time_min", *NODE_GPUS_KEYS)
OPTUNA_PROBES = 3  # sampled points a run of an Optuna sweep validates before its first trial
_MAX_CONSTRAINT_ERRORS = 20


@dataclass
class Scan:
    """The points to compose into jobs, and what is known of all of the plan's points beforehand."""

    points: Iterable[Point]  # the points to materialize (a run's grid: decoded as they are taken)
    candidates: int  # grid points, or samples drawn
    count: int | None  # points the constraints accept (None: known once `points` is consumed)
    node_hours: float = 0.0  # of every job (partial plans)
    gpu_hours: float = 0.0


class PointScanner:
    """The points of `spec` and what can be read of them without composing their jobs. Its
    problems go to `issues` (the planner's list: they are reported with the plan's)."""

    def __init__(
        self, spec: SweepSpec, base_overrides: list[str], composer: JobComposer, issues: list[ConfigIssue]
    ) -> None:
        self.spec = spec
        self.base_overrides = base_overrides
        self.composer = composer
        self.issues = issues
        self.space = SearchSpace(spec)
        self.constraint_keys = tuple(sorted({k for c in spec.constraints for k in c.keys}))
        self.setting_keys = frozenset(p.key for p in spec.parameters if not p.is_group)
        self._readers: dict[Any, tuple[Base | None, bool]] = {}
        self._constraint_errors = 0

    # -- a point's parts -------------------------------------------------------------------

    def split(self, point: Point) -> tuple[tuple[str, ...], list[Setting]]:
        """A point's config-group choices (Hydra composes those) and its values."""
        groups = tuple(p.override(c) for p, c in point.choices if p.is_group)
        settings = [Setting(p.key, c.value, c.text, p.prefix) for p, c in point.choices if not p.is_group]
        return groups, settings

    def seed_setting(self, seed: int) -> Setting:
        return Setting(self.spec.seed_key, seed, format_value(seed))

    def base_of(self, groups: tuple[str, ...]) -> Base | None:
        try:
            return self.composer.base(groups)
        except ConfigError as err:
            for issue in err.issues:
                if issue not in self.issues:
                    self.issues.append(issue)
            return None

    def first_groups(self) -> tuple[str, ...]:
        if self.space.dims and all(d.rows for d in self.space.dims):
            return self.split(self.space.point(0))[0]
        return tuple(p.override(p.choices[0]) for p in self.spec.parameters if p.is_group and p.choices)

    # -- reading a point's values without composing it ----------------------------------

    def reader(self, point: Point, keys: tuple[str, ...]) -> Callable[[str], Any] | None:
        """key -> value over the point's config (for constraints and resources), read from the
        point's values and its base when that is exact, else from the composed config."""
        groups = tuple(p.override(c) for p, c in point.choices if p.is_group)
        entry = self._readers.get((groups, keys))
        if entry is None:
            base = self.base_of(groups)
            cheap = (
                base is not None
                and self.composer.readable(base, self.setting_keys, keys)
                and all(self._plain_param(k) for k in keys if k in self.setting_keys)
            )
            entry = self._readers[(groups, keys)] = (base, cheap)
        base, cheap = entry
        if base is None:
            return None
        values = point.params
        if cheap:
            plain = base.plain

            def read(key: str) -> Any:
                return values[key] if key in values else plain_get(plain, key)

            return read
        _, settings = self.split(point)
        seed = [self.seed_setting(self.spec.seeds[0])] if self.spec.seeds else []
        job = self.composer.job(base, settings + seed, self.base_overrides + list(groups), validate=False)
        if job.plain is None:
            return None
        full = job.plain
        group_keys = {p.key for p in self.spec.parameters if p.is_group}

        def read_full(key: str) -> Any:
            return values[key] if key in group_keys else plain_get(full, key)

        return read_full

    def _plain_param(self, key: str) -> bool:
        p = self.spec.param(key)
        return not p.prefix and p.kind != "distribution" and all(value_is_plain(c.value) for c in p.choices)

    def accepts(self, point: Point) -> bool:
        if not self.spec.constraints:
            return True
        read = self.reader(point, self.constraint_keys)
        if read is None:
            return False
        for c in self.spec.constraints:
            try:
                if not c.holds(read):
                    return False
            except (ConstraintEvalError, KeyError) as err:
                self._constraint_errors += 1
                if self._constraint_errors <= _MAX_CONSTRAINT_ERRORS:
                    what = f"missing key {err}" if isinstance(err, KeyError) else str(err)
                    where = " ".join(point.overrides)
                    self.issues.append(ConfigIssue(c.source, f"{c.source}: constraint '{c.text}' at [{where}]: {what}"))
                return False
        return True

    def job_cost(self, point: Point) -> tuple[float, float]:
        """Node-hours and GPU-hours of one job of this point."""
        read = self.reader(point, RESOURCE_KEYS)
        if read is None:
            return 0.0, 0.0
        values = {}  # a value that cannot be read: no cost
        for key in ("resources.nodes", "resources.time_min"):
            try:
                values[key] = read(key)
            except KeyError:
                pass
        try:
            gpus = node_gpus_of(read)
        except KeyError:
            gpus = None
        return hours(values.get("resources.nodes"), gpus, values.get("resources.time_min"))

    def constant_cost(self) -> tuple[float, float] | None:
        """A job's cost when it is the same for every job (no group choices, resources not swept)."""
        if any(p.is_group for p in self.spec.parameters) or not self.space.dims:
            return None
        if any(related(r, k) for r in RESOURCE_KEYS for k in self.setting_keys):
            return None
        point = self.space.point(0)
        if self.reader(point, RESOURCE_KEYS) is None or not self._readers[((), RESOURCE_KEYS)][1]:
            return None
        return self.job_cost(point)

    # -- which points, how many, their cost -----------------------------------------------

    def points(self, limit: int | None) -> Scan:
        """The points to materialize (all of them, or enough for `limit` jobs), how many
        points the plan has, and (for a partial plan) the cost of all its jobs."""
        spec = self.spec
        need = None if limit is None else math.ceil(limit / spec.n_seeds)
        if spec.method == "optuna":
            return self.optuna_probes(need)
        if spec.method in ("random", "pbt"):  # a PBT population's first points are drawn at random
            assert spec.budget is not None
            n = spec.budget // spec.n_seeds
            samples = self.space.sample(n, accept=self.accepts)
            if len(samples.points) < n and samples.points and not self.issues:
                self.issues.append(
                    ConfigIssue(
                        "constraints",
                        f"{spec.source}: the constraints accepted {len(samples.points)} of {samples.draws} samples, "
                        f"fewer than the {n} points the budget asks for",
                    )
                )
            return self.scan(samples.points, need, samples.draws, check=False)
        size = self.space.grid_size
        if limit is None:  # a run: the points are decoded and checked as they are taken
            accepted = (p for p in self.space.grid() if self.accepts(p))
            return Scan(accepted, size, None)
        const = self.constant_cost()
        if const is None:
            return self.scan(self.space.grid(), need, size)
        # Every job costs the same: count the points (those the constraints accept), cost them once.
        if spec.constraints:
            scan = self.scan(self.space.grid(), need, size, cost=False)
            kept, count = scan.points, scan.count or 0
        else:  # nothing to scan: every point is in
            kept, count = list(itertools.islice(self.space.grid(), need)), size
        jobs = count * spec.n_seeds
        return Scan(kept, size, count, const[0] * jobs, const[1] * jobs)

    def optuna_probes(self, need: int | None) -> Scan:
        """Optuna asks its points one at a time as results arrive; up front, a few points drawn
        at random (the constraints holding) are validated, and the budget is costed as if each
        of its jobs cost what theirs do."""
        spec = self.spec
        assert spec.budget is not None
        n = spec.budget // spec.n_seeds
        samples = self.space.sample(min(n, need or OPTUNA_PROBES), accept=self.accepts)
        if not samples.points and not self.issues:
            texts = "; ".join(f"'{c.text}' ({c.source})" for c in spec.constraints)
            self.issues.append(
                ConfigIssue("constraints", f"the constraints reject all {samples.draws} sampled points: {texts}")
            )
            return Scan([], n, n)
        costs = [self.job_cost(p) for p in samples.points]
        node_h = sum(c[0] for c in costs) / max(len(costs), 1) * spec.budget
        gpu_h = sum(c[1] for c in costs) / max(len(costs), 1) * spec.budget
        return Scan(samples.points, n, n, node_h, gpu_h)

    def scan(
        self, points: Iterable[Point], keep: int | None, candidates: int, check: bool = True, cost: bool = True
    ) -> Scan:
        """Count the points the constraints accept (`check`), keep the first `keep`, and (for a
        partial plan) cost every accepted point's jobs."""
        kept: list[Point] = []
        count = 0
        node_h = gpu_h = 0.0
        n_seeds = self.spec.n_seeds
        for p in points:
            if check and not self.accepts(p):
                continue
            count += 1
            if keep is None or len(kept) < keep:
                kept.append(p)
            if cost and keep is not None:
                n, g = self.job_cost(p)
                node_h += n * n_seeds
                gpu_h += g * n_seeds
        return Scan(kept, candidates, count, node_h, gpu_h)
