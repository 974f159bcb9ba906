"""A job's training, top to bottom: its task and workflow, Ray up (where the engine uses it, or on
several nodes), the engine's SkyRL backend, the RL loop with the job's hooks, and the summary that
result.json keeps. Ray goes down on every exit. The training stack is imported on first use: the
job's package stays light to import (`rllm-sweeps rerun` reads its provenance)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from rllm_sweeps.job.config import JobConfig
from rllm_sweeps.job.hooks import JobHooks
from rllm_sweeps.job.start import JobStart
from rllm_sweeps.job.stop_signal import StopRequested
from rllm_sweeps.records.launch import judged_metrics
from rllm_sweeps.records.metric_rows import ValRow
from rllm_sweeps.records.metrics import best_values
from rllm_sweeps.records.result import TrainingSummary
from rllm_sweeps.training.divergence import Diverged

if TYPE_CHECKING:
    from rllm_sweeps.engines import BuiltBackend
    from rllm_sweeps.pbt.member import PbtMember
    from rllm_sweeps.runtime.job_ray import JobRay
    from rllm_sweeps.training.loop import RLTrainer
    from rllm_sweeps.training.trial import TrialReporter
    from rllm_sweeps.workflows.base import WorkflowSpec


def train(job: JobConfig, start: JobStart, resume_from: Path | None, stop: StopRequested) -> TrainingSummary:
    """Trains from `resume_from` (None: from the start) until done, stopped or pruned."""
    from rllm_sweeps.data.task import job_task, job_workflow
    from rllm_sweeps.pbt.member import PbtMember
    from rllm_sweeps.records.schedule import read_schedule
    from rllm_sweeps.training.loop import RLTrainer
    from rllm_sweeps.training.trial import TrialReporter
    from rllm_sweeps.workflows import read_workflow
    from rllm_sweeps.workflows.episode_log import logged_if_asked

    plain = job.plain()
    task = job_task(plain)  # the task config group, or data.train_files (rllm_sweeps/data/)
    workflow = read_workflow(job_workflow(plain.get("workflow"), plain))
    # An Optuna sweep's job reports to its trial and may be pruned (None outside one).
    trial = TrialReporter.of_launch(start.launch, job.loop.total_steps(len(task.train)))
    with job_ray(job, start.job_dir) as cluster:
        nodes = cluster.node_count
        built = build_backend(job, start.job_dir, cluster, workflow)
        # A PBT trial's side of the search (None otherwise); first: a resumed trial continues the
        # schedule of its checkpoint.
        pbt = PbtMember.for_job(start.job_dir, resume_from)
        trainer = RLTrainer(
            job.loop,
            built.backend,
            task,
            built.tokenizer,
            start.paths.work,
            checkpoint_dir=start.paths.checkpoints,
            engine=job.engine.traits,
            workflow=logged_if_asked(workflow.build(task), plain, start.job_dir),  # rllm.episode_logging
            schedule=read_schedule(start.job_dir),  # a PBT trial's or a replay's settings per step range
        )
        first_step = 0 if resume_from is None else trainer.load_checkpoint(resume_from).step
        hooks = job_hooks(job, start, trainer, resume_from, first_step, trial, pbt, stop)
        trainer.hooks = hooks.loop_hooks()
        fit(trainer, hooks, first_step, start.paths.checkpoints)
    return summary(trainer, hooks, built, nodes, workflow, start)


def job_ray(job: JobConfig, job_dir: Path) -> AbstractContextManager[JobRay]:
    """The job's Ray cluster, only where it is used: by the engine's backend, or on several nodes. On
    a multi-node allocation this is the head; the other nodes' tasks join it (runtime/job_ray.py).
    ray.json records this job's Ray processes (or that it has none), for `status` and teardown checks."""
    from rllm_sweeps.runtime.job_ray import job_ray_cluster, no_ray
    from rllm_sweeps.runtime.node_role import NodeRole

    nodes = NodeRole.of_this_process().nodes
    if job.engine.uses_ray or nodes > 1:
        return job_ray_cluster(job_dir, *job.engine.node_resources(job.engine_settings), nodes=nodes)
    return no_ray(job_dir, job.engine.no_ray_reason)


