"""The launch loop: `parallel` jobs in flight, the next one handed over the moment one ends.

Where jobs come from is a `JobSource`: the plan (grid, random: every job known up front)
or a search that decides as results arrive (Optuna). The runner never waits for a batch.
When every job is known up front and the launcher can queue them itself (SLURM arrays with
a throttle), they are all handed over at once and the scheduler keeps `parallel` running.

A job that fails for an infrastructure reason (node failure, out-of-memory kill, a lost Ray
node) is launched again in its own directory, where it resumes from its last checkpoint,
at most `max_retries` times; a job that fails for a user reason (bad config, an exception
in the reward function) is not: a retry would fail the same way.
"""

from __future__ import annotations

import abc
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from launchers.base import JobState, Launcher, LaunchRequest, PollStatus
from rllm_sweeps.app_command import app_command
from rllm_sweeps.config.planned import job_overrides, overrides_digest
from rllm_sweeps.records import attempts
from rllm_sweeps.records.launch import JobLaunch, OptunaTrial, launch_env
from rllm_sweeps.records.layout import JobPaths, SweepPaths
from rllm_sweeps.records.manifest import StudyLocation
from rllm_sweeps.records.metric_rows import TrainRow
from rllm_sweeps.records.metrics import read_metrics, same_value
from rllm_sweeps.records.plan import PlannedJob
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import FailureKind, JobStatus
from rllm_sweeps.sweep import interrupts
from rllm_sweeps.sweep.plan import Plan
from rllm_sweeps.sweep.spec import Metric
from rllm_sweeps.sweeper_settings import SweeperSettings
from rllm_sweeps.trackers import clock


@dataclass
class JobToRun:
    """A planned job, the directory it runs in, and the Optuna trial it reports to (None: not a trial)."""

    job: PlannedJob
    job_dir: Path
    trial: OptunaTrial | None = None


class JobSource(abc.ABC):
    """What to run next. `static`: every job is known up front (may be queued at once).

    `stopped` (why no job will come any more before the budget is spent) and `fatal` (an error
    every job would hit) stay None for a plan; a search sets them."""

    static: bool
    stopped: str | None = None
    fatal: str | None = None

    @abc.abstractmethod
    def done_before(self) -> dict[int, JobResult]:
        """Jobs a previous run of this sweep finished already (by plan index)."""

    @abc.abstractmethod
    def next_jobs(self, free_slots: int) -> list[JobToRun]:
        """Up to `free_slots` jobs to start now (fewer, or none, is fine)."""

    @abc.abstractmethod
    def exhausted(self) -> bool:
        """No job will come any more (those handed out may still run)."""

    @abc.abstractmethod
    def on_result(self, run: JobToRun, result: JobResult) -> None:
        """A job ended for good (retries spent)."""

    @abc.abstractmethod
    def pending(self) -> int:
        """Jobs still to hand out, for progress lines (an estimate is fine)."""

    def study_info(self) -> StudyLocation | None:
        """What the sweep's manifest records of the search behind it (None: a plan)."""
        return None

    def claim(self, job_dir: Path) -> JobToRun | None:
        """A job an earlier sweeper left running with the scheduler: the source hands it over as
        running (and will not hand it out again), or None when it has no use for it (it is then
        cancelled). None by default."""
        return None

    def close(self) -> None:  # noqa: B027 (an optional hook: nothing to release by default)
        """Release what the source holds (a study's storage); nothing by default."""


def job_dir_for(sweep_dir: Path, job: PlannedJob) -> Path:
    return SweepPaths(sweep_dir).job(job.index, job.config_hash).root


def existing_jobs(sweep_dir: Path) -> dict[str, tuple[Path, JobResult]]:
    """Job directories of a sweep by config hash (a completed one wins over others)."""
    found: dict[str, tuple[Path, JobResult]] = {}
    for job_dir in SweepPaths(sweep_dir).job_dirs():
        result = JobResult.read(job_dir)
        if result is None:
            continue
        if result.config_hash not in found or result.status.is_final:
            found[result.config_hash] = (job_dir, result)
    return found


