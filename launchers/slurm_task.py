"""What runs inside a SLURM allocation: `python -m rllm_sweeps ...` (the training app), stopped and
requeued on a time limit or preemption (submitit calls `checkpoint()` on the signal).

submitit runs the callable once per node, and every node runs the same command: the job decides
by its rank what it does there (rllm_sweeps/runtime/node_role.py). Rank 0's output goes to the
job's job.log and its attempt's start and end to attempts.jsonl; rank k's output to node-K.log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import submitit

from rllm_sweeps.records import attempts
from rllm_sweeps.records.layout import JobPaths

STOP_TIMEOUT_S = 60  # for the training process to reach a step boundary and save


class TrainCommand(submitit.helpers.Checkpointable):
    """`python -m rllm_sweeps ...` in the allocation; on a time limit or preemption: stop, requeue."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path, generation: int = 0) -> None:
        self.argv = argv
        self.env = env
        self.log = log
        self.generation = generation  # the attempt's (records/attempts.py), for its start and end
        self.process: subprocess.Popen | None = None

    def __call__(self) -> int:
        environment = submitit.JobEnvironment()
        rank = environment.global_rank
        job_dir = self.log.parent
        log_path = self.log if rank == 0 else JobPaths(job_dir).node_log(rank)
        generation = self.generation
        restarts = int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)
        if rank == 0:
            # Before train.py starts: an attempt killed during its start-up still leaves a trace, and
            # SLURM's requeues are counted (SLURM_RESTART_COUNT) as well as the resumes.
            attempts.record_start(job_dir, environment.job_id, restarts, generation=generation)
        code: int | None = None
        try:
            with log_path.open("ab") as log:
                self.process = subprocess.Popen(self.argv, env={**os.environ, **self.env}, stdout=log, stderr=log)
                code = self.process.wait()
        finally:
            if rank == 0:
                # Also read by the job's other nodes: they leave even when train.py was killed outright.
                # A wrapper killed outright writes nothing here: the sweeper takes the end from sacct.
                attempts.record_end(job_dir, environment.job_id, code, generation, restart_count=restarts)
        if code not in (0, 143):
            raise RuntimeError(f"training exited with code {code} (see the job's job.log and result.json)")
        return code

    def checkpoint(self, *args: Any, **kwargs: Any) -> submitit.helpers.DelayedSubmission:
        # Runs in submitit's signal handler, which interrupted `self.process.wait()` in
        # __call__: that frame holds Popen's wait lock, so Popen.wait/poll here could not reap
        # the child and would block for the whole timeout. Watch /proc instead.
        if self.process is not None:
            pid = self.process.pid
            if not _exited(pid):
                os.kill(pid, signal.SIGTERM)  # the loop checkpoints at the next step boundary
                deadline = time.monotonic() + STOP_TIMEOUT_S
                while not _exited(pid) and time.monotonic() < deadline:
                    time.sleep(0.2)
                if not _exited(pid):
                    os.kill(pid, signal.SIGKILL)
        return submitit.helpers.DelayedSubmission(TrainCommand(self.argv, self.env, self.log, self.generation))


def _exited(pid: int) -> bool:
    """The process is gone or a zombie (exited, not yet reaped by the interrupted wait)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"
