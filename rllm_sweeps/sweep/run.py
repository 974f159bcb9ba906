"""Running a planned sweep: its directory, resume, the launch loop, progress, the final table.

    arguments -> plan (every job validated; a dry run stops here) -> SWEEP_DIR/{manifest,plan}.json
    -> for each job: skip if SWEEP_DIR has its completed result (same config hash), else launch
       with at most `parallel` in flight, the next one the moment one finishes
    -> the results table (report), exit code 0 only if every job completed

A rerun of the same command finds the same sweep directory (named after the sweep's own
hash unless hydra.sweep.dir is given) and runs only what is not completed yet.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from launchers.base import JobState, Launcher, LaunchRequest
from rllm_sweeps.config.validate import ConfigError
from rllm_sweeps.results import (
    COMPLETED,
    FAILED,
    JOBS_DIR,
    MANIFEST_FILE,
    RESULT_FILE,
    JobResult,
    write_json_atomic,
)
from rllm_sweeps.sweep.plan import Plan, PlannedJob, plan_sweep
from rllm_sweeps.trackers import clock

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "train.py"
FINAL_STATES = (COMPLETED, "pruned")


@dataclass(frozen=True)
class SweepOptions:
    dry_run: bool = False
    parallel: int | None = None
    params: dict[str, str] = field(default_factory=dict)
    rows: int = 20
    progress_every_s: float = 10.0


def run_sweep(arguments: list[str], hydra_cfg: DictConfig, options: SweepOptions, config_loader: Any = None) -> None:
    """The sweeper's body (Hydra multirun): plan, then launch; exits non-zero on failures."""
    plan_args = {"params": options.params, "config_loader": config_loader}
    try:
        if options.dry_run:
            # The table first (no SkyRL import needed), then the jobs shown are validated.
            print(plan_sweep(arguments, limit=options.rows, validate=False, **plan_args).render(rows=options.rows))
            plan = plan_sweep(arguments, limit=options.rows, **plan_args)
        else:
            plan = plan_sweep(arguments, **plan_args)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    sweep_dir = sweep_directory(hydra_cfg, arguments, plan)
    if options.dry_run:
        print(f"validated the {plan.totals.validated} jobs shown: no problem found")
        print(f"plan: {plan.write(sweep_dir)} (dry run: nothing launched)")
        return
    parallel = options.parallel or plan.spec.parallel
    if parallel < 1:
        print(f"error: parallel={parallel} is invalid: expected an integer >= 1", file=sys.stderr)
        raise SystemExit(2)
    launcher = make_launcher(hydra_cfg)
    if hasattr(launcher, "preflight"):
        # Everything the scheduler would refuse, for every job shape, before any job is queued.
        shapes = {json.dumps(job.resources, sort_keys=True): job.resources for job in plan.jobs}
        problems = launcher.preflight(list(shapes.values()))
        if problems:
            print("error: the scheduler refuses this sweep (nothing was submitted):", file=sys.stderr)
            print("\n".join(f"  - {p}" for p in problems), file=sys.stderr)
            raise SystemExit(2)
    write_json_atomic(
        sweep_dir / MANIFEST_FILE,
        {"command": sys.argv, "sweep_id": sweep_id(plan), "created_at": time.time(), "launcher": launcher.name},
    )
    plan.write(sweep_dir)
    runner = SweepRunner(plan, sweep_dir, launcher, parallel, options.progress_every_s)
    results = runner.run()
    print_final_table(sweep_dir)
    failed = [i for i, r in results.items() if r is None or r.status not in FINAL_STATES]
    if failed:
        print(f"{len(failed)} of {len(results)} jobs did not complete: {failed}", file=sys.stderr)
        raise SystemExit(1)


def make_launcher(hydra_cfg: DictConfig) -> Launcher:
    """The launcher `hydra/launcher` selects: SLURM (submitit) or local processes (default)."""
    from omegaconf import OmegaConf

    launcher_cfg = OmegaConf.to_container(hydra_cfg.hydra.launcher, resolve=True)
    if str(launcher_cfg.pop("_target_", "")).endswith("SlurmHydraLauncher"):
        from launchers.slurm import SlurmLauncher, SlurmSettings

        return SlurmLauncher(SlurmSettings(**launcher_cfg))
    from launchers.local import LocalLauncher

    return LocalLauncher()


def sweep_id(plan: Plan) -> str:
    """What identifies a sweep: its spec and the overrides every job gets."""
    data = {"spec": plan.spec.to_dict(), "base": [o for o in plan.base_overrides if not _is_hydra(o)]}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:8]


def sweep_directory(hydra_cfg: DictConfig, arguments: list[str], plan: Plan) -> Path:
    hydra_overrides = list(hydra_cfg.hydra.overrides.hydra) + list(arguments)
    if any(a.lstrip("+").startswith("hydra.sweep.dir=") for a in hydra_overrides):
        return Path(str(hydra_cfg.hydra.sweep.dir)).resolve()
    name = plan.spec.name or "sweep"
    project = str(hydra_cfg.trainer.project_name)
    return (Path("multirun") / project / f"{name}-{sweep_id(plan)}").resolve()


def _is_hydra(override: str) -> bool:
    key = override.lstrip("+~")
    return key.startswith(("hydra.", "hydra/"))


