"""Jobs as SLURM jobs, through submitit (`hydra/launcher=slurm`).

Each job is `python -m rllm_sweeps OVERRIDES` (the training app) run by submitit inside its
allocation, with the resources derived from the job's own config (`resources.*`), so one sweep may mix job
sizes. A sweep whose jobs are all known up front (grid, random) is queued at once as SLURM
arrays, one per resource shape, throttled to `parallel` (`submit_array`); a search that
decides as results arrive (Optuna) submits one job at a time (`submit`). Submissions are
paced. Finished jobs are noticed from `sacct`, asked for all jobs at once and at most every
`poll_interval_s`; node failures and out-of-memory kills are reported as infrastructure
failures, which the sweeper retries.

Time limits and preemption: SLURM signals the job `signal_delay_s` before its limit;
submitit calls `checkpoint()`, which stops the training process (it saves a checkpoint on
SIGTERM) and asks submitit to requeue the same command, which then resumes from that
checkpoint, at most `max_requeues` times.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import submitit

from launchers.base import JobState, Launcher, LaunchRequest, PollStatus
from launchers.slurm_settings import SlurmSettings
from launchers.slurm_states import REQUEUE_MAY_FOLLOW, JobWatch, base_state, classify_end, is_live
from launchers.slurm_task import TrainCommand
from launchers.slurm_times import SACCT_ENV, SACCT_FIELDS, missing_ends, parse_runs
from launchers.submitit_private import sbatch_script, slurm_executor_anywhere
from rllm_sweeps.records import attempts
from rllm_sweeps.records.attempt_events import Started, Submitted
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.resources import FIELDS as RESOURCE_FIELDS
from rllm_sweeps.records.resources import Resources

SlurmHandle = submitit.Job[int]  # the handle: submitit's job of a TrainCommand, which returns its exit code


def record_submission(request: LaunchRequest, job: SlurmHandle) -> None:
    """Every SLURM job id the sweep ever submitted for a job, with submitit's folder: a rerun of
    the sweep finds the ones still live and reattaches instead of submitting again."""
    folder = str(job.paths.folder)
    event = Submitted(time=time.time(), scheduler_id=job.job_id, folder=folder, generation=request.generation)
    attempts.append_event(request.job_dir, event)


def _minutes(limit: str) -> int | None:
    """SLURM's time format ([days-]hours:minutes:seconds, minutes, "infinite") in minutes."""
    if limit in ("infinite", "UNLIMITED", "n/a"):
        return None
    days, _, clock = limit.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    hours, minutes, seconds = ([0] * (3 - len(parts)) + parts) if len(parts) > 1 else (0, parts[0], 0)
    return int(days or 0) * 1440 + hours * 60 + minutes + (1 if seconds else 0)


