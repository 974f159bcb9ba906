"""One training job, start to end, in its own directory.

    validated config -> engine available? -> resume point -> Ray up (where the backend uses it)
    -> backend -> RL loop -> metrics.jsonl + trackers + checkpoints -> result.json -> Ray down

Every exit path writes result.json (completed / failed / preempted) and takes the
job's Ray cluster (if it has one) down. SIGTERM (preemption, `scancel`, a SLURM time limit) stops the
loop at the next step boundary, saves a checkpoint and exits; rerunning the same
command in the same directory resumes from it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.engines import engine_of
from rllm_sweeps.failures import failure_kind, out_of_memory_fix
from rllm_sweeps.job_dir import (
    JobLost,
    JobRefused,
    hold_job_dir,
    move_aside,
    note_holder,
    refusal_reason,
    write_hydra_record,
)
from rllm_sweeps.jobhash import config_hash
from rllm_sweeps.records.attempts import AttemptFence, read_attempts
from rllm_sweeps.records.launch import JobLaunch, current_launch, judged_metrics
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.metric_rows import TrainRow, ValRow
from rllm_sweeps.records.metrics import DEFAULT_METRIC, MetricsLog, best_values, never_moved, read_metrics
from rllm_sweeps.records.result import PHASES, JobResult, TrainingSummary, phase_metric
from rllm_sweeps.records.status import FailureKind, JobStatus
from rllm_sweeps.training.divergence import Diverged
from rllm_sweeps.training.memory_retry import MemoryExhausted

EXIT_PREEMPTED = 143  # 128 + SIGTERM, what a scheduler expects from a job it stopped
VERSIONED_PACKAGES = ("rllm-sweeps", "skyrl", "jax", "ray", "hydra-core", "optuna", "submitit", "torch")


class StopRequested:
    """SIGTERM/SIGINT/SIGUSR2 -> stop at the next step boundary (checkpoint, then exit)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR2)

    def __init__(self) -> None:
        self.signum: int | None = None
        self.in_training = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequested:
        for sig in self.SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, frame: Any) -> None:
        # A scheduler often signals twice (SLURM's warning SIGUSR2, then submitit's SIGTERM):
        # keep heading for the step boundary. Only a person pressing Ctrl-C twice means "now".
        again = self.signum is not None and signum == signal.SIGINT == self.signum
        self.signum = signum
        print(f"\nreceived {signal.Signals(signum).name}: stopping after this step", file=sys.stderr, flush=True)
        if not self.in_training or again:
            # Outside the loop there is no step boundary to wait for.
            raise KeyboardInterrupt(signal.Signals(signum).name)

    def __bool__(self) -> bool:
        return self.signum is not None