class SweepRunner:
    """Keeps `parallel` jobs in flight; never waits for a batch."""

    def __init__(self, plan: Plan, sweep_dir: Path, launcher: Launcher, parallel: int, progress_every_s: float):
        self.plan = plan
        self.sweep_dir = sweep_dir
        self.launcher = launcher
        self.parallel = parallel
        self.progress_every_s = progress_every_s
        self.metric = plan.spec.metric[0]
        self.started = time.monotonic()
        self.durations: list[float] = []

    def run(self) -> dict[int, JobResult | None]:
        existing = existing_jobs(self.sweep_dir)
        results: dict[int, JobResult | None] = {}
        queue: list[tuple[PlannedJob, Path]] = []
        for job in self.plan.jobs:
            found = existing.get(job.config_hash)
            if found and found[1].status in FINAL_STATES:
                results[job.index] = found[1]
                continue
            queue.append((job, found[0] if found else self.job_dir(job)))
        if results:
            print(f"[sweep] {self.sweep_dir}: {len(results)} jobs already completed, {len(queue)} to run", flush=True)
        else:
            print(f"[sweep] {self.sweep_dir}: {len(queue)} jobs, {self.parallel} at a time", flush=True)
        running: dict[int, tuple[Any, Path, float]] = {}
        last_report = 0.0
        try:
            while queue or running:
                while queue and len(running) < self.parallel:
                    job, job_dir = queue.pop(0)
                    handle = self.launcher.submit(self.request(job, job_dir))
                    running[job.index] = (handle, job_dir, time.monotonic())
                    self.print_progress(results, running, queue, f"started job {job.index} ({job_dir.name})")
                for index, (handle, job_dir, started) in list(running.items()):
                    status = self.launcher.poll(handle)
                    if status.state is not JobState.FINISHED:
                        continue
                    del running[index]
                    self.durations.append(time.monotonic() - started)
                    result = JobResult.read(job_dir)
                    if result is None or result.status == "running":
                        result = self.record_crash(job_dir, index, status.returncode)
                    results[index] = result
                    self.print_progress(results, running, queue, f"job {index} {result.status}")
                if time.monotonic() - last_report > self.progress_every_s:
                    last_report = time.monotonic()
                    self.print_progress(results, running, queue)
                time.sleep(0.2)
        except KeyboardInterrupt:
            print("[sweep] interrupted: stopping running jobs (they checkpoint; rerun to resume)", file=sys.stderr)
            for handle, _, _ in running.values():
                self.launcher.cancel(handle)
            raise
        return dict(sorted(results.items()))

    def job_dir(self, job: PlannedJob) -> Path:
        return self.sweep_dir / JOBS_DIR / f"{job.index:04d}-{job.config_hash[:8]}"

    def request(self, job: PlannedJob, job_dir: Path) -> LaunchRequest:
        overrides = [o for o in job.overrides if not _is_hydra(o)]
        argv = [sys.executable, str(TRAIN), *overrides, f"hydra.run.dir={job_dir}"]
        env = {"PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
        return LaunchRequest(index=job.index, job_dir=job_dir, argv=argv, resources=job.resources, env=env)

    def record_crash(self, job_dir: Path, index: int, returncode: int | None) -> JobResult:
        """A job that died without a result (killed, or failed before writing one)."""
        log = job_dir / "job.log"
        tail = log.read_text(errors="replace")[-4000:] if log.exists() else ""
        job = self.plan.jobs[index]
        result = JobResult.read(job_dir) or JobResult(status=FAILED, config_hash=job.config_hash)
        result.status, result.error = FAILED, f"exit code {returncode}\n{tail}"
        result.overrides = result.overrides or list(job.overrides)
        result.write(job_dir)
        return result

    def print_progress(self, results: dict, running: dict, queue: list, event: str = "") -> None:
        done = sum(1 for r in results.values() if r is not None and r.status in FINAL_STATES)
        failed = len(results) - done
        elapsed = time.monotonic() - self.started
        eta = ""
        if self.durations:
            mean = sum(self.durations) / len(self.durations)
            eta = f"  ETA {clock(mean * (len(queue) + len(running)) / self.parallel)}"
        best = self.best(results)
        line = (
            f"[sweep] {done} done, {failed} failed, {len(running)} running, {len(queue)} queued"
            f"  elapsed {clock(elapsed)}{eta}{best}"
        )
        print(line + (f"  | {event}" if event else ""), flush=True)

    def best(self, results: dict) -> str:
        scored = [
            (r.final[self.metric.name], i)
            for i, r in results.items()
            if r is not None and r.status in FINAL_STATES and self.metric.name in r.final
        ]
        if not scored:
            return ""
        value, index = max(scored) if self.metric.goal == "maximize" else min(scored)
        return f"  best {self.metric.name}={value:.4g} (job {index})"


def existing_jobs(sweep_dir: Path) -> dict[str, tuple[Path, JobResult]]:
    """Job directories of a sweep by config hash (a completed one wins over others)."""
    found: dict[str, tuple[Path, JobResult]] = {}
    for path in sorted((sweep_dir / JOBS_DIR).glob(f"*/{RESULT_FILE}")):
        result = JobResult.read(path.parent)
        if result is None:
            continue
        if result.config_hash not in found or result.status in FINAL_STATES:
            found[result.config_hash] = (path.parent, result)
    return found


def print_final_table(sweep_dir: Path) -> None:
    """The results table, printed and written (SWEEP_DIR/report/), whatever the jobs' fate."""
    from rllm_sweeps.report import build_report, write_report

    report = build_report(sweep_dir)
    print(report.render_table())
    paths = write_report(sweep_dir, report=report)
    print(f"report: {paths[0].parent} ({len(paths)} files)")