class StaticSource(JobSource):
    """The plan's jobs in order; those completed by an earlier run are skipped (by config hash)."""

    static = True

    def __init__(self, plan: Plan, sweep_dir: Path) -> None:
        existing = existing_jobs(sweep_dir)
        self._done: dict[int, JobResult] = {}
        self._queue: list[JobToRun] = []
        for job in plan.jobs:
            found = existing.get(job.config_hash)
            if found and found[1].status.is_final:
                self._done[job.index] = found[1]
            else:
                self._queue.append(JobToRun(job, found[0] if found else job_dir_for(sweep_dir, job)))

    def done_before(self) -> dict[int, JobResult]:
        return dict(self._done)

    def next_jobs(self, free_slots: int) -> list[JobToRun]:
        taken, self._queue = self._queue[:free_slots], self._queue[free_slots:]
        return taken

    def claim(self, job_dir: Path) -> JobToRun | None:
        for i, run in enumerate(self._queue):
            if run.job_dir == job_dir:
                return self._queue.pop(i)
        return None

    def exhausted(self) -> bool:
        return not self._queue

    def on_result(self, run: JobToRun, result: JobResult) -> None:
        pass

    def pending(self) -> int:
        return len(self._queue)


def _is_final(result: JobResult | None) -> bool:
    return result is not None and result.status.is_final


@dataclass
class _Running:
    run: JobToRun
    handle: Any
    started: float
    retries: int = 0
    retry_reasons: list[str] = field(default_factory=list)