class SlurmLauncher(Launcher[SlurmHandle]):
    name = "slurm"
    flags_label = "sbatch"
    queues_arrays = True

    def __init__(self, settings: SlurmSettings) -> None:
        self.settings = settings
        os.environ.update(settings.env)  # sbatch/sacct read SLURM_CONF from here
        self._last_poll = 0.0
        self._last_submit = 0.0
        self._watches: dict[str, JobWatch] = {}  # job id -> its states as polled (slurm_states.JobWatch)
        self._job_dirs: dict[str, Path] = {}  # job id -> the job's directory (its attempt records)

    def executor(
        self,
        request: LaunchRequest,
        folder: Path | None = None,
        name: str | None = None,
        after: str | None = None,
        render_only: bool = False,
    ) -> submitit.AutoExecutor:
        """An executor sized from the job's resources (folder: where submitit keeps its files;
        after: a SLURM job id this submission waits for; render_only: for its flags, also where
        SLURM is not installed)."""
        res = request.resources
        s = self.settings
        folder = folder or JobPaths(request.job_dir).slurm
        if render_only:
            executor = slurm_executor_anywhere(folder, s.max_requeues)
        else:
            executor = submitit.AutoExecutor(folder=folder, cluster="slurm", slurm_max_num_timeout=s.max_requeues)
        extra = dict(s.additional_parameters)
        extra.update({k: v for k, v in (("account", s.account), ("qos", s.qos), ("constraint", s.constraint)) if v})
        if after:
            extra["dependency"] = f"afterany:{after}"
        gpus = res.gpus_per_node
        executor.update_parameters(
            name=name or f"rllm-{request.job_dir.name}",
            timeout_min=int(res.time_min),
            nodes=int(res.nodes),
            tasks_per_node=1,
            cpus_per_task=int(res.cpus_per_task),
            mem_gb=float(res.mem_gb),
            **({"gpus_per_node": gpus} if gpus else {}),
            slurm_partition=s.partition,
            slurm_setup=list(s.setup),
            slurm_signal_delay_s=s.signal_delay_s,
            slurm_additional_parameters=extra,
        )
        return executor

    def preflight(self, shapes: list[Resources]) -> list[str]:
        """Ask SLURM (`sbatch --test-only`) whether each distinct job shape can ever run here:
        unknown partition, more GPUs than a node has, a time limit above the partition's."""
        problems = []
        for res in shapes:
            args = ["sbatch", "--test-only", *self.sbatch_flags(res), "--wrap", "true"]
            shape = ", ".join(f"{k}={getattr(res, k)}" for k in sorted(RESOURCE_FIELDS))
            try:
                proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
            except OSError as err:  # no SLURM client here (a dry run on a laptop)
                return [f"cannot ask SLURM whether it would run these jobs: {err} (run this on a SLURM login node)"]
            if proc.returncode != 0:
                reason = (proc.stderr.strip() or proc.stdout.strip() or "no reason given").splitlines()[-1]
                problems.append(f"SLURM rejects jobs with {shape} (partition={self.settings.partition}): {reason}")
                continue
            # Without EnforcePartLimits, SLURM accepts such a job and leaves it pending forever.
            limit = self.partition_time_limit_min()
            if limit is not None and res.time_min > limit:
                problems.append(
                    f"SLURM would never start jobs with {shape}: resources.time_min={res.time_min} is above "
                    f"the partition's time limit of {limit} minutes (partition={self.settings.partition})"
                )
        return problems

    def sbatch_flags(self, resources: Resources) -> list[str]:
        """The `#SBATCH` flags submitit writes for a job of these resources (one mapping of
        resources to flags: the executor's, for the submission and its preflight alike)."""
        probe = LaunchRequest(index=0, job_dir=Path("/nonexistent/jobs/preflight"), argv=[], resources=resources)
        # submitit renders its batch script without writing anything (its folder is not created).
        script = sbatch_script(self.executor(probe, render_only=True), "true")
        skip = ("--output", "--error", "--open-mode", "--job-name", "--signal", "--wckey")
        flags = [line.removeprefix("#SBATCH ").strip() for line in script.splitlines() if line.startswith("#SBATCH ")]
        return [f for f in flags if not f.startswith(skip)]

    def flags(self, resources: Resources) -> list[str]:
        return self.sbatch_flags(resources)

    def unavailable(self) -> str | None:
        """Why SLURM cannot be asked from here: no client, its configuration missing, its controller
        not answering (the local cluster not up)."""
        local = "for cluster=local, bring the local cluster up first: make slurm-up"
        if shutil.which("sbatch") is None:
            return f"no SLURM client here (sbatch is not on PATH): run this on a SLURM login node; {local}"
        conf = os.environ.get("SLURM_CONF")
        if conf and not Path(conf).is_file():
            return f"SLURM's configuration SLURM_CONF={conf} does not exist; {local}"
        try:
            proc = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as err:
            return f"the SLURM controller does not answer (scontrol ping: {err}); {local}"
        # "Slurmctld(primary) at HOST is DOWN" comes first, then a banner of asterisks.
        said = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip(" *")]
        answer = said[0].strip() if said else "no answer"
        if proc.returncode != 0 or "DOWN" in proc.stdout:
            return f"the SLURM controller does not answer (scontrol ping: {answer}); {local}"
        return None

    def partition_time_limit_min(self) -> int | None:
        """MaxTime of the partition jobs go to (the default one if none is set), in minutes."""
        args = ["sinfo", "-h", "-o", "%P %l"] + (["-p", self.settings.partition] if self.settings.partition else [])
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
        for line in proc.stdout.splitlines():
            name, limit = line.split()
            if self.settings.partition or name.endswith("*"):
                return _minutes(limit)
        return None

    def command(self, request: LaunchRequest) -> TrainCommand:
        request.job_dir.mkdir(parents=True, exist_ok=True)
        env = {**self.settings.env, **request.env}
        return TrainCommand(request.argv, env, JobPaths(request.job_dir).log, request.generation)

    def submit(self, request: LaunchRequest) -> SlurmHandle:
        command = self.command(request)
        self.pace()
        job = self.executor(request).submit(command)
        record_submission(request, job)
        self._job_dirs[job.job_id] = request.job_dir
        return job

    def submit_array(self, requests: list[LaunchRequest], parallel: int) -> list[SlurmHandle]:
        """Every job at once, as SLURM arrays: one per resource shape, split at MaxArraySize,
        each throttled to `parallel` tasks (`--array=0-N%parallel`). Arrays after the first wait
        for the one before (`afterany`), so that at most `parallel` jobs run in all."""
        limit = min(self.settings.max_array_size or sys.maxsize, self.cluster_max_array_size())
        shapes: dict[Resources, list[LaunchRequest]] = {}
        for request in requests:
            shapes.setdefault(request.resources, []).append(request)
        chunks = [group[i : i + limit] for group in shapes.values() for i in range(0, len(group), limit)]
        jobs: dict[int, SlurmHandle] = {}
        previous: str | None = None
        for chunk in chunks:
            sweep = JobPaths(chunk[0].job_dir).sweep  # one folder for the sweep's arrays
            executor = self.executor(chunk[0], folder=sweep.slurm, name=f"rllm-{sweep.root.name}", after=previous)
            executor.update_parameters(slurm_array_parallelism=parallel)
            commands = [self.command(r) for r in chunk]
            self.pace()
            with executor.batch():
                submitted = [executor.submit(c) for c in commands]
            for request, job in zip(chunk, submitted, strict=True):
                record_submission(request, job)
                self._job_dirs[job.job_id] = request.job_dir
                jobs[request.index] = job
            previous = submitted[0].job_id.split("_")[0]
        return [jobs[r.index] for r in requests]

    def pace(self) -> None:
        """Submissions at least `submit_interval_s` apart: a large sweep must not flood slurmctld."""
        wait = self._last_submit + self.settings.submit_interval_s - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self._last_submit = time.monotonic()

    def cluster_max_array_size(self) -> int:
        """Tasks an array may have here (MaxArraySize: indices 0..MaxArraySize-1)."""
        proc = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=60)
        for line in proc.stdout.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "MaxArraySize" and value.strip().isdigit():
                return max(1, int(value.strip()))
        return 1001  # SLURM's default

    def poll(self, job: SlurmHandle) -> PollStatus:
        now = time.monotonic()
        if now - self._last_poll >= self.settings.poll_interval_s:
            self._last_poll = now
            job.watcher.update()  # one sacct call for every job of this watcher
        state = base_state(job.watcher.get_state(job.job_id, mode="standard"))
        watch = self._watches.setdefault(job.job_id, JobWatch(self.settings.requeue_grace_s))
        ended = watch.observe(state, now, lambda: self.last_ended_state(job.job_id))
        if ended is None:
            pending = JobState.PENDING if state == "PENDING" else JobState.RUNNING
            return PollStatus(pending, detail=f"{job.job_id} {state}")
        final, requeued = ended
        if (job_dir := self._job_dirs.get(job.job_id)) is not None:
            self.record_missing_ends({job_dir: [job.job_id]})
        log = self.log_tail(job) if final != "COMPLETED" else ""
        end = classify_end(final, log, started=self.process_started(job.job_id))
        failure = f"{end.failure}, requeued by SLURM" if requeued and end.failure else end.failure
        return PollStatus(
            JobState.FINISHED, returncode=end.returncode, detail=end.reason, failure=failure, log=log, kind=end.kind
        )

    def log_tail(self, job: SlurmHandle, size: int = 4000) -> str:
        """The end of the job's SLURM log (submitit's stderr file: srun's and slurmstepd's errors)."""
        try:
            return job.paths.stderr.read_text(errors="replace")[-size:]
        except OSError:
            return ""

    def process_started(self, job_id: str) -> bool:
        job_dir = self._job_dirs.get(job_id)
        events = attempts.read_events(job_dir) if job_dir else []
        return any(isinstance(e, Started) and e.scheduler_id == job_id for e in events)

    def reattach(self, job_dirs: list[Path]) -> dict[Path, SlurmHandle]:
        """The jobs an earlier sweeper submitted that SLURM still runs or holds (one sacct call): the
        newest of each job is adopted, any older live one cancelled (never two live attempts)."""
        found: dict[Path, list[SlurmHandle]] = {}
        for job_dir in job_dirs:
            for sub in attempts.submissions(job_dir):
                folder = Path(sub.folder) if sub.folder else JobPaths(job_dir).slurm
                found.setdefault(job_dir, []).append(submitit.SlurmJob(folder=folder, job_id=sub.scheduler_id))
        if not found:
            return {}
        # Attempts of jobs that ended while no sweeper watched, whose wrapper was killed: their ends.
        self.record_missing_ends({d: [j.job_id for j in jobs] for d, jobs in found.items()})
        next(iter(found.values()))[0].watcher.update()
        adopted: dict[Path, SlurmHandle] = {}
        for job_dir, jobs in found.items():
            live = [j for j in jobs if is_live(j.watcher.get_state(j.job_id, mode="cache"))]
            for stale in live[:-1]:
                stale.cancel(check=False)
            if live:
                adopted[job_dir] = live[-1]
                self._job_dirs[live[-1].job_id] = job_dir
        return adopted

    def record_missing_ends(self, job_ids: dict[Path, list[str]]) -> None:
        """Each attempt of these SLURM jobs with a start but no end (its wrapper was killed) gets the
        End of its run as sacct reports it (one sacct call; launchers/slurm_times.py)."""
        unended = {
            (d, str(a.scheduler_id))
            for d, ids in job_ids.items()
            for a in attempts.read_attempts(d)
            if a.ended_at is None and str(a.scheduler_id) in ids
        }
        if not unended:
            return
        ids = ",".join(sorted({sid for _, sid in unended}))
        args = ["sacct", "--duplicates", "--allocations", "--noheader", "--parsable2", "-o", SACCT_FIELDS, "-j", ids]
        try:
            proc = subprocess.run(args, capture_output=True, text=True, timeout=60, env={**os.environ, **SACCT_ENV})
        except (OSError, subprocess.TimeoutExpired):
            return  # asked again the next time the sweeper looks
        runs = parse_runs(proc.stdout)
        for job_dir, sid in sorted(unended):
            for end in missing_ends(attempts.read_events(job_dir), sid, runs):
                attempts.record_end(
                    job_dir, sid, None, end.generation, end.restart_count, time_s=end.time, source="sacct"
                )

    def last_ended_state(self, job_id: str) -> str | None:
        """How the job's latest finished incarnation ended (sacct keeps one record per requeue)."""
        args = ["sacct", "--duplicates", "--allocations", "--noheader", "--parsable2", "-o", "State", "-j", job_id]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
        states = [base_state(line) for line in proc.stdout.splitlines() if line.strip()]
        ended = [s for s in states if not is_live(s) or s in REQUEUE_MAY_FOLLOW]
        return ended[-1] if ended else None

    def cancel(self, job: SlurmHandle) -> None:
        job.cancel(check=False)