def run_job(cfg: DictConfig, overrides: list[str], job_dir: Path | None = None) -> JobResult:
    """Train one validated config in `job_dir` (default: Hydra's output directory).

    Raises JobRefused, having written nothing, when the directory holds another configuration's
    completed record or checkpoints."""
    hydra_cfg = None
    if job_dir is None:
        from hydra.core.hydra_config import HydraConfig

        hydra_cfg = HydraConfig.get()
        job_dir = Path(hydra_cfg.runtime.output_dir)
    job_dir = Path(job_dir).resolve()
    job_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    chash = config_hash(cfg)
    launch = current_launch()  # what the sweep handed this attempt (None: run by hand), read once
    try:
        # Before reading or writing anything: an earlier attempt of this job (one whose node
        # was declared dead while its process still ran) must be gone first.
        lock = hold_job_dir(job_dir)
    except JobLost as err:  # nothing written: the directory belongs to the other attempt
        print(f"failed: {err}", file=sys.stderr)
        return JobResult(
            status=JobStatus.FAILED, config_hash=chash, error=str(err), failure_kind=FailureKind.INFRASTRUCTURE
        )
    fence = AttemptFence(job_dir, None if launch is None else launch.generation)
    if not fence.current():  # the sweep launched this job again after giving up on this attempt
        print(f"failed: {fence.why_stale()}", file=sys.stderr)
        lock.close()
        return JobResult(
            status=JobStatus.FAILED, config_hash=chash, error=fence.why_stale(), failure_kind=FailureKind.INFRASTRUCTURE
        )
    previous = JobResult.read(job_dir)
    if (
        previous is not None
        and previous.status is JobStatus.COMPLETED
        and previous.config_hash == chash
        and cfg.trainer.resume_mode == "auto"
    ):
        lock.close()
        print(
            f"job {chash} in {job_dir} already completed (trainer.resume_mode=disable to train again: "
            f"its records are moved aside, to {JobPaths(job_dir).replaced()})"
        )
        _print_outcome(previous)
        return previous
    refusal = refusal_reason(cfg, job_dir, chash, previous)
    if refusal is not None:  # refused before anything in the directory changed
        lock.close()
        raise JobRefused(refusal)
    # From here on the directory is this run's.
    if cfg.trainer.resume_mode == "disable" and previous is not None and launch is None:
        # Starting over by hand: the earlier run's records are moved aside, never deleted (a sweep's
        # own job keeps its launch records: the runner never starts a completed one again).
        aside = move_aside(job_dir)
        what = "completed job" if previous.status is JobStatus.COMPLETED else "earlier run"
        print(f"note: trainer.resume_mode=disable: the {what}'s records ({previous.config_hash}) moved to {aside}")
        previous = None
    note_holder(lock)
    if hydra_cfg is not None:
        write_hydra_record(JobPaths(job_dir).hydra, cfg, hydra_cfg)
    quiet_library_logs()
    result = JobResult(
        status=JobStatus.RUNNING,
        config_hash=chash,
        overrides=list(overrides),
        started_at=started,
        nodes=int(cfg.resources.nodes),  # the Ray cluster's count once it has trained
        engine=str(cfg.skyrl.engine),
        versions=package_versions(),
        git_revision=git_revision(),
        attempts=process_starts(job_dir, previous, chash),
        gpus=os.environ.get("CUDA_VISIBLE_DEVICES"),  # the local launcher's placement, or SLURM's
    )
    if previous is not None and previous.config_hash == chash:
        # The sweep's record of this job's earlier failed launches stays with it (a new sweeper too).
        result.retries, result.retry_reasons = previous.retries, list(previous.retry_reasons)
    stop = StopRequested()
    try:
        engine_of(cfg).check_available()  # before Ray or a model starts
        resume_from = find_resume_point(cfg, job_dir)
        if resume_from is not None and previous is not None:
            result.restarts = previous.restarts + 1
            result.exports = previous.exports  # on disk until this run exports (or discards) its own
        JobPaths(job_dir).config.write_text(OmegaConf.to_yaml(cfg, resolve=True))
        result.write(job_dir)
        where = f" (resuming from {resume_from.name})" if resume_from else ""
        print(f"job {chash} in {job_dir}{where}", flush=True)
        with stop:
            summary = _train(cfg, job_dir, resume_from, stop, fence, launch, previous)
            result.record_training(summary, stop_requested=bool(stop))
    except KeyboardInterrupt as err:
        result.status, result.error = JobStatus.PREEMPTED, f"stopped by {err}"
    except Diverged as err:  # not a bug: the message says where and what to try, no traceback
        from rllm_sweeps.training.policy_export import discard_exports

        result.status, result.failure_kind = JobStatus.FAILED, FailureKind.DIVERGED
        result.divergence, result.error = err.divergence, str(err)
        why = f"nothing exported: training diverged at step {err.divergence.step}, the policy's weights are not finite"
        result.exports = discard_exports(JobPaths(job_dir), why)
    except Exception as err:  # recorded; the caller turns it into the exit status
        result.status = JobStatus.FAILED
        result.error = "".join(traceback.format_exception(err))[-4000:]
        result.failure_kind = failure_kind(err)
        if (origin := skyrl_failure_origin(err, cfg)) is not None:  # SkyRL's terse errors, placed
            result.error += f"\n{origin}"
        if isinstance(err, MemoryExhausted):  # its sizes and every retry at half size
            result.memory_fit = err.fit
        if result.failure_kind is FailureKind.OUT_OF_MEMORY:  # said plainly, with the fix, as the error's last line
            result.error += f"\nout of accelerator memory: {out_of_memory_fix(cfg, result.memory_fit)}"
    finally:
        result.ended_at = time.time()
        result.wall_time_s = result.ended_at - started
        with fence.writing() as current:
            if current:
                result.write(job_dir)
    if not fence.current():
        result = JobResult(
            status=JobStatus.FAILED, config_hash=chash, error=fence.why_stale(), failure_kind=FailureKind.INFRASTRUCTURE
        )
    _print_outcome(result)
    lock.close()  # the next attempt may start
    return result


