"""The planner: a sweep spec expanded into jobs, every job composed and validated first.

    plan = make_plan(spec, base_overrides)          # raises SweepError listing every bad job
    plan = plan_sweep(["+sweep=example"], limit=20)  # parse + plan: a dry run's first 20 jobs
    (trial_planner.py: the Optuna sweeper's jobs, a point at a time)

Huge grids: `make_plan(..., limit=N)` composes and validates only the first N jobs (a dry
run shows those) while still counting every point and estimating the cost of every job
(point_scan.py reads constraints and resources straight from the values when it can). A
plan made so says `complete=False`; a run always plans with `limit=None`.

A run's plan is streamed: grid points are decoded one at a time, and each job, once
validated, goes to a file (sweep/spool.py), so planning holds no job in memory whatever
the grid's size; `progress(done, total, seconds)` is called every few seconds. Above
`max_jobs` jobs (MAX_JOBS; `hydra.sweeper.max_jobs`) a run is refused before anything is
composed, with how to write the search as a random or Optuna one instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from rllm_sweeps.config.composed_base import Base
from rllm_sweeps.config.gpu_trainer_rules import node_gpus
from rllm_sweeps.config.job_composer import JobComposer, JobConfig
from rllm_sweeps.config.memory_need import job_memory_need
from rllm_sweeps.config.native import quiet_skyrl
from rllm_sweeps.config.overrides import unread_added_key
from rllm_sweeps.plain_tree import plain_get, plain_get_or_none
from rllm_sweeps.problems import ConfigError, ConfigIssue, did_you_mean_key
from rllm_sweeps.records.model import load
from rllm_sweeps.records.plan import PlannedJob, Totals
from rllm_sweeps.records.resources import Resources
from rllm_sweeps.sweep.idle_dimensions import IdleDimensions
from rllm_sweeps.sweep.job_hashes import job_hashes
from rllm_sweeps.sweep.parse_cli import parse_sweep_lenient
from rllm_sweeps.sweep.pbt_settings import pbt_job_issues
from rllm_sweeps.sweep.plan import Plan, job_spool
from rllm_sweeps.sweep.point_scan import PointScanner, Scan
from rllm_sweeps.sweep.space import Point
from rllm_sweeps.sweep.spec import SweepError, SweepRequest, SweepSpec
from rllm_sweeps.sweep.spool import JobSpool
from rllm_sweeps.sweeper_settings import MAX_JOBS

_MAX_BAD_JOBS_SHOWN = 50  # invalid jobs whose problems are listed (all are counted)
PROGRESS_EVERY_S = 2.0

Progress = Callable[[int, int, float], None]  # (jobs planned, jobs in all (at most), seconds so far)

Preview = Callable[[Plan], None]  # hears a dry run's jobs composed, before they are validated


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
    return Planner(spec, list(base_overrides), validate, max_jobs, progress).plan(limit, pending=[])


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
    preview: Preview | None = None,
) -> Plan:
    """parse_sweep + make_plan, with the problems of both reported together. `preview` (with a
    `limit`: a dry run) sees the jobs composed before they are validated (Planner.plan)."""
    request, issues = parse_sweep_lenient(overrides, sweep_file=sweep_file, params=params, config_loader=config_loader)
    return plan_request(
        request,
        limit=limit,
        validate=validate,
        pending=issues,
        max_jobs=max_jobs,
        progress=progress,
        preview=preview,
    )


def plan_request(
    request: SweepRequest,
    *,
    limit: int | None = None,
    validate: bool = True,
    pending: Sequence[ConfigIssue] = (),
    max_jobs: int | None = MAX_JOBS,
    progress: Progress | None = None,
    preview: Preview | None = None,
) -> Plan:
    """make_plan for a parsed command line; `pending` problems are reported with the plan's."""
    planner = Planner(request.spec, list(request.base_overrides), validate, max_jobs, progress)
    return planner.plan(limit, pending=list(pending), preview=preview)


# ---- the planner -----------------------------------------------------------------------


