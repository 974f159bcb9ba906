"""Jobs as Ray jobs on an existing Ray cluster, through Ray's Job Submission API
(`hydra/launcher=ray_cluster hydra.launcher.address=http://HEAD:8265`; docs/RAY.md).

Each planned job is one Ray job: its entrypoint is the job's own command (`python -m rllm_sweeps
OVERRIDES`, app_command.py), wrapped by launchers/ray_task.py for its attempt records; its entrypoint resources are
its resources.* (CPUs, GPUs, memory), so Ray places it on a node that has them. The job writes its
records into its job directory: on storage the cluster's nodes see at the same path (a shared file
system; hydra.sweep.dir a path or a pyarrow.fs file:// URI, sweep/storage.py), or on an object store
(an s3:// or other pyarrow.fs URI), through a staging directory on its node that it syncs with the
store while the sweeper syncs its mirror (records/store.py). The dry run and the run check that the
cluster reaches the storage with one probe job first (launchers/ray_storage_probe.py).

The submission id is chosen here and recorded in attempts.jsonl *before* Ray is asked, so a sweeper
killed at any moment and rerun finds every Ray job it may have submitted (`reattach`) and submits
no duplicate. Ray's token authentication: launchers/ray_auth.py.
"""

from __future__ import annotations

import contextlib
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
from launchers.ray_task import NOT_SENT
from rllm_sweeps.problems import first_line
from rllm_sweeps.records import attempts
from rllm_sweeps.records.attempt_events import Submitted
from rllm_sweeps.records.resources import Resources
from rllm_sweeps.records.store import CHECKPOINTS, STORE_TRIES, StoreSync, child_uri, patiently

if TYPE_CHECKING:  # ray is imported lazily: a sweep on SLURM needs none of it
    from ray.job_submission import JobDetails

STOP_WAIT_S = 60  # for a stopped job's training process to reach a step boundary and save


@dataclass
class RayJobHandle:
    submission_id: str  # Ray's job id, as the sweep chose and recorded it
    job_dir: Path
    pulled: float = 0.0  # when its records were last fetched from the object store (time.monotonic)


def submission_id(request: LaunchRequest) -> str:
    """Unique per attempt, readable in `ray job list`: the sweep's and the job's directory names."""
    sweep = request.job_dir.parent.parent.name
    return f"{attempts.RAY_ID_PREFIX}{sweep}-{request.job_dir.name}-g{request.generation}-{uuid.uuid4().hex[:8]}"


def entrypoint(request: LaunchRequest, sid: str, store: list[str] | None = None) -> str:
    """The job's own command, inside its attempt-recording wrapper (`store`: its options for a job
    directory on an object store), as one shell line."""
    wrapper = [sys.executable, "-m", "launchers.ray_task", str(request.job_dir), str(request.generation), sid]
    return shlex.join([*wrapper, *(store or []), "--", *request.argv])


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
    flags_label = "Ray job"

    def __init__(self, settings: RayClusterSettings) -> None:
        assert settings.address, "launchers/choice.py refuses a ray_cluster launcher without an address"
        self.settings = settings
        self.address: str = settings.address
        self._client = None
        self._states: dict[str, JobDetails] = {}  # submission id -> what the job API said last
        self._last_poll = 0.0
        self.store: StoreSync | None = None  # the sweep's object store, where it is on one

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
            first = first_line(err)
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

    def use_store(self, store: StoreSync) -> str | None:
        """A job stages its directory on its node and syncs it with the store (launchers/ray_task.py)."""
        self.store = store
        return None

    def storage_problem(self, sweep_dir: Path) -> str | None:
        """One probe job: does a job on the cluster see, and may it write, the storage the sweep's
        records go to? Asked through pyarrow.fs in the sweep's object store, or the nearest directory
        of the sweep's that exists (a dry run creates no directory; the probe's two files are
        removed): launchers/ray_storage_probe.py."""
        if self.store is not None:
            target_uri, fix = self.store.uri, "give the cluster's nodes the store's address and credentials"
        else:
            target_uri = next(p for p in [sweep_dir, *sweep_dir.parents] if p.exists()).as_uri()
            fix = "put it on storage the cluster's nodes mount at the same path"
        client = self.client()
        with ray_storage_probe.question(target_uri) as asked:
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
        given = self.store.uri if self.store is not None else sweep_dir
        return (
            f"hydra.sweep.dir={given}: the Ray cluster at {self.address} does not reach the sweep directory's "
            f"storage ({target_uri}; probe job {sid}): {why}; {fix} (docs/RAY.md)"
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
        store_options = None
        if self.store is not None:  # the job starts from the store: everything the sweeper wrote goes first
            relative = self.relative(request.job_dir)
            store = self.store
            patiently(lambda: store.push(relative), f"send {relative} to {store.uri}", tries=STORE_TRIES)
            every = f"{self.settings.sync_interval_s:g}"
            store_options = ["--store", child_uri(self.store.uri, relative), "--sync-every", every]
        self.client().submit_job(
            entrypoint=entrypoint(request, sid, store_options),
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

    def relative(self, job_dir: Path) -> str:
        """A job directory's path in the sweep's object store (relative to the mirror's root)."""
        assert self.store is not None
        return job_dir.relative_to(self.store.local).as_posix()

    def pull(self, handle: RayJobHandle, *, ended: bool) -> None:
        """A job's records from the object store into the mirror (never its checkpoints): while it runs
        at most every sync_interval_s, and once more when it has ended."""
        if self.store is None or not (ended or time.monotonic() - handle.pulled >= self.settings.sync_interval_s):
            return
        handle.pulled = time.monotonic()
        store, relative = self.store, self.relative(handle.job_dir)
        what = f"fetch {relative}'s records from {store.uri}"
        # A store that does not answer now: a running job's records are fetched next time; an ended one's
        # are tried again before the sweeper reads them (and finds what it has, where it still cannot).
        records = frozenset({CHECKPOINTS})
        with contextlib.suppress(OSError):
            patiently(lambda: store.pull(relative, skip=records), what, tries=STORE_TRIES if ended else 1)

    def poll(self, handle: RayJobHandle) -> PollStatus:
        self.refresh(force=handle.submission_id not in self._states)
        info = self._states.get(handle.submission_id)
        status, code = (info.status.value, info.driver_exit_code) if info is not None else ("PENDING", None)
        detail = f"{handle.submission_id} {status}"
        if status == "PENDING":
            return PollStatus(JobState.PENDING, detail=detail)
        if status == "RUNNING":
            self.pull(handle, ended=False)
            return PollStatus(JobState.RUNNING, detail=detail)
        self.pull(handle, ended=True)
        # Ended. No exit code: the entrypoint never ran or its node was lost (retried by the sweeper).
        failure = None if info is None or code is not None or status == "SUCCEEDED" else ended_without_code(info)
        if self.store is not None and code == NOT_SENT:
            failure = f"the job could not send its records to {self.store.uri} (Ray's log of {handle.submission_id})"
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
            stopped = client.stop_job(handle.submission_id)  # False: it had ended (its records fetched by poll)
        except RuntimeError:  # never submitted (the sweeper was killed before Ray was asked)
            return
        deadline = time.monotonic() + STOP_WAIT_S
        while time.monotonic() < deadline and not client.get_job_status(handle.submission_id).is_terminal():
            time.sleep(0.5)
        if stopped:
            self.pull(handle, ended=True)  # what it wrote as it stopped (its last checkpoint's records)
