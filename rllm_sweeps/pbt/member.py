"""A PBT trial's side of the search, inside its running job (the loop's hooks call it).

    member = PbtMember.for_job(job_dir, resume_from)   # None: not a PBT trial
    member.on_validation(metrics)                        # remembers the trial's score
    member.on_checkpoint(trainer, path, state)           # at each interval: report, maybe exploit

At each interval (a checkpoint at a multiple of `pbt.interval` before the last step) the trial
stores its lineage's schedule in the checkpoint, reports its score to the board, and decides
against the latest scores of the others (pbt/decision.py; nobody waits). To exploit, it copies the
chosen trial's checkpoint **of its own step** over its own (atomically, with the schedule it
continues with inside), loads it (weights, optimizer state, trainer state: the data position is
a function of the shared seed and the step) and goes on in the same process with the perturbed
settings. Its step count carries on: no step is lost or repeated. A chosen trial that has not
reached this step yet has no such checkpoint: the trial then continues as it is.

The schedule a trial continues with is the copied checkpoint's (its lineage up to the step) plus
a segment from the step on with the new settings and the parent (trial, step): replayed from
scratch as one job, it trains what the trial's lineage trained (records/schedule.py).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

from rllm_sweeps.pbt.board import PopulationBoard
from rllm_sweeps.pbt.decision import Exploit, TrialState, decide
from rllm_sweeps.pbt.membership import PbtMembership, read_membership
from rllm_sweeps.pbt.mutable import schedule_field
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.schedule import Parent, Schedule, Segment, read_schedule, write_schedule
from rllm_sweeps.training.checkpoints import TrainerState, checkpoint_name, copy_checkpoint


class PbtMember:
    def __init__(self, membership: PbtMembership, job_dir: Path) -> None:
        self.membership = membership
        self.job_dir = Path(job_dir)
        self.settings = membership.settings
        self.metric = membership.metric
        self.fields = {key: field for key in membership.keys if (field := schedule_field(key)) is not None}
        self.board = PopulationBoard(membership.board)
        self.scores: dict[int, float] = {}  # step -> the metric of its validation
        self.decided: set[int] = set()

    @classmethod
    def for_job(cls, job_dir: Path, resume_from: Path | None) -> PbtMember | None:
        """The member of the job's trial, or None (not a PBT trial). Call it before the trainer is
        built: a resumed trial continues the schedule of the checkpoint it resumes from."""
        membership = read_membership(job_dir)
        if membership is None:
            return None
        if resume_from is not None and (lineage := read_schedule(resume_from)).segments:
            write_schedule(job_dir, lineage)
        return cls(membership, job_dir)

    # -- the loop's hooks ------------------------------------------------------------------

    def on_validation(self, metrics: dict[str, Any]) -> None:
        value = metrics.get(self.metric.name)
        if isinstance(value, int | float) and math.isfinite(value):
            self.scores[int(metrics["step"])] = float(value)

    def on_checkpoint(self, trainer: Any, path: Path, state: TrainerState) -> None:
        """After the loop saved `path`: the lineage's schedule goes in it; at an interval, decide."""
        write_schedule(path, trainer.schedule)  # what a trial that copies this checkpoint continues
        step = state.step
        if step % self.settings.interval or step >= trainer.total_steps or step in self.decided:
            return
        self.decided.add(step)
        me = TrialState(self.membership.trial, step, self.score(step), self.settings_at(trainer, step))
        self.board.report(me)  # after the checkpoint and its schedule: others may copy them now
        decision = decide(me, self.board.states(), self.settings, trainer.total_steps)
        if isinstance(decision, Exploit):
            self.exploit(trainer, decision, step)

    def withdraw(self, step: int) -> None:
        """The trial's training diverged at `step`: its board line loses its score, so no trial
        exploits it (decision.quantiles ranks only scored trials), whatever it scored before."""
        self.board.report(TrialState(self.membership.trial, step, None))

    # -- parts -----------------------------------------------------------------------------

    def score(self, step: int) -> float | None:
        """The trial's score at `step` for the decision (higher is better), None without one."""
        value = self.scores.get(step)
        if value is None:
            return None
        return value if self.metric.goal == "maximize" else -value

    def settings_at(self, trainer: Any, step: int) -> dict[str, Any]:
        """The swept keys' values in force at `step` (sweep keys, as the mutations name them)."""
        settings = trainer.schedule.apply(trainer.base_settings, step)
        return {key: getattr(settings, field) for key, field in self.fields.items()}

    def exploit(self, trainer: Any, decision: Exploit, step: int) -> None:
        trial, source = self.membership.trial, decision.source_trial
        if decision.source_step < step:
            print(f"pbt: step {step}: trial {source} (top) has not reached step {step}: continuing", flush=True)
            return
        src = JobPaths(self.membership.trials[source]).checkpoints / checkpoint_name(step)
        dest = JobPaths(self.job_dir).checkpoints / checkpoint_name(step)
        new = {self.fields[k]: v for k, v in decision.settings.items() if k in self.fields}
        made: list[Schedule] = []

        def with_schedule(tmp: Path) -> None:
            lineage = read_schedule(tmp)
            if not lineage.segments:
                raise FileNotFoundError(f"{src} holds no schedule: not a PBT trial's interval checkpoint")
            made.append(lineage.then(Segment(step, new, Parent(source, step))))
            write_schedule(tmp, made[0])

        try:
            copy_checkpoint(src, dest, mark_latest=True, prepare=with_schedule)
        except (OSError, shutil.Error) as err:  # pruned, or replaced while copied: decide again next interval
            shutil.rmtree(dest.with_name(dest.name + ".tmp"), ignore_errors=True)
            print(f"pbt: step {step}: cannot copy trial {source}'s checkpoint ({err}): continuing", flush=True)
            return
        trainer.load_checkpoint(dest)
        trainer.schedule = made[0]
        write_schedule(self.job_dir, made[0])
        changes = ", ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in decision.settings.items()
        )
        print(f"pbt: step {step}: trial {trial} continues from trial {source}'s checkpoint with {changes}", flush=True)