class Planner:
    """Checks a sweep, then composes and validates its jobs (point_scan.py picks the points)."""

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
        self.resource_shapes: dict[Resources, Resources] = {}  # the distinct ones, in order
        self.base_overrides = base_overrides
        self.composer = JobComposer(base_overrides)
        self.issues: list[ConfigIssue] = []  # shared with the scanner: its problems are the plan's
        self.scanner = PointScanner(spec, base_overrides, self.composer, self.issues)
        self.notes: list[str] = list(spec.notes)
        self.attempted = 0  # jobs materialize() tried
        self.bad_jobs = 0  # of those, invalid ones
        self.duplicates = 0  # jobs whose config an earlier job has
        self.first_duplicate: tuple[int, int] | None = None  # (job, the earlier job)
        self.job_hours = (0.0, 0.0)  # node- and GPU-hours of the jobs materialize() planned
        self.idle = IdleDimensions(())  # the swept settings that changed nothing in materialize()'s jobs

    # -- checks that need a composed config ---------------------------------------------

    def check_keys(self, known: set[str]) -> None:
        spec = self.spec
        params = {p.key: p for p in spec.parameters}
        for p in spec.parameters:
            if p.is_group or p.key in known:
                continue
            if p.prefix:  # `+key`: a key the config lacks; refused where nothing would read it
                if (unread := unread_added_key(p.key, known)) is not None:
                    self.issues.append(ConfigIssue(p.source, f"{p.source}: {unread}"))
                continue
            hint = did_you_mean_key(p.key, known)
            self.issues.append(ConfigIssue(p.source, f"{p.source}: unknown key '{p.key}'{hint}"))
        if spec.seeds is not None and spec.seed_key not in known:
            hint = did_you_mean_key(spec.seed_key, known)
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
                hint = did_you_mean_key(key, known)
                self.issues.append(
                    ConfigIssue(c.source, f"{c.source}: constraint '{c.text}' names '{key}', not a config key{hint}")
                )

    def check(self, pending: list[ConfigIssue]) -> None:
        """What holds for the whole sweep: the base composes, every key exists. Raises SweepError."""
        self.issues[:] = pending
        groups = self.scanner.first_groups()
        first = self.scanner.base_of(groups)
        try:
            known = first.known_keys if first is not None else self.composer.group_config(groups)[1]
            self.check_keys(known)
        except ConfigError:
            pass  # the base's problem is reported already
        if self.issues:
            raise SweepError(list(self.issues))

    def check_size(self) -> None:
        """A run plans every job first: more than `max_jobs` is refused, saying how to sample instead."""
        spec = self.spec
        if self.max_jobs is None or spec.method == "optuna":  # Optuna's trials are planned one at a time
            return
        if spec.method == "grid":
            points = self.scanner.space.grid_size
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

    def check_count(self, scan: Scan) -> None:
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

    def plan(self, limit: int | None, pending: list[ConfigIssue], preview: Preview | None = None) -> Plan:
        """Check the sweep, pick its points, then compose and validate their jobs (the first `limit`).
        With `preview` (and a `limit`), those jobs are composed without validation and shown to it
        first: a dry run prints its table before SkyRL's validators are imported (seconds in a
        fresh process), then the same jobs are validated, nothing else planned again."""
        if preview is not None and limit is None:
            raise ValueError("a preview shows a dry run's first jobs: give a limit")
        start = time.perf_counter()
        with quiet_skyrl():
            self.check(pending)
            if limit is None:
                self.check_size()
            scan = self.scanner.points(limit)
            if self.issues:
                raise SweepError(list(self.issues))
            if scan.count is not None:
                self.check_count(scan)
            if preview is not None and self.validate:
                preview(self.unvalidated(scan, limit, start))
            return self.jobs(scan, limit, start)

    def unvalidated(self, scan: Scan, limit: int | None, start: float) -> Plan:
        """The jobs of `scan` composed, not validated; then forgotten, so that the counts and
        notes of the plan that follows are its own (as if it had been made alone)."""
        stats = dict(self.composer.stats)
        self.validate = False
        try:
            return self.jobs(scan, limit, start)
        finally:
            self.validate = True
            self.composer.stats.update(stats)
            self.notes = list(self.spec.notes)
            self.resource_shapes = {}
            self.attempted = self.duplicates = 0
            self.first_duplicate = None

    def jobs(self, scan: Scan, limit: int | None, start: float) -> Plan:
        """The plan of the points of `scan`: their jobs (the first `limit`), totals and notes."""
        spec = self.spec
        n_seeds = spec.n_seeds
        with quiet_skyrl():
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
            if self.validate and jobs and (idle := self.idle.issues()):  # idle_dimensions.py
                if complete:
                    raise SweepError(idle)
                self.notes += [f"{i.message} (in the {len(jobs)} jobs validated so far)" for i in idle]
            node_h, gpu_h = self.job_hours if complete else (scan.node_hours, scan.gpu_hours)
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
        total = self.scanner.space.grid_size * spec.n_seeds if spec.method == "grid" else (spec.budget or 0)
        started = time.perf_counter() if started is None else started
        reported = time.perf_counter()
        self.points_taken = 0
        shaped: tuple[Any, Any] = (object(), None)  # the last job's config resources and GPUs per node, and their cost
        hours = (0.0, 0.0)
        self.job_hours = (0.0, 0.0)
        idle = IdleDimensions(spec.parameters)
        for point_index, point in enumerate(points, start=first_point):
            if limit is not None and index >= limit:
                break
            self.points_taken += 1
            if self.progress is not None and index % 256 == 0 and time.perf_counter() - reported > PROGRESS_EVERY_S:
                reported = time.perf_counter()
                self.progress(index - first_index, total, reported - started)
            groups, settings = self.scanner.split(point)
            base = self.scanner.base_of(groups)
            point_id = None
            for seed in seeds:
                if limit is not None and index >= limit:
                    break
                self.attempted += 1
                job_settings = settings + ([self.scanner.seed_setting(seed)] if seed is not None else [])
                swept = list(groups) + [s.override for s in job_settings]
                overrides = self.base_overrides + swept
                if base is None:
                    index += 1
                    continue
                config = self.composer.job(base, job_settings, overrides, validate=self.validate)
                if spec.pbt is not None and config.plain is not None:  # what a PBT trial's config must hold
                    config.issues += [ConfigIssue("pbt", m) for m in pbt_job_issues(spec.pbt, config.plain)]
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
                idle.observe(config.plain)
                # The jobs of a base share its resources dict: keyed, costed once (their GPUs per node may
                # differ still: SkyRL's vLLM engines' share, gpu_trainer_rules.node_gpus).
                source = (config.plain.get("resources"), job.resources.gpus_per_node)
                if source[0] is not shaped[0] or source[1] != shaped[1]:
                    self.resource_shapes.setdefault(job.resources, job.resources)
                    shaped, hours = source, job.resources.hours()
                self.job_hours = (self.job_hours[0] + hours[0], self.job_hours[1] + hours[1])
                for note in config.notes:
                    if note not in self.notes:
                        self.notes.append(note)
                jobs.append(job)
                index += 1
        if self.progress is not None and time.perf_counter() - started > PROGRESS_EVERY_S:
            self.progress(index - first_index, total, time.perf_counter() - started)
        if self.issues:  # bases that did not compose
            bad = self.issues + bad
        self.idle = idle
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
        chash, new_point_id = job_hashes(plain, config, base, self.spec.seed_key, point=point_id is None)
        point_id = point_id or new_point_id
        if seed is None:
            try:
                seed = plain_get(plain, self.spec.seed_key)
            except KeyError:
                seed = None
        # What the job asks of a node: the GPUs of SkyRL's vLLM engines too.
        resources = load(Resources, {**plain["resources"], "gpus_per_node": node_gpus(plain)}, "the job's resources")
        engine = str(plain_get_or_none(plain, "skyrl.engine") or "jax")
        need = None
        if resources.gpus_per_node:  # a GPU sweep: estimated (few jobs)
            need = job_memory_need(plain)
        return PlannedJob(
            index=index,
            overrides=overrides,
            params=point.params,
            point_id=point_id,
            point_index=point_index,
            seed=seed,
            config_hash=chash,
            resources=resources,
            engine=engine,
            gpu_memory_gib=None if need is None else round(need.total_gib(need.micro_batch, need.sample_sequences), 1),
            gpu_memory_need=need,
        )


__all__ = [
    "MAX_JOBS",
    "Planner",
    "make_plan",
    "plan_request",
    "plan_sweep",
]
