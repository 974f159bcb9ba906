"""What runs inside a SLURM allocation: `python train.py ...`, stopped and requeued on a
time limit or preemption (submitit calls `checkpoint()` on the signal)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import submitit


class TrainCommand(submitit.helpers.Checkpointable):
    """`python train.py ...` in the allocation; on a time limit or preemption: stop, requeue."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.argv = argv
        self.env = env
        self.log = log
        self.process: subprocess.Popen | None = None

    def __call__(self) -> int:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(self.argv, env={**os.environ, **self.env}, stdout=log, stderr=log)
            code = self.process.wait()
        if code not in (0, 143):
            raise RuntimeError(f"training exited with code {code} (see the job's job.log and result.json)")
        return code

    def checkpoint(self, *args: Any, **kwargs: Any) -> submitit.helpers.DelayedSubmission:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # the loop checkpoints at the next step
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return submitit.helpers.DelayedSubmission(TrainCommand(self.argv, self.env, self.log))
