"""Jobs as Ray jobs on an existing Ray cluster, through Ray's Job Submission API
(`hydra/launcher=ray_cluster hydra.launcher.address=http://HEAD:8265`; docs/RAY.md).

Each planned job is one Ray job: its entrypoint is the job's own command (`python -m rllm_sweeps
OVERRIDES`, app_command.py), wrapped by launchers/ray_task.py for its attempt records; its entrypoint resources are
its resources.* (CPUs, GPUs, memory), so Ray places it on a node that has them. The job writes its
records into its job directory, which must be on storage the cluster's nodes see at the same path
(a shared file system; hydra.sweep.dir a path or a pyarrow.fs file:// URI, sweep/storage.py); the dry
run and the run check that with one probe job first (launchers/ray_storage_probe.py).

The submission id is chosen here and recorded in attempts.jsonl *before* Ray is asked, so a sweeper
killed at any moment and rerun finds every Ray job it may have submitted (`reattach`) and submits
no duplicate. Ray's token authentication: launchers/ray_auth.py.
"""

from __future__ import annotations

import shlex
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from launchers import ray_storage_probe
from launchers.base import JobState, Launcher, LaunchRequest, PollStatus
from launchers.ray_auth import auth_refusal, unauthenticated_warning
from launchers.ray_cluster_settings import RayClusterSettings
from rllm_sweeps.records import attempts
from rllm_sweeps.records.attempt_events import Submitted
from rllm_sweeps.records.resources import Resources

if TYPE_CHECKING:  # ray is imported lazily: a sweep on SLURM needs none of it
    from ray.job_submission import JobDetails

STOP_WAIT_S = 60  # for a stopped job's training process to reach a step boundary and save


@dataclass(frozen=True)
class RayJobHandle:
    submission_id: str  # Ray's job id, as the sweep chose and recorded it
    job_dir: Path


def submission_id(request: LaunchRequest) -> str:
    """Unique per attempt, readable in `ray job list`: the sweep's and the job's directory names."""
    sweep = request.job_dir.parent.parent.name
    return f"{attempts.RAY_ID_PREFIX}{sweep}-{request.job_dir.name}-g{request.generation}-{uuid.uuid4().hex[:8]}"


def entrypoint(request: LaunchRequest, sid: str) -> str:
    """The job's own command, inside its attempt-recording wrapper, as one shell line."""
    wrapper = [sys.executable, "-m", "launchers.ray_task", str(request.job_dir), str(request.generation), sid]
    return shlex.join([*wrapper, "--", *request.argv])


def entrypoint_resources(resources: Resources) -> dict[str, float | int]:
    """What Ray must find free on one node to start the job: its resources.*."""
    asked: dict[str, float | int] = {
        "entrypoint_num_cpus": resources.cpus_per_task,
        "entrypoint_memory": int(resources.mem_gb * 1024**3),
    }
    if resources.gpus_per_node:
        asked["entrypoint_num_gpus"] = resources.gpus_per_node
    return asked


def ended_without_code(info: JobDetails) -> str:
    """Why Ray ended a job whose entrypoint gave no exit code, in one line: Ray's error type and its
    message, whose later lines hold the cause (a lost node: JOB_SUPERVISOR_ACTOR_DIED, "The actor died
    because its node has died. Node Id: ...", from Ray's GCS)."""
    kind = f" ({info.error_type})" if info.error_type else ""
    return f"Ray job {info.status.value}{kind}: {' '.join((info.message or '').split())}".strip()


