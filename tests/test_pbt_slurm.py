"""A PBT sweep on the real local SLURM cluster through what a cluster does to it: one trial is
requeued mid-run (after its first interval's checkpoint) and the sweeper is SIGKILLed and run
again. The trials decide among themselves through files, so the sweep completes with every
trial's steps 1..6 trained once: none lost, none repeated, no allocation twice at once."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from chaos import REPO, SLOW, ChaosSweep
from slurm_fixtures import LocalSlurm

from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.schedule import read_schedule

pytestmark = [pytest.mark.slow, pytest.mark.slurm]
STEPS = 6
PARALLEL = 2  # the 1-node cluster's 2 CPUs: trials 2 and 3 decide against 0 and 1's latest scores


@dataclass
class PbtChaosSweep(ChaosSweep):
    """chaos.py's sweep, as a PBT search (population 4, interval 3) on the 1-node cluster."""

    def argv(self) -> list[str]:
        slow = [a for a in SLOW if not a.startswith("trainer.test_freq=")]  # PBT validates at its interval
        return [
            sys.executable,
            str(REPO / "train.py"),
            "-m",
            *slow,
            "trainer.lr=tag(log,interval(1e-5,1e-2))",
            "sweep.method=pbt",
            "sweep.pbt.population=4",
            "sweep.pbt.interval=3",
            f"trainer.total_batches={self.steps}",
            f"hydra.sweeper.parallel={self.parallel}",
            "cluster=local",
            f"hydra.sweep.dir={self.sweep_dir}",
            "hydra.launcher.poll_interval_s=2",
        ]


def test_a_pbt_sweep_on_slurm_survives_a_requeued_trial_and_a_killed_sweeper_losing_no_step(
    local_slurm: LocalSlurm, tmp_path: Path
) -> None:
    chaos = PbtChaosSweep(local_slurm, tmp_path / "sweep", jobs=4, steps=STEPS, parallel=PARALLEL)
    chaos.start()
    try:
        # A trial past its first interval (its checkpoint of step 3, its decision) is requeued: it
        # resumes from its own last checkpoint, with the schedule that checkpoint stores.
        def past_interval() -> Path | None:
            for d in chaos.running():
                if (d / "checkpoints/step_3").exists() and len(chaos.trained_steps(d)) < STEPS - 1:
                    return d
            return None

        requeued = chaos.wait_for(past_interval, "a trial past its first interval")
        chaos.requeue(requeued)
        # The sweeper is killed; the same command adopts the trials SLURM still runs.
        chaos.kill_sweeper_and_rerun()
        rc = chaos.wait(timeout=900)
        assert rc == 0, chaos.output()
        assert chaos.check(PARALLEL) == [], "\n".join(chaos.events) + "\n" + chaos.output()
        result = JobResult.read(requeued)
        assert result.restarts >= 1, result  # it resumed from a checkpoint, not from scratch
        # Every trial's schedule starts at step 0, and a copy's parent is another trial at step 3.
        for d in chaos.job_dirs():
            schedule = read_schedule(d)
            assert schedule.segments[0].start_step == 0
            assert all(p.step == start == 3 for start, p in schedule.parents)
    finally:
        if chaos.sweeper is not None and chaos.sweeper.poll() is None:
            chaos.sweeper.kill()
            chaos.sweeper.wait()
