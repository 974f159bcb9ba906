"""A training job's side of an Optuna trial: report the objective at each validation, ask the pruner.

    reporter = TrialReporter.of_launch(launch, total_steps)   # None outside an Optuna sweep
    reporter.on_validation(metrics)        # from the loop's on_validation_end hook
    reporter.pruned_at                     # the step the pruner stopped it at, or None

The sweeper creates and finishes trials (ask, tell); a job only reports intermediate values
and may find its trial pruned. Its trial and the study's pruner come in its launch record
(records/launch.py: OptunaTrial); the objectives' names from the study.

The objective is reported after every validation that follows a training step (the validation
before training is the same for every trial and tells the pruner nothing). The pruner is not
asked at the last step: the trial then completes, with its final value.

Seed replicates of a trial are separate jobs. Each records its value at a step (trial user
attribute `replica_K_values`); the replicate that completes a step reports the mean of all
of them as the trial's intermediate value and asks the pruner. A prune is recorded on the
trial (`pruned_at_step`) and the other replicates stop at their next validation.

The first validation checks that the training reports every objective: a metric it never
reports fails the job at once (MetricNotReported) with the names it does report.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Mapping
from typing import Any

from rllm_sweeps.records.launch import JobLaunch, OptunaTrial
from rllm_sweeps.study import STUDY_ATTR, SweepAttrs, live_trial, open_storage

PRUNED_AT = "pruned_at_step"  # trial user attribute: the step a replicate was pruned at


class MetricNotReported(ValueError):
    """The sweep optimizes a metric the training does not report."""


class TrialFinished(RuntimeError):
    """The sweeper finished this job's trial already (it marked it failed after a restart)."""


def replica_key(replica: int) -> str:
    return f"replica_{replica}_values"


class TrialReporter:
    """Reports one job's validation metrics to its Optuna trial and asks the pruner."""

    def __init__(self, trial: OptunaTrial, total_steps: int) -> None:
        import optuna

        self.address = address = trial.address
        self.total_steps = total_steps
        self.storage = open_storage(address.storage)
        study_id = self.storage.get_study_id_from_name(address.study)
        attrs = SweepAttrs.of_study(self.storage.get_study_user_attrs(study_id), address.study)
        if attrs is None or not attrs.metrics:
            raise ValueError(f"study {address.study!r} has no '{STUDY_ATTR}' attribute: it was not made by a sweep")
        self.metrics = attrs.metrics
        self.study = optuna.load_study(study_name=address.study, storage=self.storage, pruner=trial.pruner.build())
        self.trial_id = self.storage.get_trial_id_from_study_id_trial_number(study_id, address.trial)
        self.trial = live_trial(self.study, self.trial_id)
        self._check_running()
        self.pruned_at: int | None = None
        self._checked = False

    @classmethod
    def of_launch(cls, launch: JobLaunch | None, total_steps: int) -> TrialReporter | None:
        """The reporter of the trial the job's launch record names, or None (not an Optuna sweep's job)."""
        return None if launch is None or launch.trial is None else cls(launch.trial, total_steps)

    def _check_running(self) -> None:
        import optuna

        state = self.storage.get_trial(self.trial_id).state
        if state != optuna.trial.TrialState.RUNNING:
            raise TrialFinished(
                f"trial {self.address.trial} of study {self.address.study!r} is {state.name} already: "
                "the sweeper finished it (after a restart, trials of the dead sweeper are marked failed)"
            )

    def on_validation(self, metrics: Mapping[str, Any]) -> None:
        """After a validation: check the metric names (first time), report, maybe prune."""
        if not self._checked:
            self._checked = True
            missing = [m for m in self.metrics if m not in metrics]
            if missing:
                reported = ", ".join(sorted(k for k in metrics if k != "step"))
                raise MetricNotReported(
                    f"the sweep optimizes {', '.join(repr(m) for m in missing)}, which the training never reports "
                    f"(validation reports: {reported}); fix sweep.metric"
                )
        step = int(metrics["step"])
        if step <= 0 or len(self.metrics) > 1 or self.pruned_at is not None:
            return  # before training, or several objectives (Optuna prunes on one value only)
        import optuna

        try:
            if self._pruned_elsewhere():
                self.pruned_at = step
                return
            if self._report(step, float(metrics[self.metrics[0]])) and step < self.total_steps:
                if self.trial.should_prune():
                    self.storage.set_trial_user_attr(self.trial_id, PRUNED_AT, step)
                    self.pruned_at = step
        except optuna.exceptions.UpdateFinishedTrialError:
            self._check_running()
            raise

    def _report(self, step: int, value: float) -> bool:
        """Report the trial's value at `step` (with replicates: their mean, once all have it)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a step reported twice (a resumed job) keeps its value
            if self.address.replicas == 1:
                self.trial.report(value, step)
                return True
            key = replica_key(self.address.replica)
            mine = dict(self.storage.get_trial(self.trial_id).user_attrs.get(key) or {})
            mine[str(step)] = value
            self.storage.set_trial_user_attr(self.trial_id, key, mine)
            attrs = self.storage.get_trial(self.trial_id).user_attrs
            values = [(attrs.get(replica_key(k)) or {}).get(str(step)) for k in range(self.address.replicas)]
            if any(v is None for v in values):
                return False  # the last replicate to reach this step reports it
            mean = statistics.fmean(values) if all(math.isfinite(v) for v in values) else math.nan
            self.trial.report(mean, step)
            return True

    def _pruned_elsewhere(self) -> bool:
        if self.address.replicas == 1:
            return False
        return PRUNED_AT in self.storage.get_trial(self.trial_id).user_attrs

    def should_stop(self) -> bool:
        return self.pruned_at is not None


__all__ = ["PRUNED_AT", "MetricNotReported", "TrialFinished", "TrialReporter", "replica_key"]