class SweepRunner:
    """Keeps `parallel` jobs in flight; never waits for a batch; retries infrastructure failures."""

    def __init__(
        self,
        source: JobSource,
        sweep_dir: Path,
        launcher: Launcher,
        parallel: int,
        *,
        metric: Metric,
        metrics: list[Metric] | None = None,
        max_retries: int = SweeperSettings.max_retries,
        progress_every_s: float = 10.0,
        config_args: list[str] | None = None,
    ) -> None:
        self.source = source
        self.config_args = list(config_args or [])  # train.py's search path (config/source.py)
        self.sweep_dir = sweep_dir
        self.launcher = launcher
        self.parallel = parallel
        self.metric = metric
        # Each job's `best` follows the sweep's metrics and goals (its launch record's).
        self.judged = tuple(metrics or [metric])
        self.max_retries = max_retries
        self.progress_every_s = progress_every_s
        self.started = time.monotonic()
        self.durations: list[float] = []
        self.results: dict[int, JobResult | None] = {}
        self.running: dict[int, _Running] = {}
        self.retries: list[tuple[JobToRun, int, list[str]]] = []  # waiting for a free slot

    def run(self) -> dict[int, JobResult | None]:
        self.results.update(self.source.done_before())
        self.reattach()
        # Queue everything at once where the scheduler can hold it (SLURM arrays, throttled); not
        # beside jobs adopted from an earlier sweeper, which the arrays' throttle would not count.
        ahead = self.source.static and self.launcher.queues_arrays and not self.running
        if self.results or self.running:
            adopted = f", {len(self.running)} still live with the scheduler" if self.running else ""
            print(
                f"[sweep] {self.sweep_dir}: {len(self.results)} jobs already completed{adopted}, "
                f"{self.source.pending()} to run",
                flush=True,
            )
        else:
            print(f"[sweep] {self.sweep_dir}: {self.source.pending()} jobs, {self.parallel} at a time", flush=True)
        last_report = 0.0
        try:
            while not self.source.exhausted() or self.running or self.retries:
                if ahead and not self.source.exhausted():
                    self.start_array(self.source.next_jobs(self.source.pending()))
                # Never more than `parallel` jobs live with the launcher: retries (and, without
                # arrays, new jobs) start only when a slot is free.
                while self.retries and len(self.running) < self.parallel:
                    self.start(*self.retries.pop(0))
                free = self.parallel - len(self.running) - len(self.retries)  # < 0 beside adopted jobs
                if not ahead and free > 0:
                    for run in self.source.next_jobs(free):
                        self.start(run)
                for index, entry in list(self.running.items()):
                    status = self.launcher.poll(entry.handle)
                    if status.state is JobState.FINISHED:
                        self.finish(index, entry, status)
                if time.monotonic() - last_report > self.progress_every_s:
                    last_report = time.monotonic()
                    self.print_progress()
                interrupts.check()  # a Ctrl-C that landed in a finalizer (sweep/interrupts.py)
                time.sleep(0.2)
        except KeyboardInterrupt:
            print("[sweep] interrupted: stopping running jobs (they checkpoint; rerun to resume)", file=sys.stderr)
            for entry in self.running.values():
                self.launcher.cancel(entry.handle)
                self.record_interrupted(entry.run)
            raise
        return dict(sorted(self.results.items()))

    def reattach(self) -> None:
        """Jobs an earlier sweeper of this sweep left live with the scheduler (it was killed): polled
        again rather than submitted twice; those the source has no use for are cancelled."""
        for job_dir, handle in self.launcher.reattach(SweepPaths(self.sweep_dir).job_dirs()).items():
            if _is_final(JobResult.read(job_dir)):
                # Finished, yet held again by the scheduler (requeued as it ended): another run of
                # it would only take a slot beside `parallel` others.
                self.launcher.cancel(handle)
                print(f"[sweep] cancelled {job_dir.name}: already finished, requeued by the scheduler", flush=True)
                continue
            run = self.source.claim(job_dir)
            if run is None:
                self.launcher.cancel(handle)
                print(f"[sweep] cancelled {job_dir.name}: left running by an earlier sweeper, not needed", flush=True)
                continue
            self.running[run.job.index] = _Running(run, handle, time.monotonic())
            self.print_progress(f"reattached to job {run.job.index} ({job_dir.name}), still live with the scheduler")

    # -- starting ------------------------------------------------------------------------

    def request(self, run: JobToRun) -> LaunchRequest:
        """The job's command and its launch record; it runs as a new generation of the job, so that an
        earlier attempt still running somewhere (a node SLURM lost touch with) can no longer write its
        records. The record is this generation's own file: that attempt keeps reading its own."""
        job = run.job
        if job.resources is None:  # only a plan.json read back without them has none, never a planned job
            raise ValueError(f"job {job.index} of {self.sweep_dir} has no resources to launch it with")
        overrides = job_overrides(job.overrides)
        # The installed training app, with this sweeper's interpreter: the same code and configs on every node.
        argv = app_command([*self.config_args, *overrides, f"hydra.run.dir={run.job_dir}"])
        path = os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))
        generation = attempts.raise_generation(run.job_dir)
        # overrides_digest: the planner validated the job's config, its pre-flight check need not.
        launch = JobLaunch(generation, overrides_digest(overrides), self.judged, run.trial)
        env = {"PYTHONPATH": path, **launch_env(launch.write(run.job_dir))}
        return LaunchRequest(
            index=job.index,
            job_dir=run.job_dir,
            argv=argv,
            resources=job.resources,
            env=env,
            generation=generation,
        )

    def start(self, run: JobToRun, retries: int = 0, reasons: list[str] | None = None) -> None:
        handle = self.launcher.submit(self.request(run))
        self.running[run.job.index] = _Running(run, handle, time.monotonic(), retries, list(reasons or []))
        again = f" again (retry {retries} of {self.max_retries})" if retries else ""
        self.print_progress(f"started job {run.job.index} ({run.job_dir.name}){again}")

    def start_array(self, runs: list[JobToRun]) -> None:
        if not runs:
            return
        handles = self.launcher.submit_array([self.request(r) for r in runs], self.parallel)
        for run, handle in zip(runs, handles, strict=True):
            self.running[run.job.index] = _Running(run, handle, time.monotonic())
        self.print_progress(f"queued {len(runs)} jobs with the scheduler ({self.parallel} at a time)")

    # -- ending --------------------------------------------------------------------------

    def finish(self, index: int, entry: _Running, status: PollStatus) -> None:
        del self.running[index]
        self.durations.append(time.monotonic() - entry.started)
        job_dir = entry.run.job_dir
        result = JobResult.read(job_dir)
        if result is None or result.status is JobStatus.RUNNING:
            result = self.record_crash(entry.run, status)
        if status.failure and result.status in (JobStatus.FAILED, JobStatus.PREEMPTED):
            # The scheduler knows better than the job why it died (node failure, memory); a job that
            # saw only the SIGTERM of its lost node recorded itself as preempted.
            result.status, result.failure_kind = JobStatus.FAILED, FailureKind.INFRASTRUCTURE
            result.error = f"{status.failure}\n{result.error or ''}".strip()
        if status.kind is FailureKind.TIME_LIMIT and result.status in (JobStatus.FAILED, JobStatus.PREEMPTED):
            # Its requeues spent, the job saw only the SIGTERM of its last time limit and recorded itself
            # as preempted: it failed, with what to change.
            result.status, result.failure_kind = JobStatus.FAILED, FailureKind.TIME_LIMIT
            result.error = f"{status.detail}\n{result.error or ''}".strip()
            result.write(job_dir)
        if (
            result.status is JobStatus.FAILED
            and result.failure_kind is FailureKind.INFRASTRUCTURE
            and entry.retries < self.max_retries
        ):
            reason = (result.error or "infrastructure failure").splitlines()[0]
            # The job's record keeps every retry the sweep made, across sweeper restarts too.
            history = max(result.retry_reasons, entry.retry_reasons, key=len)
            result.retry_reasons = [*history, reason]
            result.retries = len(result.retry_reasons)
            self.launcher.cancel(entry.handle)  # whatever the scheduler would still run of it
            # The old attempt may still run (a node SLURM declared dead): fence it off before the
            # record of the retry is written, so it cannot overwrite it.
            attempts.raise_generation(job_dir)
            result.write(job_dir)
            self.print_progress(f"job {index} failed ({reason}): infrastructure, retrying")
            self.retries.append((entry.run, entry.retries + 1, result.retry_reasons))
            return
        if len(entry.retry_reasons) > len(result.retry_reasons):  # a record that lost the sweep's retries
            result.retries, result.retry_reasons = len(entry.retry_reasons), list(entry.retry_reasons)
            result.write(job_dir)
        self.results[index] = result
        self.source.on_result(entry.run, result)
        self.print_progress(f"job {index} {result.status}")

    def record_crash(self, run: JobToRun, status: PollStatus) -> JobResult:
        """A job that died without a result (killed, or failed before writing one): the scheduler's
        reason and log, and the job's own log, in `error`."""
        log = JobPaths(run.job_dir).log
        tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
        result = JobResult.read(run.job_dir) or JobResult(status=JobStatus.FAILED, config_hash=run.job.config_hash)
        where = "\n".join(
            part
            for part in (
                f"exit code {status.returncode} ({status.detail})",
                f"scheduler log:\n{status.log.strip()}" if status.log.strip() else "",
                f"job.log:\n{tail.strip()}" if tail.strip() else "job.log: empty (the job's process never wrote)",
            )
            if part
        )
        result.status, result.error = JobStatus.FAILED, where
        result.failure_kind = FailureKind.INFRASTRUCTURE if status.failure else FailureKind.USER
        result.overrides = result.overrides or list(run.job.overrides)
        result.attempts = max(result.attempts, len(attempts.read_attempts(run.job_dir)))
        result.write(run.job_dir)
        return result

    def record_interrupted(self, run: JobToRun) -> None:
        """Ctrl-C on the sweeper: a job stopped before it could write its own record says so."""
        result = JobResult.read(run.job_dir)
        if result is not None and result.status is not JobStatus.RUNNING:
            return
        result = result or JobResult(status=JobStatus.PREEMPTED, config_hash=run.job.config_hash)
        result.status, result.error = JobStatus.PREEMPTED, "stopped by Ctrl-C on the sweeper: rerun the sweep to resume"
        result.overrides = result.overrides or list(run.job.overrides)
        result.ended_at = time.time()
        result.write(run.job_dir)

    # -- progress ------------------------------------------------------------------------

    def print_progress(self, event: str = "") -> None:
        results = self.results
        done = sum(1 for r in results.values() if r is not None and r.status.is_final)
        failed = len(results) - done
        queued = self.source.pending()
        elapsed = time.monotonic() - self.started
        steps, estimates = self.running_steps()
        eta = ""
        # A job's duration: those that ended, else what the running ones' steps so far foretell.
        durations = self.durations or estimates
        if durations:
            mean = sum(durations) / len(durations)
            eta = f"  ETA {clock(mean * (queued + len(self.running)) / self.parallel)}"
        line = (
            f"[sweep] {done} done, {failed} failed, {len(self.running)} in flight{steps}, {queued} to come"
            f"  elapsed {clock(elapsed)}{eta}{self.best()}"
        )
        print(line + (f"  | {event}" if event else ""), flush=True)

    def running_steps(self, shown: int = 4) -> tuple[str, list[float]]:
        """' (job 0 step 3/30, job 1 step 1/30)' for the running jobs (from their metrics.jsonl, as
        `rllm-sweeps status`), and each one's duration foretold from its rate so far."""
        parts, estimates = [], []
        now = time.monotonic()
        for index, entry in sorted(self.running.items()):
            last = next((r for r in reversed(read_metrics(entry.run.job_dir)) if isinstance(r, TrainRow)), None)
            if last is None or not last.step or not last.total_steps:
                continue
            step, total = last.step, last.total_steps
            parts.append(f"job {index} step {step}/{total}")
            estimates.append((now - entry.started) * total / step)
        if not parts:
            return "", estimates
        more = f", +{len(parts) - shown} more" if len(parts) > shown else ""
        return f" ({', '.join(parts[:shown])}{more})", estimates

    def best(self) -> str:
        name = self.metric.name
        scored = [
            (r.final[name], i)
            for i, r in self.results.items()
            if r is not None and r.status is JobStatus.COMPLETED and name in r.final  # a pruned job's value is partial
        ]
        if not scored:
            return ""
        # The first job of the best value, as the report's best point is the first on a tie.
        value = max(v for v, _ in scored) if self.metric.goal == "maximize" else min(v for v, _ in scored)
        tied = sorted(i for v, i in scored if same_value([v, value]) is not None)
        tie = f"; a tie with {len(tied) - 1} other{'s' if len(tied) > 2 else ''}" if len(tied) > 1 else ""
        return f"  best {name}={value:.4g} (job {tied[0]}{tie})"