def skyrl_failure_origin(err: BaseException, cfg: DictConfig) -> str | None:
    """Where in SkyRL's code `err` was raised, with the job's settings there (training/skyrl_failure.py)."""
    from rllm_sweeps.training.settings import LoopSettings
    from rllm_sweeps.training.skyrl_failure import skyrl_origin

    try:
        settings = LoopSettings.from_config(cfg)
    except Exception:  # the config itself is what failed: the function that raised is still worth naming
        settings = None
    return skyrl_origin(err, settings)


def _train(
    cfg: DictConfig,
    job_dir: Path,
    resume_from: Path | None,
    stop: StopRequested,
    fence: AttemptFence,
    launch: JobLaunch | None,
    previous: JobResult | None,
) -> TrainingSummary:
    """Ray up (where used), backend, loop; returns the loop's summary. Ray goes down on every exit."""
    from rllm_sweeps.data.task import job_task, job_workflow
    from rllm_sweeps.pbt.member import PbtMember
    from rllm_sweeps.records.schedule import read_schedule
    from rllm_sweeps.runtime.job_ray import job_ray_cluster, no_ray
    from rllm_sweeps.runtime.node_role import NodeRole
    from rllm_sweeps.trackers import make_trackers
    from rllm_sweeps.training.checkpoints import checkpoint_name
    from rllm_sweeps.training.loop import LoopHooks, RLTrainer
    from rllm_sweeps.training.policy_export import PolicyExporter
    from rllm_sweeps.training.settings import LoopSettings
    from rllm_sweeps.training.trial import TrialReporter
    from rllm_sweeps.workflows import read_workflow
    from rllm_sweeps.workflows.episode_log import logged_if_asked

    settings = LoopSettings.from_config(cfg)
    plain = OmegaConf.to_container(cfg, resolve=True)
    task = job_task(plain)  # the task config group, or data.train_files (rllm_sweeps/data/)
    workflow = read_workflow(job_workflow(plain.get("workflow"), plain))
    # An Optuna sweep's job reports to its trial and may be pruned (None outside one).
    trial = TrialReporter.of_launch(launch, settings.total_steps(len(task.train)))
    engine = engine_of(cfg)
    # Ray only where it is used: by the engine's backend, or on several nodes. On a multi-node
    # allocation this is the head; the other nodes' tasks join it (job_ray.py). ray.json records
    # this job's Ray processes (or that it has none), for `status` and teardown checks.
    nodes = NodeRole.of_this_process().nodes
    if engine.uses_ray or nodes > 1:
        cluster = job_ray_cluster(job_dir, *engine.node_resources(cfg), nodes=nodes)
    else:
        cluster = no_ray(job_dir, engine.no_ray_reason)
    with cluster as ray_cluster:
        n_nodes = ray_cluster.node_count
        if ray_cluster.address is not None:
            print(f"ray cluster up at RAY_ADDRESS={ray_cluster.address} ({n_nodes} nodes)", flush=True)
        built = engine.build_backend(cfg, settings, job_dir, workflow.settings.parallel_calls())
        if built.placement_group is not None:  # the backend's processes, one per bundle
            ray_cluster.note(process_nodes=ray_cluster.placement_nodes(built.placement_group))
        first_step = 0
        # A PBT trial's side of the search (None otherwise); first: a resumed trial continues the
        # schedule of its checkpoint.
        pbt = PbtMember.for_job(job_dir, resume_from)
        trainer = RLTrainer(
            settings,
            built.backend,
            task,
            built.tokenizer,
            JobPaths(job_dir).work,
            checkpoint_dir=JobPaths(job_dir).checkpoints,
            engine=engine.traits,
            workflow=logged_if_asked(workflow.build(task), plain, job_dir),  # rllm.episode_logging
            schedule=read_schedule(job_dir),  # a PBT trial's or a replay's settings per step range
        )
        if resume_from is not None:
            first_step = trainer.load_checkpoint(resume_from).step
        metrics_log = MetricsLog(job_dir, resume_from_step=first_step if resume_from else None)
        # The final and best policies as PEFT adapters (export/); the best by the sweep's first metric.
        metric, goal = judged_metrics(launch)[0]
        earlier = previous.exports if previous is not None and resume_from is not None else None
        exporter = PolicyExporter(JobPaths(job_dir), trainer.policy, metric, goal, earlier, first_step)
        trackers = make_trackers(
            [cfg.trainer.logger] if isinstance(cfg.trainer.logger, str) else list(cfg.trainer.logger),
            job_dir,
            trainer.total_steps,
            first_step,
            str(cfg.trainer.project_name),
            str(cfg.trainer.experiment_name),
            OmegaConf.to_container(cfg, resolve=True),
        )
        # A resumed job's history starts with the validations of its earlier attempts (metrics.jsonl
        # keeps them up to the checkpoint): its best is over the whole run, not this attempt.
        vals = [r for r in read_metrics(job_dir) if isinstance(r, ValRow)] if resume_from else []
        phases = dict.fromkeys(PHASES, 0.0)

        def on_step_end(metrics: dict) -> None:
            # total_steps: a sweep's progress line shows each running job's step of its total.
            metrics_log.append(TrainRow(time=time.time(), total_steps=trainer.total_steps, **metrics))
            for name in phases:
                phases[name] += metrics[phase_metric(name)]
            for t in trackers:
                t.log(metrics, metrics["step"])

        def on_validation_end(metrics: dict) -> None:
            row = ValRow(time=time.time(), **metrics)
            metrics_log.append(row)
            vals.append(row)
            exporter.on_validation(metrics)
            for t in trackers:
                t.log(metrics, metrics["step"])
            if trial is not None:
                trial.on_validation(metrics)
            if pbt is not None:
                pbt.on_validation(metrics)

        def on_checkpoint(path: Path, state: Any) -> None:
            if pbt is not None:  # at each interval: report the score, maybe continue from a better trial
                pbt.on_checkpoint(trainer, path, state)

        def should_stop() -> bool:
            return bool(stop) or not fence.current() or (trial is not None and trial.should_stop())

        trainer.hooks = LoopHooks(
            on_step_end=on_step_end,
            on_validation_end=on_validation_end,
            on_checkpoint=on_checkpoint,
            should_stop=should_stop,
        )
        try:
            stop.in_training = True
            try:
                trainer.fit()
            except Diverged as err:
                if pbt is not None:  # no other trial copies a diverged one
                    pbt.withdraw(err.divergence.step)
                raise
            stop.in_training = False
            # A superseded attempt saves nothing: the job's new attempt owns the checkpoints.
            if should_stop() and first_step < trainer.state.step < trainer.total_steps and fence.current():
                trainer.save_checkpoint(JobPaths(job_dir).checkpoints / checkpoint_name(trainer.state.step))
            if fence.current():  # completed, pruned or stopped at a step boundary: what it has
                exporter.export_final(trainer.state.step)
        finally:
            stop.in_training = False
            metrics_log.close()
            for t in trackers:
                t.close()
    history = [_validation_record(v) for v in vals]
    return TrainingSummary(
        steps=trainer.state.step,
        finished=trainer.state.step >= trainer.total_steps,
        final={k: v for k, v in history[-1].items() if k != "step"} if history else {},
        best=best_values(history, judged_metrics(launch)),  # the sweep's metrics, each by its goal
        validations=history,
        phase_time_s=phases,
        backend=built.name,
        processes=built.processes,
        nodes=n_nodes,
        workflow=f"{workflow.cls.__module__}:{workflow.cls.__qualname__}",
        pruned_at=trial.pruned_at if trial is not None else None,
        exports=exporter.exports,
        memory_fit=built.memory_fit,
    )


