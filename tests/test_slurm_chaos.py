"""A sweep through everything a cluster does to it, on the real 2-node local SLURM cluster.

Six jobs, two at a time (SLURM arrays): the first job's step launch fails because its node daemon
dies at that moment; one job is requeued before its first checkpoint and one after it; the sweeper
is SIGKILLed and run again; a node daemon dies while a job trains (SLURM declares the node dead).
Nothing may be lost, repeated or run twice at once, and nothing may be left running.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos import ChaosSweep
from slurm_fixtures import LocalSlurm

from rllm_sweeps.records import attempts
from rllm_sweeps.records.result import JobResult

pytestmark = [pytest.mark.slow, pytest.mark.slurm]
STEPS = 4
PARALLEL = 2


def test_a_sweep_survives_requeues_lost_node_daemons_and_a_killed_sweeper_losing_nothing(
    local_slurm_netns: LocalSlurm, tmp_path: Path
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    chaos = ChaosSweep(local_slurm_netns, tmp_path / "sweep", jobs=6, steps=STEPS, parallel=PARALLEL)
    chaos.marker_dir = markers
    chaos.start()
    try:
        # 1. A node daemon dies while `srun` launches the first job's step.
        chaos.launch_failure_on_node()
        launch_failed = next(d for d in chaos.job_dirs() if "could not launch" in chaos.result_text(d))

        # 2. Requeued during start-up, before any checkpoint (its process may not have its signal
        #    handlers yet): the attempt is still recorded.
        def starting() -> Path | None:
            for d, (job_id, _) in chaos.running().items():
                run = chaos.live_attempt(d)  # its process was started: the wrapper recorded it
                if d != launch_failed and run and run.scheduler_id == job_id and not chaos.trained_steps(d):
                    return d
            return None

        early = chaos.wait_for(starting, "a job starting up")
        chaos.requeue(early)

        # 3. Requeued after its first checkpoint: it resumes from it.
        #    (Not one in its last step: a requeue as a job ends is test_runner_decisions.py's case.)
        def checkpointed() -> Path | None:
            for d in chaos.running():
                if d != early and (d / "checkpoints/latest").exists() and len(chaos.trained_steps(d)) < STEPS - 1:
                    return d
            return None

        late = chaos.wait_for(checkpointed, "a job past its first checkpoint")
        chaos.requeue(late)

        # 4. The sweeper is killed; the same command run again adopts the jobs SLURM still runs.
        chaos.kill_sweeper_and_rerun()

        # 5. A node daemon dies while a job trains: SLURM declares the node dead (NODE_FAIL). The job
        #    picked has just begun training, and its steps are slowed down so that it is still
        #    training when SlurmdTimeout (30 s) has passed.
        def training() -> tuple[Path, str] | None:
            for d, (_, node) in chaos.running().items():
                if chaos.training_now(d) and len(chaos.trained_steps(d)) == 1:
                    return d, node
            return None

        victim, node = chaos.wait_for(training, "a job that has begun training")
        chaos.slow_down(1.0)
        chaos.kill_node_daemon(node)

        def retried() -> bool:
            result = JobResult.read(victim)
            return result is not None and result.retries >= 1

        chaos.wait_for(retried, "the retry after the node failure", timeout=180)
        chaos.slow_down(None)
        # Its old process, still training on the node SLURM declared dead, finds at its next step
        # that it was superseded and stops without writing its records over the retry's.
        superseded = victim / "job.log"
        chaos.wait_for(
            lambda: "was superseded" in superseded.read_text(errors="replace"), "the old attempt fenced", 120
        )
        chaos.restart_node_daemons()
        assert chaos.wait(timeout=600) == 0, chaos.output()
    finally:
        if chaos.sweeper is not None and chaos.sweeper.poll() is None:
            chaos.sweeper.kill()
        local_slurm_netns.restart_slurmds()

    out = chaos.output()
    assert chaos.check(PARALLEL) == [], "\n".join(chaos.events) + "\n" + out
    rerun = Path(chaos.outputs[1]).read_text()
    assert "reattached to job" in rerun, rerun[-3000:]  # the rerun polled the jobs SLURM still held
    # The failed launch: an infrastructure failure, retried, SLURM's own reason recorded.
    assert "Task launch for StepId=" in JobResult.read(launch_failed).retry_reasons[0]
    # The requeue during start-up left its trace: two attempts of that job, SLURM's restart counted.
    assert [a.restart_count for a in attempts.read_attempts(early)][:2] == [0, 1]
    assert JobResult.read(early).attempts >= 2
    # The requeue after the checkpoint resumed from it; the node failure was retried and resumed.
    assert JobResult.read(late).restarts >= 1
    victim_result = JobResult.read(victim)
    assert "node failure" in victim_result.retry_reasons[0] and victim_result.restarts >= 1
    assert victim_result.retries >= 1  # the fenced old attempt did not write its record over the retry's
