"""What the job does at the RL loop's hooks: each step and validation into metrics.jsonl and the
trackers; validations to the exporter (the best policy), the Optuna trial (pruning) and the PBT
member; a checkpoint to the PBT member (exploit); and when the loop must stop."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rllm_sweeps.records.metric_rows import TrainRow, ValRow
from rllm_sweeps.records.result import PHASES, phase_metric

if TYPE_CHECKING:
    from rllm_sweeps.job.stop_signal import StopRequested
    from rllm_sweeps.pbt.member import PbtMember
    from rllm_sweeps.records.attempts import AttemptFence
    from rllm_sweeps.records.metrics import MetricsLog
    from rllm_sweeps.trackers import Tracker
    from rllm_sweeps.training.checkpoints import TrainerState
    from rllm_sweeps.training.loop import LoopHooks, RLTrainer
    from rllm_sweeps.training.policy_export import PolicyExporter
    from rllm_sweeps.training.trial import TrialReporter


@dataclass
class JobHooks:
    trainer: RLTrainer
    metrics_log: MetricsLog
    exporter: PolicyExporter
    trackers: list[Tracker]
    trial: TrialReporter | None  # an Optuna sweep's job reports to its trial and may be pruned
    pbt: PbtMember | None  # a PBT trial's side of the search
    stop: StopRequested
    fence: AttemptFence
    # A resumed job's history starts with the validations of its earlier attempts (metrics.jsonl
    # keeps them up to the checkpoint): its best is over the whole run, not this attempt.
    validations: list[ValRow]
    phases: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))

    def loop_hooks(self) -> LoopHooks:
        from rllm_sweeps.training.loop import LoopHooks

        return LoopHooks(
            on_step_end=self.on_step_end,
            on_validation_end=self.on_validation_end,
            on_checkpoint=self.on_checkpoint,
            should_stop=self.should_stop,
        )

    def on_step_end(self, metrics: dict[str, Any]) -> None:
        # total_steps: a sweep's progress line shows each running job's step of its total.
        self.metrics_log.append(TrainRow(time=time.time(), total_steps=self.trainer.total_steps, **metrics))
        for name in self.phases:
            self.phases[name] += metrics[phase_metric(name)]
        for t in self.trackers:
            t.log(metrics, metrics["step"])

    def on_validation_end(self, metrics: dict[str, Any]) -> None:
        row = ValRow(time=time.time(), **metrics)
        self.metrics_log.append(row)
        self.validations.append(row)
        self.exporter.on_validation(metrics)
        for t in self.trackers:
            t.log(metrics, metrics["step"])
        if self.trial is not None:
            self.trial.on_validation(metrics)
        if self.pbt is not None:
            self.pbt.on_validation(metrics)

    def on_checkpoint(self, path: Path, state: TrainerState) -> None:
        if self.pbt is not None:  # at each interval: report the score, maybe continue from a better trial
            self.pbt.on_checkpoint(self.trainer, path, state)

    def should_stop(self) -> bool:
        return bool(self.stop) or not self.fence.current() or (self.trial is not None and self.trial.should_stop())

    def close(self) -> None:
        self.metrics_log.close()
        for t in self.trackers:
            t.close()


__all__ = ["JobHooks"]
