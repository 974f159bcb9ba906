"""Jobs as local processes, each in its own directory (the default launcher)."""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from typing import IO

from launchers.base import JobState, JobStatus, Launcher, LaunchRequest
from launchers.warm_server import WARM_SERVER_ENV
from launchers.warm_start import ForkedProcess, WarmStarter, die_with_parent
from rllm_sweeps.records import attempts
from rllm_sweeps.records.layout import JobPaths


@dataclass
class LocalHandle:
    process: subprocess.Popen | ForkedProcess
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

    def __init__(self) -> None:
        self.warm = WarmStarter()

    def submit(self, request: LaunchRequest) -> LocalHandle:
        request.job_dir.mkdir(parents=True, exist_ok=True)
        paths = JobPaths(request.job_dir)
        log = paths.log.open("ab")
        env = {**os.environ, **request.env}
        process = self._forked(request.argv, env, paths) or subprocess.Popen(
            request.argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**env, WARM_SERVER_ENV: "off"},  # the job's pid is its process's, not a warm server's child
            preexec_fn=die_with_parent,
        )
        handle = LocalHandle(process, log, request)
        attempts.record_start(
            request.job_dir,
            handle.attempt_id,
            0,
            handle.generation(),
            pid=process.pid,
            forked=isinstance(process, ForkedProcess),
        )
        return handle

    def _forked(self, argv: list[str], env: dict[str, str], paths: JobPaths) -> ForkedProcess | None:
        """The job forked from the fork server, where it can be (launchers/warm_start.py)."""
        if not self.warm.can_fork(argv, env):
            return None
        try:
            return self.warm.start(argv, env, paths.log)
        except (OSError, EOFError) as err:  # the fork server is gone: later jobs start as fresh interpreters
            self.warm.enabled = False
            print(f"[sweep] note: jobs start as fresh interpreters from now on (fork server: {err})", flush=True)
            return None

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