def _validation_record(row: ValRow) -> dict[str, float]:
    """What result.json keeps of one validation: its step and its val_* metrics (not timings)."""
    kept = {k: v for k, v in row.metrics.items() if k.startswith("val_") and "time" not in k}
    return {"step": row.step, **kept}


def process_starts(job_dir: Path, previous: JobResult | None, chash: str) -> int:
    """This job's process starts, this one included: a launcher records each in attempts.jsonl; a job
    run by hand again (an interrupted one resumed) counts on from its own earlier record."""
    recorded = len(read_attempts(job_dir))  # the launcher recorded this attempt's start
    earlier = previous.attempts if previous is not None and previous.config_hash == chash else 0
    return max(1, recorded, earlier + 1)


def find_resume_point(cfg: DictConfig, job_dir: Path) -> Path | None:
    """The checkpoint to resume from (trainer.resume_mode=auto), or None to start fresh."""
    from rllm_sweeps.training.checkpoints import latest_checkpoint

    if cfg.trainer.resume_mode == "disable":
        return None
    return latest_checkpoint(JobPaths(job_dir).checkpoints)


LIBRARY_LOGS_ENV = "RLLM_SWEEPS_LIBRARY_LOGS"  # "info": keep SkyRL's own INFO lines in the job's log


def quiet_library_logs() -> None:
    """SkyRL logs every optimizer step and checkpoint at INFO; our progress lines say it shorter.
    SkyRL sets its logger's level when `skyrl.utils.log` is first imported, so that comes first:
    the level set here then holds whether SkyRL was imported already (a job forked from the local
    launcher's fork server) or is imported later."""
    import logging

    import skyrl.utils.log  # noqa: F401

    level = logging.INFO if os.environ.get(LIBRARY_LOGS_ENV, "").lower() == "info" else logging.WARNING
    for name in ("skyrl", "absl", "jax._src.xla_bridge"):
        logging.getLogger(name).setLevel(level)
    if level > logging.INFO and not any(isinstance(f, _NoTensorflowNotice) for f in logging.getLogger("absl").filters):
        logging.getLogger("absl").addFilter(_NoTensorflowNotice())


