"""The plan: a sweep spec expanded into jobs, every job composed and validated first.

    plan = make_plan(spec, base_overrides)          # raises SweepError listing every bad job
    print(plan.render(rows=20))                      # the dry-run table, totals, cost
    plan.write(sweep_dir / "plan.json")

Order: points in grid order (the last dimension fastest, as Hydra's BasicSweeper) or in
sampling order; the seeds of a point are consecutive jobs that share its `point_id`.

Huge grids: `make_plan(..., limit=N)` composes and validates only the first N jobs (a dry
run shows those) while still counting every point and estimating the cost of every job
(constraints and resources are read straight from the values when they can be). A plan
made so says `complete=False`; a run always plans with `limit=None`.

A run's plan is streamed: grid points are decoded one at a time, and each job, once
validated, goes to a file (sweep/spool.py), so planning holds no job in memory whatever
the grid's size; `progress(done, total, seconds)` is called every few seconds. Above
`max_jobs` jobs (MAX_JOBS; `hydra.sweeper.max_jobs`) a run is refused before anything is
composed, with how to write the search as a random or Optuna one instead.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from rllm_sweeps.config.composed_base import Base
from rllm_sweeps.config.job_composer import JobComposer, JobConfig, Setting
from rllm_sweeps.config.native import quiet_skyrl
from rllm_sweeps.config.overrides import did_you_mean
from rllm_sweeps.config.plain_tree import plain_get, related, value_is_plain
from rllm_sweeps.config.validate import ConfigError, ConfigIssue
from rllm_sweeps.jobhash import config_hash
from rllm_sweeps.keymap import KEY_MAPPINGS
from rllm_sweeps.records.layout import PLAN_FILE
from rllm_sweeps.sweep.constraints import Constraint, ConstraintEvalError
from rllm_sweeps.sweep.space import Point, SearchSpace
from rllm_sweeps.sweep.spec import SweepError, SweepRequest, SweepSpec, parse_sweep_lenient
from rllm_sweeps.sweep.spool import JobSpool
from rllm_sweeps.sweep.values import format_value

PLAN_SCHEMA_VERSION = 1
RESOURCE_KEYS = ("resources.nodes", "resources.gpus_per_node", "resources.time_min")
OPTUNA_PROBES = 3  # sampled points a run of an Optuna sweep validates before its first trial
_MAX_CONSTRAINT_ERRORS = 20
_MAX_BAD_JOBS_SHOWN = 50  # invalid jobs whose problems are listed (all are counted)
# A run composes and validates every job before it launches any (about 0.3 ms a job, and each job
# is a training run): larger grids are refused with how to sample them instead.
MAX_JOBS = 100_000
PROGRESS_EVERY_S = 2.0

Progress = Callable[[int, int, float], None]  # (jobs planned, jobs in all (at most), seconds so far)


@dataclass(frozen=True)
class PlannedJob:
    index: int  # position in the plan (0-based)
    overrides: list[str]  # everything the job needs: `python train.py *overrides`
    params: dict[str, Any]  # the point's values (swept and fixed parameters; not the seed)
    point_id: str  # the same for every seed of a point: config hash without the seed
    point_index: int  # the point's position among the plan's points
    seed: int | None  # the job's seed_key value
    config_hash: str  # rllm_sweeps.jobhash.config_hash of the job's resolved config
    resources: dict[str, Any]  # the job's resources.* (nodes, gpus_per_node, time_min, ...)

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _JOB_FIELDS}  # shallow: written, not kept

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlannedJob:
        return cls(**data)


_JOB_FIELDS = tuple(f.name for f in fields(PlannedJob))


@dataclass(frozen=True)
class Totals:
    points: int  # points in the plan (after constraints)
    jobs: int  # points x seeds
    seeds: int  # jobs per point
    candidates: int  # grid points before constraints, or samples drawn
    dropped: int  # points the constraints dropped
    validated: int  # jobs composed and validated
    node_hours: float  # sum over jobs of nodes x time limit
    gpu_hours: float  # sum over jobs of nodes x GPUs per node x time limit
    plan_seconds: float = 0.0


def job_spool() -> JobSpool:
    """A sequence of PlannedJob kept on disk (a run's plan: any number of jobs in bounded memory)."""
    return JobSpool(PlannedJob.to_dict, PlannedJob.from_dict)


@dataclass
class Plan:
    spec: SweepSpec
    base_overrides: list[str]
    # Every job when `complete` (a run's plan: a JobSpool, read from disk as it is iterated); else
    # the first `limit`. Iterate it, index it; do not hold all of it.
    jobs: Sequence[PlannedJob]
    totals: Totals
    complete: bool = True
    notes: list[str] = field(default_factory=list)
    resource_shapes: list[dict[str, Any]] = field(default_factory=list)  # the distinct resources.* of the jobs

    def header(self) -> dict[str, Any]:
        """plan.json without its jobs."""
        return {
            "schema_version": PLAN_SCHEMA_VERSION,
            "spec": self.spec.to_dict(),
            "source": self.spec.source,
            "base_overrides": list(self.base_overrides),
            "complete": self.complete,
            "totals": asdict(self.totals),
            "notes": list(self.notes),
        }

    def to_dict(self) -> dict[str, Any]:
        return {**self.header(), "jobs": [j.to_dict() for j in self.jobs]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def write(self, path: Path | str) -> Path:
        """plan.json, written atomically; the jobs are streamed to it, one line each."""
        from rllm_sweeps.results import open_atomic

        path = Path(path)
        if path.is_dir() or path.suffix != ".json":
            path = path / PLAN_FILE
        head = json.dumps(self.header(), indent=2, sort_keys=True, default=str)
        lines = self.jobs.lines() if isinstance(self.jobs, JobSpool) else _job_lines(self.jobs)
        with open_atomic(path) as f:
            f.write(head[: head.rindex("}")].rstrip() + ',\n  "jobs": [')
            for i, line in enumerate(lines):
                f.write(("\n    " if i == 0 else ",\n    ") + line.decode())
            f.write("\n  ]\n}\n")
        return path

    def render(self, rows: int = 20) -> str:
        """The dry-run view: what runs, what it costs, the first `rows` jobs."""
        return render_plan(self, rows)


def _job_lines(jobs: Iterable[PlannedJob]) -> Iterator[bytes]:
    for job in jobs:
        yield json.dumps(job.to_dict(), separators=(",", ":"), default=str).encode()


# ---- entry points ----------------------------------------------------------------------


def make_plan(
    spec: SweepSpec,
    base_overrides: Sequence[str] = (),
    *,
    limit: int | None = None,
    validate: bool = True,
    max_jobs: int | None = MAX_JOBS,
    progress: Progress | None = None,
) -> Plan:
    """Expand `spec` into jobs on top of `base_overrides`; compose and validate every job
    (the first `limit` only, when given: a dry run of a huge grid). Raises SweepError
    naming every problem: unknown keys, constraints, and each bad job with its overrides.

    validate=False composes and hashes without validating (a preview: it skips importing
    SkyRL's validators, seconds in a fresh process); the plan says so (`validated` 0).
    Without `limit`, more than `max_jobs` jobs (None: no bound) is a SweepError saying how
    to sample the space instead; `progress` hears how far planning is every few seconds.
    """
    return _Planner(spec, list(base_overrides), validate, max_jobs, progress).plan(limit, pending=[])


def plan_sweep(
    overrides: Iterable[str],
    *,
    limit: int | None = None,
    validate: bool = True,
    sweep_file: str | Path | None = None,
    params: dict[str, str] | None = None,
    config_loader: Any = None,
    max_jobs: int | None = MAX_JOBS,
    progress: Progress | None = None,
) -> Plan:
    """parse_sweep + make_plan, with the problems of both reported together."""
    request, issues = parse_sweep_lenient(overrides, sweep_file=sweep_file, params=params, config_loader=config_loader)
    return plan_request(request, limit=limit, validate=validate, pending=issues, max_jobs=max_jobs, progress=progress)


def plan_request(
    request: SweepRequest,
    *,
    limit: int | None = None,
    validate: bool = True,
    pending: Sequence[ConfigIssue] = (),
    max_jobs: int | None = MAX_JOBS,
    progress: Progress | None = None,
) -> Plan:
    """make_plan for a parsed command line; `pending` problems are reported with the plan's."""
    planner = _Planner(request.spec, list(request.base_overrides), validate, max_jobs, progress)
    return planner.plan(limit, pending=list(pending))


# ---- the planner -----------------------------------------------------------------------


def _strip_seed(plain: dict[str, Any], seed_key: str) -> dict[str, Any]:
    """The config without its seed (nor the seed's native mirrors): what a point is."""
    paths = [seed_key] + [m.native for m in KEY_MAPPINGS if m.common == seed_key]
    out = dict(plain)
    for path in paths:
        parts = path.split(".")
        node: Any = out
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                node = None
                break
            node[part] = node = dict(child)
        if isinstance(node, dict):
            node.pop(parts[-1], None)
    return out


@dataclass
class _Scan:
    points: Iterable[Point]  # the points to materialize (a run's grid: decoded as they are taken)
    candidates: int  # grid points, or samples drawn
    count: int | None  # points the constraints accept (None: known once `points` is consumed)
    node_hours: float = 0.0  # of every job (partial plans)
    gpu_hours: float = 0.0


class _Planner:
    def __init__(
        self,
        spec: SweepSpec,
        base_overrides: list[str],
        validate: bool = True,
        max_jobs: int | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.spec = spec
        self.validate = validate
        self.max_jobs = max_jobs
        self.progress = progress
        self.points_taken = 0  # points materialize() went through
        self.resource_shapes: dict[str, dict[str, Any]] = {}
        self.base_overrides = base_overrides
        self.space = SearchSpace(spec)
        self.composer = JobComposer(base_overrides)
        self.issues: list[ConfigIssue] = []
        self.notes: list[str] = list(spec.notes)
        self.constraint_keys = tuple(sorted({k for c in spec.constraints for k in c.keys}))
        self.setting_keys = frozenset(p.key for p in spec.parameters if not p.is_group)
        self._readers: dict[Any, tuple[Base | None, bool]] = {}
        self._constraint_errors = 0
        self.attempted = 0  # jobs materialize() tried
        self.bad_jobs = 0  # of those, invalid ones
        self.duplicates = 0  # jobs whose config an earlier job has
        self.first_duplicate: tuple[int, int] | None = None  # (job, the earlier job)

    # -- helpers -------------------------------------------------------------------------

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

    # -- checks that need a composed config ---------------------------------------------

    def check_keys(self, known: set[str]) -> None:
        spec = self.spec
        params = {p.key: p for p in spec.parameters}
        for p in spec.parameters:
            if p.is_group or p.prefix or p.key in known:
                continue
            hint = did_you_mean(p.key, known)
            self.issues.append(ConfigIssue(p.source, f"{p.source}: unknown key '{p.key}'{hint}"))
        if spec.seeds is not None and spec.seed_key not in known:
            hint = did_you_mean(spec.seed_key, known)
            self.issues.append(ConfigIssue("seed_key", f"{spec.source}: seed_key '{spec.seed_key}' is not a key{hint}"))
        for c in spec.constraints:
            for key in c.keys:
                if key in params or key in known:
                    if key == spec.seed_key and spec.seeds is not None:
                        self.issues.append(
                            ConfigIssue(
                                c.source,
                                f"{c.source}: constraint '{c.text}' reads {key}, which varies within a point "
                                "(the seeds); constraints drop points",
                            )
                        )
                    continue
                hint = did_you_mean(key, known)
                self.issues.append(
                    ConfigIssue(c.source, f"{c.source}: constraint '{c.text}' names '{key}', not a config key{hint}")
                )

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
        resources = {}
        for key in RESOURCE_KEYS:
            try:
                resources[key.split(".", 1)[1]] = read(key)
            except KeyError:
                pass
        return _sum_cost([resources])

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

    # -- the plan ------------------------------------------------------------------------

    def check(self, pending: list[ConfigIssue]) -> None:
        """What holds for the whole sweep: the base composes, every key exists. Raises SweepError."""
        self.issues = list(pending)
        groups = self.first_groups()
        first = self.base_of(groups)
        try:
            known = first.known_keys if first is not None else self.composer.group_config(groups)[1]
            self.check_keys(known)
        except ConfigError:
            pass  # the base's problem is reported already
        if self.issues:
            raise SweepError(self.issues)

    def check_size(self) -> None:
        """A run plans every job first: more than `max_jobs` is refused, saying how to sample instead."""
        spec = self.spec
        if self.max_jobs is None or spec.method == "optuna":  # Optuna's trials are planned one at a time
            return
        if spec.method == "grid":
            points = self.space.grid_size
            jobs = points * spec.n_seeds
            seeds = f" x {spec.n_seeds} seeds = {jobs:,} jobs" if spec.seeds else " (one job each)"
            what = f"the grid has {points:,} points{seeds}{' before constraints' if spec.constraints else ''}"
        else:
            jobs = spec.budget or 0
            what = f"budget {jobs:,} asks for {jobs:,} jobs"
        if jobs <= self.max_jobs:
            return
        message = (
            f"{what}, more than hydra.sweeper.max_jobs={self.max_jobs:,}: a run composes and validates every "
            "job before it launches any, and each job is a training run. To search a space this large, sample "
            "it: add sweep.method=random sweep.budget=N (N points drawn at random from the same values) or "
            "sweep.method=optuna sweep.budget=N (Optuna's TPE sampler, with pruning; docs/OPTUNA.md). "
            "To plan it all anyway: hydra.sweeper.max_jobs=" + str(jobs)
        )
        raise SweepError([ConfigIssue("max_jobs", message)])

    def check_count(self, scan: _Scan) -> None:
        spec = self.spec
        count = scan.count or 0
        n_jobs = count * spec.n_seeds
        if count == 0:
            texts = "; ".join(f"'{c.text}' ({c.source})" for c in spec.constraints)
            raise SweepError(
                [ConfigIssue("constraints", f"the constraints drop all {scan.candidates} points: {texts}")]
            )
        if spec.method == "grid" and spec.budget is not None and n_jobs > spec.budget:
            raise SweepError(
                [
                    ConfigIssue(
                        "budget",
                        f"{spec.source}: budget: the grid has {n_jobs} jobs ({count} points x {spec.n_seeds} "
                        f"seeds), more than the budget of {spec.budget}",
                    )
                ]
            )

    def plan(self, limit: int | None, pending: list[ConfigIssue]) -> Plan:
        spec = self.spec
        start = time.perf_counter()
        with quiet_skyrl():
            self.check(pending)
            if limit is None:
                self.check_size()
            scan = self.points(limit)
            if self.issues:
                raise SweepError(self.issues)
            n_seeds = spec.n_seeds
            if scan.count is not None:
                self.check_count(scan)
            # A run's plan (every job) is streamed to disk; a preview's few jobs stay in memory.
            sink: list[PlannedJob] | JobSpool = job_spool() if limit is None else []
            jobs, bad = self.materialize(scan.points, limit, sink=sink, started=start)
            if scan.count is None:  # streamed: counted as the points were taken
                scan.count = self.points_taken
                self.check_count(scan)
            n_jobs = scan.count * n_seeds
            if bad:
                n_bad = self.bad_jobs
                shown = f" (the first {_MAX_BAD_JOBS_SHOWN} shown)" if n_bad > _MAX_BAD_JOBS_SHOWN else ""
                raise SweepError(bad, where=f"{n_bad} of {self.attempted} jobs are invalid{shown}")
            complete = len(jobs) == n_jobs and spec.method != "optuna"  # Optuna's trials come later
            node_h, gpu_h = _sum_cost(j.resources for j in jobs) if complete else (scan.node_hours, scan.gpu_hours)
        if self.duplicates and self.first_duplicate is not None:
            first_dup = self.first_duplicate
            self.notes.append(
                f"{self.duplicates} job(s) repeat the config of an earlier job (job {first_dup[0]} = job "
                f"{first_dup[1]}): duplicated values?"
            )
        if self.composer.stats["exact"]:
            self.notes.append(
                f"{self.composer.stats['exact']} config(s) composed the exact (slow) way: they set SkyRL-native "
                "keys, dict or interpolated values, or +keys"
            )
        totals = Totals(
            points=scan.count,
            jobs=n_jobs,
            seeds=n_seeds,
            candidates=scan.candidates,
            dropped=scan.candidates - scan.count,
            validated=len(jobs) if self.validate else 0,
            node_hours=node_h,
            gpu_hours=gpu_h,
            plan_seconds=time.perf_counter() - start,
        )
        shapes = list(self.resource_shapes.values())
        return Plan(spec, list(self.base_overrides), jobs, totals, complete, self.notes, shapes)

    def points(self, limit: int | None) -> _Scan:
        """The points to materialize (all of them, or enough for `limit` jobs), how many
        points the plan has, and (for a partial plan) the cost of all its jobs."""
        spec = self.spec
        need = None if limit is None else math.ceil(limit / spec.n_seeds)
        if spec.method == "optuna":
            return self.optuna_probes(need)
        if spec.method == "random":
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
            return _Scan(accepted, size, None)
        const = self.constant_cost() if not spec.constraints else None
        if const is not None:  # nothing to scan: every point is in, every job costs the same
            kept = list(itertools.islice(self.space.grid(), need))
            jobs = size * spec.n_seeds
            return _Scan(kept, size, size, const[0] * jobs, const[1] * jobs)
        return self.scan(self.space.grid(), need, size)

    def optuna_probes(self, need: int | None) -> _Scan:
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
            return _Scan([], n, n)
        costs = [self.job_cost(p) for p in samples.points]
        node_h = sum(c[0] for c in costs) / max(len(costs), 1) * spec.budget
        gpu_h = sum(c[1] for c in costs) / max(len(costs), 1) * spec.budget
        return _Scan(samples.points, n, n, node_h, gpu_h)

    def scan(
        self, points: Iterable[Point], keep: int | None, candidates: int, check: bool = True, cost: bool = True
    ) -> _Scan:
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
        return _Scan(kept, candidates, count, node_h, gpu_h)

    def materialize(
        self,
        points: Iterable[Point],
        limit: int | None,
        first_index: int = 0,
        first_point: int = 0,
        sink: list[PlannedJob] | JobSpool | None = None,
        started: float | None = None,
    ) -> tuple[Sequence[PlannedJob], list[ConfigIssue]]:
        """Compose and validate the jobs of `points` (at most `limit`), numbered from
        `first_index` (jobs) and `first_point` (points), into `sink` (default: a new list);
        the jobs and the problems (those of the first _MAX_BAD_JOBS_SHOWN bad jobs)."""
        spec = self.spec
        jobs: list[PlannedJob] | JobSpool = [] if sink is None else sink
        bad: list[ConfigIssue] = []
        self.bad_jobs = 0
        seen: set[str] = set()
        index = first_index
        if limit is not None:
            limit += first_index
        seeds: Sequence[int | None] = spec.seeds if spec.seeds else [None]
        total = self.space.grid_size * spec.n_seeds if spec.method == "grid" else (spec.budget or 0)
        started = time.perf_counter() if started is None else started
        reported = time.perf_counter()
        self.points_taken = 0
        for point_index, point in enumerate(points, start=first_point):
            if limit is not None and index >= limit:
                break
            self.points_taken += 1
            if self.progress is not None and index % 256 == 0 and time.perf_counter() - reported > PROGRESS_EVERY_S:
                reported = time.perf_counter()
                self.progress(index - first_index, total, reported - started)
            groups, settings = self.split(point)
            base = self.base_of(groups)
            point_id = None
            for seed in seeds:
                if limit is not None and index >= limit:
                    break
                self.attempted += 1
                job_settings = settings + ([self.seed_setting(seed)] if seed is not None else [])
                swept = list(groups) + [s.override for s in job_settings]
                overrides = self.base_overrides + swept
                if base is None:
                    index += 1
                    continue
                config = self.composer.job(base, job_settings, overrides, validate=self.validate)
                if config.issues or config.plain is None:
                    self.bad_jobs += 1
                    if self.bad_jobs <= _MAX_BAD_JOBS_SHOWN:
                        where = f"job {index} [{' '.join(swept)}]"
                        bad += [ConfigIssue(where, f"{where}: {i.message}") for i in config.issues]
                    index += 1
                    continue
                job = self.planned(index, point_index, point, overrides, seed, config, point_id, base)
                point_id = job.point_id
                if job.config_hash in seen:
                    self.duplicates += 1
                    if self.first_duplicate is None:
                        self.first_duplicate = (index, next(j.index for j in jobs if j.config_hash == job.config_hash))
                seen.add(job.config_hash)
                self.resource_shapes.setdefault(json.dumps(job.resources, sort_keys=True), job.resources)
                for note in config.notes:
                    if note not in self.notes:
                        self.notes.append(note)
                jobs.append(job)
                index += 1
        if self.progress is not None and time.perf_counter() - started > PROGRESS_EVERY_S:
            self.progress(index - first_index, total, time.perf_counter() - started)
        if self.issues:  # bases that did not compose
            bad = self.issues + bad
        return jobs, bad

    def planned(
        self,
        index: int,
        point_index: int,
        point: Point,
        overrides: list[str],
        seed: int | None,
        config: JobConfig,
        point_id: str | None,
        base: Base | None = None,
    ) -> PlannedJob:
        plain = config.plain
        assert plain is not None
        canonical = base.canonical if base is not None and not config.exact_path else None
        scratch: dict[int, Any] = {}  # the job's and its point's configs share most of their dicts
        chash = config_hash(plain, canonical=canonical, scratch=scratch)
        if point_id is None:
            point_id = config_hash(_strip_seed(plain, self.spec.seed_key), canonical=canonical, scratch=scratch)
        if seed is None:
            try:
                seed = plain_get(plain, self.spec.seed_key)
            except KeyError:
                seed = None
        resources = plain.get("resources")
        return PlannedJob(
            index=index,
            overrides=overrides,
            params=point.params,
            point_id=point_id,
            point_index=point_index,
            seed=seed,
            config_hash=chash,
            resources=dict(resources) if isinstance(resources, dict) else {},
        )


class TrialPlanner:
    """Jobs one point at a time (the Optuna sweeper's trials), after the sweep is checked once.

    trials = TrialPlanner(spec, base_overrides)            # SweepError: unknown keys, bad base
    trials.violated(point)                                 # the constraints the point breaks
    trials.jobs(point, first_index=8, point_index=4)       # composed + validated; SweepError
    """

    def __init__(self, spec: SweepSpec, base_overrides: Sequence[str], pending: Sequence[ConfigIssue] = ()) -> None:
        self.spec = spec
        self._planner = _Planner(spec, list(base_overrides))
        with quiet_skyrl():
            self._planner.check(list(pending))

    def violated(self, point: Point) -> list[Constraint]:
        """The constraints `point` breaks (none: it is feasible). SweepError when one cannot be evaluated."""
        planner = self._planner
        if not self.spec.constraints:
            return []
        planner.issues = []
        read = planner.reader(point, planner.constraint_keys)
        if read is None:
            raise SweepError(planner.issues)
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
        planner.issues = []
        with quiet_skyrl():
            jobs, bad = planner.materialize([point], None, first_index, point_index)
        if bad:
            raise SweepError(bad)
        return jobs


def _sum_cost(resources: Iterable[dict[str, Any]]) -> tuple[float, float]:
    node_h = gpu_h = 0.0
    for r in resources:
        nodes, gpus, minutes = r.get("nodes"), r.get("gpus_per_node"), r.get("time_min")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (nodes, gpus, minutes)):
            continue
        node_h += nodes * minutes / 60
        gpu_h += nodes * gpus * minutes / 60
    return node_h, gpu_h


# ---- the dry-run table -----------------------------------------------------------------


def _short(value: float) -> str:
    return f"{value:,.1f}" if value < 1e6 else f"{value:.3g}"


def render_plan(plan: Plan, rows: int = 20) -> str:
    spec, t = plan.spec, plan.totals
    lines = []
    head = f"Sweep {spec.name or spec.source}: method {spec.method}"
    seeds = f" x {t.seeds} seeds" if spec.seeds else ""
    lines.append(f"{head}, {t.points:,} points{seeds} = {t.jobs:,} jobs, parallel {spec.parallel}")
    if spec.method == "grid" and t.dropped:
        lines.append(f"Constraints dropped {t.dropped:,} of {t.candidates:,} grid points")
    elif spec.method == "random":
        lines.append(f"Sampled with Optuna's RandomSampler(seed={spec.seed}): {t.candidates:,} draws")
    elif spec.optuna is not None:
        o = spec.optuna
        lines.append(
            f"Optuna: sampler {o.sampler}, pruner {o.pruner}; {t.points:,} finished trials (complete or pruned), "
            "each asked when a slot frees, its jobs validated before they launch"
        )
    if plan.base_overrides:
        lines.append("Every job: " + " ".join(plan.base_overrides))
    if not t.validated:
        lines.append(f"Composed {len(plan.jobs):,} of {t.jobs:,} jobs, validated none yet ({t.plan_seconds:.2f} s)")
    elif plan.complete:
        lines.append(f"Validated: all {t.validated:,} jobs ({t.plan_seconds:.2f} s)")
    elif spec.method == "optuna":
        lines.append(
            f"Validated: the jobs of {len(plan.jobs) // t.seeds:,} points drawn at random ({t.plan_seconds:.2f} s); "
            "the rows below are those examples, not the trials Optuna will ask"
        )
    else:
        lines.append(
            f"Validated: the first {t.validated:,} of {t.jobs:,} jobs ({t.plan_seconds:.2f} s); "
            "a run validates every job before it launches any"
        )
    lines.append(
        f"Estimated use: {_short(t.node_hours)} node-hours, {_short(t.gpu_hours)} GPU-hours "
        "(upper bound: every job's resources.nodes x gpus_per_node x time_min)"
    )
    for note in plan.notes:
        lines.append(f"note: {note}")
    shown = plan.jobs[:rows]
    if shown:
        common = set(plan.base_overrides)
        table = [("#", "point", "seed", "config hash", "nodes x gpus", "time", "overrides")]
        for j in shown:
            r = j.resources
            table.append(
                (
                    str(j.index),
                    j.point_id[:8],
                    "" if j.seed is None else str(j.seed),
                    j.config_hash,
                    f"{r.get('nodes', '?')} x {r.get('gpus_per_node', '?')}",
                    f"{r.get('time_min', '?')}m",
                    " ".join(o for o in j.overrides if o not in common),
                )
            )
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
        lines.append("")
        for row in table:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1])
        if t.jobs > len(shown) and spec.method != "optuna":
            lines.append(f"... {t.jobs - len(shown):,} more jobs (showing {len(shown)} of {t.jobs:,})")
    return "\n".join(lines)


__all__ = [
    "PLAN_FILE",
    "Plan",
    "PlannedJob",
    "Totals",
    "TrialPlanner",
    "make_plan",
    "plan_request",
    "plan_sweep",
    "render_plan",
]
