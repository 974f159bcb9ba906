"""Jobs as local processes, each in its own directory (the default launcher)."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from dataclasses import dataclass
from typing import IO

from launchers.base import JobState, JobStatus, Launcher, LaunchRequest
from rllm_sweeps.records import attempts
from rllm_sweeps.records.layout import JobPaths

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """A job gets SIGTERM (checkpoint, then exit) when its sweeper dies, even by SIGKILL:
    no orphan keeps writing into a directory that a resumed sweep is about to use."""
    os.setsid()
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class LocalHandle:
    process: subprocess.Popen
    log: IO[bytes]
    request: LaunchRequest
    ended: bool = False

    @property
    def attempt_id(self) -> str:
        return f"local-{self.process.pid}"

    def generation(self) -> int:
        return attempts.generation_of(self.request.env)

    def close(self) -> None:
        """The attempt's end, once: in its records, and the log file."""
        if not self.ended:
            self.ended = True
            code = self.process.returncode
            attempts.record_end(self.request.job_dir, self.attempt_id, code, generation=self.generation())
        self.log.close()


class LocalLauncher(Launcher):
    name = "local"

    def submit(self, request: LaunchRequest) -> LocalHandle:
        request.job_dir.mkdir(parents=True, exist_ok=True)
        log = JobPaths(request.job_dir).log.open("ab")
        process = subprocess.Popen(
            request.argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **request.env},
            preexec_fn=_die_with_parent,
        )
        handle = LocalHandle(process, log, request)
        attempts.record_start(request.job_dir, handle.attempt_id, 0, handle.generation(), pid=process.pid)
        return handle

    def poll(self, handle: LocalHandle) -> JobStatus:
        code = handle.process.poll()
        if code is None:
            return JobStatus(JobState.RUNNING, detail=f"pid {handle.process.pid}")
        handle.close()
        failure = None
        if code == -signal.SIGKILL:
            failure = "killed by SIGKILL (the kernel's out-of-memory killer, or kill -9)"
        return JobStatus(JobState.FINISHED, returncode=code, failure=failure)

    def cancel(self, handle: LocalHandle, timeout: float = 60) -> None:
        if handle.process.poll() is None:
            handle.process.send_signal(signal.SIGTERM)
            try:
                handle.process.wait(timeout)
            except subprocess.TimeoutExpired:
                handle.process.kill()
                handle.process.wait()
        handle.close()