def build_backend(job: JobConfig, job_dir: Path, cluster: JobRay, workflow: WorkflowSpec) -> BuiltBackend:
    """The engine's SkyRL backend, on the job's Ray cluster where it has one."""
    if cluster.address is not None:
        print(f"ray cluster up at RAY_ADDRESS={cluster.address} ({cluster.node_count} nodes)", flush=True)
    built = job.engine.build_backend(job.engine_settings, job.loop, job_dir, workflow.settings.parallel_calls())
    if built.placement_group is not None:  # the backend's processes, one per bundle
        cluster.update(process_nodes=cluster.placement_nodes(built.placement_group))
    return built


def job_hooks(
    job: JobConfig,
    start: JobStart,
    trainer: RLTrainer,
    resume_from: Path | None,
    first_step: int,
    trial: TrialReporter | None,
    pbt: PbtMember | None,
    stop: StopRequested,
) -> JobHooks:
    """The loop's hooks and what they write to: metrics.jsonl (kept up to the checkpoint when resumed),
    the final and best policies as PEFT adapters (export/; the best by the sweep's first metric), the
    trackers."""
    from rllm_sweeps.records.metrics import MetricsLog, read_metrics
    from rllm_sweeps.trackers import make_trackers
    from rllm_sweeps.training.policy_export import PolicyExporter

    metrics_log = MetricsLog(start.job_dir, resume_from_step=None if resume_from is None else first_step)
    metric, goal = judged_metrics(start.launch)[0]
    earlier = start.previous.exports if start.previous is not None and resume_from is not None else None
    exporter = PolicyExporter(start.paths, trainer.policy, metric, goal, earlier, first_step)
    trackers = make_trackers(
        list(job.loggers),
        start.job_dir,
        trainer.total_steps,
        first_step,
        job.project_name,
        job.experiment_name,
        job.plain(),
    )
    validations = [] if resume_from is None else [r for r in read_metrics(start.job_dir) if isinstance(r, ValRow)]
    return JobHooks(trainer, metrics_log, exporter, trackers, trial, pbt, stop, start.fence, validations)


def fit(trainer: RLTrainer, hooks: JobHooks, first_step: int, checkpoints: Path) -> None:
    """The loop, then what a stopped run keeps: a checkpoint at its step boundary, its final policy."""
    from rllm_sweeps.training.checkpoints import checkpoint_name

    stop, fence = hooks.stop, hooks.fence
    try:
        stop.in_training = True
        try:
            trainer.fit()
        except Diverged as err:
            if hooks.pbt is not None:  # no other trial copies a diverged one
                hooks.pbt.withdraw(err.divergence.step)
            raise
        stop.in_training = False
        # A superseded attempt saves nothing: the job's new attempt owns the checkpoints.
        if hooks.should_stop() and first_step < trainer.state.step < trainer.total_steps and fence.current():
            trainer.save_checkpoint(checkpoints / checkpoint_name(trainer.state.step))
        if fence.current():  # completed, pruned or stopped at a step boundary: what it has
            hooks.exporter.export_final(trainer.state.step)
    finally:
        stop.in_training = False
        hooks.close()


def summary(
    trainer: RLTrainer, hooks: JobHooks, built: BuiltBackend, nodes: int, workflow: WorkflowSpec, start: JobStart
) -> TrainingSummary:
    """What result.json keeps of the training."""
    history = [_validation_record(v) for v in hooks.validations]
    return TrainingSummary(
        steps=trainer.state.step,
        finished=trainer.state.step >= trainer.total_steps,
        final={k: v for k, v in history[-1].items() if k != "step"} if history else {},
        best=best_values(history, judged_metrics(start.launch)),  # the sweep's metrics, each by its goal
        validations=history,
        phase_time_s=hooks.phases,
        backend=built.name,
        processes=built.processes,
        nodes=nodes,
        workflow=f"{workflow.cls.__module__}:{workflow.cls.__qualname__}",
        pruned_at=hooks.trial.pruned_at if hooks.trial is not None else None,
        exports=hooks.exporter.exports,
        memory_fit=built.memory_fit,
    )


def _validation_record(row: ValRow) -> dict[str, float]:
    """What result.json keeps of one validation: its step and its val_* metrics (not timings)."""
    kept = {k: v for k, v in row.metrics.items() if k.startswith("val_") and "time" not in k}
    return {"step": row.step, **kept}


__all__ = ["train"]