class RayClusterLauncher(Launcher[RayJobHandle]):
    name = "ray_cluster"

    def __init__(self, settings: RayClusterSettings) -> None:
        assert settings.address, "launchers/choice.py refuses a ray_cluster launcher without an address"
        self.settings = settings
        self.address: str = settings.address
        self._client = None
        self._states: dict[str, JobDetails] = {}  # submission id -> what the job API said last
        self._last_poll = 0.0

    def client(self):  # noqa: ANN201 (ray is imported lazily: a sweep on SLURM needs none of it)
        if self._client is None:
            from ray.job_submission import JobSubmissionClient

            self._client = JobSubmissionClient(self.address)
        return self._client

    def unavailable(self) -> str | None:
        """Why the cluster cannot be asked: its dashboard does not answer, or refuses our token."""
        if (refused := auth_refusal(self.address)) is not None:
            return refused
        if (warning := unauthenticated_warning(self.address)) is not None:
            print(f"warning: {warning}", flush=True)
        try:
            self.client()
        except Exception as err:  # noqa: BLE001 (Ray raises ConnectionError, RuntimeError, requests' errors)
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            return f"the Ray cluster at {self.address} does not answer: {first} (docs/RAY.md)"
        return None

    def preflight(self, shapes: list[Resources]) -> list[str]:
        """A Ray job's entrypoint runs on one node: a multi-node job is not run this way (yet)."""
        return [
            f"resources.nodes={shape.nodes}: a job on a Ray cluster runs on one node; set resources.nodes=1 "
            "(docs/RAY.md)"
            for shape in shapes
            if shape.nodes > 1
        ]

    def flags(self, resources: Resources) -> list[str]:
        return [f"{k}={v}" for k, v in entrypoint_resources(resources).items()]

    def storage_problem(self, sweep_dir: Path) -> str | None:
        """One probe job: does a job on the cluster see, and may it write, the storage the sweep's
        records go to? Asked through pyarrow.fs in the nearest directory of the sweep's that exists
        (a dry run creates no directory; the probe's two files are removed): launchers/ray_storage_probe.py."""
        target = next(p for p in [sweep_dir, *sweep_dir.parents] if p.exists())
        client = self.client()
        with ray_storage_probe.question(target.as_uri()) as asked:
            sid = f"rllm-probe-{uuid.uuid4().hex[:8]}"
            line = shlex.join([sys.executable, "-m", "launchers.ray_storage_probe", asked.uri])
            client.submit_job(entrypoint=line, submission_id=sid, runtime_env=self.runtime_env({}))
            deadline = time.monotonic() + self.settings.probe_timeout_s
            while not (info := client.get_job_info(sid)).status.is_terminal():
                if time.monotonic() > deadline:
                    client.stop_job(sid)
                    waited = self.settings.probe_timeout_s
                    return f"the probe job {sid} did not finish in {waited:g} s on {self.address}"
                time.sleep(0.5)
            if info.status.value == "SUCCEEDED" and asked.answered():
                return None
            why = self.probe_failure(info)
        return (
            f"hydra.sweep.dir={sweep_dir}: the Ray cluster at {self.address} does not reach the sweep directory's "
            f"storage ({target.as_uri()}; probe job {sid}): {why}; put it on storage the cluster's nodes mount at "
            "the same path (docs/RAY.md)"
        )

    def probe_failure(self, info: JobDetails) -> str:
        """Why the storage probe job did not answer, in a few words."""
        code = info.driver_exit_code
        if info.status.value == "SUCCEEDED":  # it answered into storage the sweeper does not read
            return "the probe job's answer is not in the storage the sweeper reads"
        if code in ray_storage_probe.REASONS:
            return ray_storage_probe.REASONS[code]
        if code is not None:  # e.g. the cluster's Python lacks the project: the log's last line says
            lines = self.log_tail_of(info.submission_id or "", 2000).strip().splitlines()
            return f"the probe job failed (exit code {code}): {lines[-1] if lines else 'no output'}"
        return f"the probe job ended {info.status.value}: {info.message}"

    def runtime_env(self, env: dict[str, str]) -> dict:
        """The user's runtime_env with the job's environment added. The job runs the sweeper's
        interpreter, whose installed rllm-sweeps (and the user's package) the cluster must have:
        docs/RAY.md, "What the cluster needs"."""
        given = dict(self.settings.runtime_env)
        given["env_vars"] = {**dict(given.get("env_vars", {})), **env}
        return given

    def submit(self, request: LaunchRequest) -> RayJobHandle:
        request.job_dir.mkdir(parents=True, exist_ok=True)
        sid = submission_id(request)
        # Recorded before Ray is asked: a sweeper killed in between finds it on reattach.
        event = Submitted(time=time.time(), scheduler_id=sid, generation=request.generation, ray_address=self.address)
        attempts.append_event(request.job_dir, event)
        self.client().submit_job(
            entrypoint=entrypoint(request, sid),
            submission_id=sid,
            runtime_env=self.runtime_env(request.env),
            metadata={"rllm_sweeps_job_dir": str(request.job_dir)},
            **entrypoint_resources(request.resources),
        )
        return RayJobHandle(sid, request.job_dir)

    def refresh(self, force: bool = False) -> None:
        """Every job's state, in one call to the job API, at most every poll_interval_s."""
        now = time.monotonic()
        if not force and now - self._last_poll < self.settings.poll_interval_s:
            return
        self._last_poll = now
        for info in self.client().list_jobs():
            if info.submission_id:
                self._states[info.submission_id] = info

    def poll(self, handle: RayJobHandle) -> PollStatus:
        self.refresh(force=handle.submission_id not in self._states)
        info = self._states.get(handle.submission_id)
        status, code = (info.status.value, info.driver_exit_code) if info is not None else ("PENDING", None)
        detail = f"{handle.submission_id} {status}"
        if status == "PENDING":
            return PollStatus(JobState.PENDING, detail=detail)
        if status == "RUNNING":
            return PollStatus(JobState.RUNNING, detail=detail)
        # Ended. No exit code: the entrypoint never ran or its node was lost (retried by the sweeper).
        failure = None if info is None or code is not None or status == "SUCCEEDED" else ended_without_code(info)
        log = "" if status == "SUCCEEDED" else self.log_tail(handle)
        return PollStatus(JobState.FINISHED, returncode=code, detail=detail, failure=failure, log=log)

    def log_tail(self, handle: RayJobHandle, size: int = 4000) -> str:
        """The end of Ray's log of the job (the wrapper's own output; the job's is in job.log)."""
        return self.log_tail_of(handle.submission_id, size)

    def log_tail_of(self, submission_id: str, size: int) -> str:
        try:
            return self.client().get_job_logs(submission_id)[-size:]
        except Exception:  # noqa: BLE001 (a log is a courtesy: the job's end is known without it)
            return ""

    def reattach(self, job_dirs: list[Path]) -> dict[Path, RayJobHandle]:
        """The Ray jobs an earlier sweeper submitted that still run or wait: the newest of each job
        adopted, any older live one stopped (never two live attempts)."""
        recorded = {d: [s.scheduler_id for s in attempts.submissions(d)] for d in job_dirs}
        if not any(recorded.values()):
            return {}
        self.refresh(force=True)
        adopted: dict[Path, RayJobHandle] = {}
        for job_dir, ids in recorded.items():
            live = [i for i in ids if i in self._states and self._states[i].status.value in ("PENDING", "RUNNING")]
            for stale in live[:-1]:
                self.client().stop_job(stale)
            if live:
                adopted[job_dir] = RayJobHandle(live[-1], job_dir)
        return adopted

    def cancel(self, handle: RayJobHandle) -> None:
        """Stop this Ray job (and nothing else on the cluster), waiting briefly for its end."""
        client = self.client()
        try:
            client.stop_job(handle.submission_id)
        except RuntimeError:  # never submitted (the sweeper was killed before Ray was asked)
            return
        deadline = time.monotonic() + STOP_WAIT_S
        while time.monotonic() < deadline and not client.get_job_status(handle.submission_id).is_terminal():
            time.sleep(0.5)