class _NoTensorflowNotice:
    """Drops the warning a library of JAX's (etils' gfile) gives on every run without TensorFlow,
    which this project never uses ("Tensorflow library not found, ... GCS paths cannot be accessed")."""

    def filter(self, record: Any) -> bool:
        return not str(record.getMessage()).startswith("Tensorflow library not found")


def package_versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def git_revision() -> str | None:
    """The revision of the package's own files when they are a git work tree's (a checkout, installed
    editable), else None (an installed wheel)."""
    repo = Path(str(importlib.resources.files("rllm_sweeps")))
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if rev.returncode != 0:
        return None
    return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _print_outcome(result: JobResult) -> None:
    if result.status is JobStatus.COMPLETED:
        reward = result.final.get(DEFAULT_METRIC)
        shown = f"{reward:.4f}" if isinstance(reward, int | float) else "not measured"
        seen = [float(v[DEFAULT_METRIC]) for v in result.validations if isinstance(v.get(DEFAULT_METRIC), int | float)]
        flat = never_moved(DEFAULT_METRIC, seen, f"every validation ({len(seen)})")
        print(
            f"done: {result.steps} steps in {result.wall_time_s:.0f}s, final {DEFAULT_METRIC}={shown}"
            + (f"; note: {flat}" if flat else "")
        )
    elif result.status is JobStatus.PRUNED:
        print(f"pruned at step {result.steps}: the trial's pruner stopped it")
    elif result.status is JobStatus.PREEMPTED:
        print(f"stopped after step {result.steps}: rerun the same command to resume", file=sys.stderr)
    else:
        print(f"failed: {(result.error or '').strip().splitlines()[-1]}", file=sys.stderr)
