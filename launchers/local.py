"""Jobs as local processes, each in its own directory (the default launcher).

On a machine with GPUs each job gets its own (gpu_placement.py): a job waits, pending, until its
GPUs are free, then starts with exactly those visible. On a machine without, jobs start at once,
as before.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from launchers.base import JobState, Launcher, LaunchRequest, PollStatus
from launchers.gpu_placement import GpuPool, GpuRequest, job_environment, memory_fraction
from launchers.gpus import gpu_memory_bytes, visible_gpus
from launchers.warm_server import WARM_SERVER_ENV
from launchers.warm_start import ForkedProcess, WarmStarter, die_with_parent
from rllm_sweeps.records import attempts
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.resources import Resources


@dataclass(eq=False)  # a handle is itself (the GPU pool keys on it), not its fields
class LocalHandle:
    request: LaunchRequest
    process: subprocess.Popen | ForkedProcess | None = None  # None: waiting for its GPUs
    log: IO[bytes] | None = None
    ended: bool = False

    @property
    def attempt_id(self) -> str:
        assert self.process is not None
        return f"local-{self.process.pid}"

    def generation(self) -> int:
        return self.request.generation

    def close(self) -> None:
        """The attempt's end, once: in its records, and the log file (a job never started has neither)."""
        if not self.ended and self.process is not None:
            code = self.process.returncode
            attempts.record_end(self.request.job_dir, self.attempt_id, code, generation=self.generation())
        self.ended = True
        if self.log is not None:
            self.log.close()


def gpu_request(resources: Resources) -> GpuRequest:
    """A job's GPU needs, from its resources.* (plan.json's resources of the job)."""
    return GpuRequest(resources.gpus_per_node, resources.jobs_per_gpu)


class LocalLauncher(Launcher[LocalHandle]):
    name = "local"

    def __init__(self, gpus: Sequence[str] | None = None) -> None:
        self.warm = WarmStarter()
        self.gpus = GpuPool(visible_gpus() if gpus is None else tuple(gpus))

    def preflight(self, shapes: list[Resources]) -> list[str]:
        """A job asking for more GPUs than this machine has would wait forever: refused up front."""
        return [p for p in {self.gpus.problem(gpu_request(shape)) for shape in shapes} if p is not None]

    def gpu_memory_share(self, resources: Resources) -> tuple[float, int] | None:
        """A job's share of this machine's first GPU (they are alike on one machine)."""
        request = gpu_request(resources)
        if not request.gpus or not self.gpus.devices:
            return None
        total = gpu_memory_bytes(self.gpus.devices[0])
        return None if total is None else (memory_fraction(request, os.environ), total)

    def submit(self, request: LaunchRequest) -> LocalHandle:
        handle = LocalHandle(request)
        if not self._start_when_placed(handle):
            room = f"none of {len(self.gpus.devices)} has room"
            print(f"[sweep] job {request.index} waits for a GPU ({room})", flush=True)
        return handle

    def _start_when_placed(self, handle: LocalHandle) -> bool:
        """Start the job if its GPUs are free now (taking them); False: it waits."""
        request = handle.request
        need = gpu_request(request.resources)
        gpus = self.gpus.take(handle, need)
        if gpus is None:
            return False
        if self.gpus.devices:
            shown = f"GPU {','.join(gpus)}" if gpus else "the CPU (resources.gpus_per_node=0)"
            print(f"[sweep] job {request.index} runs on {shown}", flush=True)
        request.job_dir.mkdir(parents=True, exist_ok=True)
        paths = JobPaths(request.job_dir)
        handle.log = log = paths.log.open("ab")
        env = {**os.environ, **request.env, **job_environment(gpus, need, bool(self.gpus.devices))}
        handle.process = process = self._forked(request.argv, env, paths) or subprocess.Popen(
            request.argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**env, WARM_SERVER_ENV: "off"},  # the job's pid is its process's, not a warm server's child
            preexec_fn=die_with_parent,
        )
        attempts.record_start(
            request.job_dir,
            handle.attempt_id,
            0,
            handle.generation(),
            pid=process.pid,
            forked=isinstance(process, ForkedProcess),
        )
        return True

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

    def poll(self, handle: LocalHandle) -> PollStatus:
        if handle.process is None and not self._start_when_placed(handle):
            return PollStatus(JobState.PENDING, detail="waiting for a GPU")
        assert handle.process is not None
        code = handle.process.poll()
        if code is None:
            return PollStatus(JobState.RUNNING, detail=f"pid {handle.process.pid}")
        self.gpus.release(handle)
        handle.close()
        failure = None
        if code == -signal.SIGKILL:
            failure = "killed by SIGKILL (the kernel's out-of-memory killer, or kill -9)"
        return PollStatus(JobState.FINISHED, returncode=code, failure=failure)

    def cancel(self, handle: LocalHandle, timeout: float = 60) -> None:
        self.gpus.release(handle)
        if handle.process is None:  # still waiting for its GPUs: nothing started
            handle.close()
            return
        if handle.process.poll() is None:
            handle.process.send_signal(signal.SIGTERM)
            try:
                handle.process.wait(timeout)
            except subprocess.TimeoutExpired:
                handle.process.kill()
                handle.process.wait()
        handle.close()
