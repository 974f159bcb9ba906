"""Jobs as SLURM jobs, through submitit (`hydra/launcher=slurm`).

Each job is `python train.py OVERRIDES` run by submitit inside its allocation, with the
resources derived from the job's own config (`resources.*`), so one sweep may mix job
sizes. The sweeper keeps `parallel` jobs in flight and hands the next one over as soon as
one ends; finished jobs are noticed from `sacct`, asked for all jobs at once and at most
every `poll_interval_s`.

Time limits and preemption: SLURM signals the job `signal_delay_s` before its limit;
submitit calls `checkpoint()`, which stops the training process (it saves a checkpoint on
SIGTERM) and asks submitit to requeue the same command, which then resumes from that
checkpoint, at most `max_requeues` times.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

import submitit

from launchers.base import JobState, JobStatus, LaunchRequest
from launchers.slurm_task import TrainCommand

# sacct states after which a job will not run again (submitit's names).
_ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE"}


@dataclass(frozen=True)
class SlurmSettings:
    """`hydra.launcher.*` for SLURM (conf/hydra/launcher/slurm.yaml, conf/cluster/*.yaml)."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    setup: list[str] = field(default_factory=list)  # shell lines run before the job (module load ...)
    env: dict[str, str] = field(default_factory=dict)  # for the client (SLURM_CONF) and the job
    max_requeues: int = 3
    signal_delay_s: int = 90
    poll_interval_s: float = 2.0


def _minutes(limit: str) -> int | None:
    """SLURM's time format ([days-]hours:minutes:seconds, minutes, "infinite") in minutes."""
    if limit in ("infinite", "UNLIMITED", "n/a"):
        return None
    days, _, clock = limit.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    hours, minutes, seconds = ([0] * (3 - len(parts)) + parts) if len(parts) > 1 else (0, parts[0], 0)
    return int(days or 0) * 1440 + hours * 60 + minutes + (1 if seconds else 0)


class SlurmLauncher:
    name = "slurm"

    def __init__(self, settings: SlurmSettings) -> None:
        self.settings = settings
        os.environ.update(settings.env)  # sbatch/sacct read SLURM_CONF from here
        self._last_poll = 0.0
        self._jobs: list[submitit.Job] = []

    def executor(self, request: LaunchRequest) -> submitit.AutoExecutor:
        res = request.resources
        s = self.settings
        executor = submitit.AutoExecutor(
            folder=request.job_dir / "slurm", cluster="slurm", slurm_max_num_timeout=s.max_requeues
        )
        extra = {k: v for k, v in (("account", s.account), ("qos", s.qos), ("constraint", s.constraint)) if v}
        gpus = int(res.get("gpus_per_node", 0) or 0)
        executor.update_parameters(
            name=f"rllm-{request.job_dir.name}",
            timeout_min=int(res.get("time_min", 60)),
            nodes=int(res.get("nodes", 1)),
            tasks_per_node=1,
            cpus_per_task=int(res.get("cpus_per_task", 1)),
            mem_gb=float(res.get("mem_gb", 4)),
            **({"gpus_per_node": gpus} if gpus else {}),
            slurm_partition=s.partition,
            slurm_setup=list(s.setup),
            slurm_signal_delay_s=s.signal_delay_s,
            slurm_additional_parameters=extra,
        )
        return executor

    def preflight(self, shapes: list[dict[str, Any]]) -> list[str]:
        """Ask SLURM (`sbatch --test-only`) whether each distinct job shape can ever run here:
        unknown partition, more GPUs than a node has, a time limit above the partition's."""
        problems = []
        for res in shapes:
            args = ["sbatch", "--test-only", "--wrap", "true", "--nodes", str(int(res.get("nodes", 1)))]
            args += [
                "--cpus-per-task",
                str(int(res.get("cpus_per_task", 1))),
                "--time",
                str(int(res.get("time_min", 60))),
            ]
            args += ["--mem", f"{int(float(res.get('mem_gb', 4)) * 1024)}M"]
            if int(res.get("gpus_per_node", 0) or 0):
                args += ["--gpus-per-node", str(int(res["gpus_per_node"]))]
            for flag, value in (("--partition", self.settings.partition), ("--account", self.settings.account)):
                if value:
                    args += [flag, value]
            for flag, value in (("--qos", self.settings.qos), ("--constraint", self.settings.constraint)):
                if value:
                    args += [flag, value]
            shape = ", ".join(f"{k}={v}" for k, v in sorted(res.items()))
            proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
            if proc.returncode != 0:
                reason = (proc.stderr.strip() or proc.stdout.strip() or "no reason given").splitlines()[-1]
                problems.append(f"SLURM rejects jobs with {shape} (partition={self.settings.partition}): {reason}")
                continue
            # Without EnforcePartLimits, SLURM accepts such a job and leaves it pending forever.
            limit = self.partition_time_limit_min()
            if limit is not None and int(res.get("time_min", 60)) > limit:
                problems.append(
                    f"SLURM would never start jobs with {shape}: resources.time_min={res.get('time_min')} is above "
                    f"the partition's time limit of {limit} minutes (partition={self.settings.partition})"
                )
        return problems

    def partition_time_limit_min(self) -> int | None:
        """MaxTime of the partition jobs go to (the default one if none is set), in minutes."""
        args = ["sinfo", "-h", "-o", "%P %l"] + (["-p", self.settings.partition] if self.settings.partition else [])
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
        for line in proc.stdout.splitlines():
            name, limit = line.split()
            if self.settings.partition or name.endswith("*"):
                return _minutes(limit)
        return None

    def submit(self, request: LaunchRequest) -> submitit.Job:
        request.job_dir.mkdir(parents=True, exist_ok=True)
        command = TrainCommand(request.argv, {**self.settings.env, **request.env}, request.job_dir / "job.log")
        job = self.executor(request).submit(command)
        self._jobs.append(job)
        return job

    def poll(self, job: submitit.Job) -> JobStatus:
        now = time.monotonic()
        if now - self._last_poll >= self.settings.poll_interval_s:
            self._last_poll = now
            job.watcher.update()  # one sacct call for every job of this watcher
        state = job.watcher.get_state(job.job_id, mode="standard")
        if state in _ENDED:
            return JobStatus(JobState.FINISHED, returncode=0 if state == "COMPLETED" else 1, detail=state)
        return JobStatus(JobState.PENDING if state == "PENDING" else JobState.RUNNING, detail=f"{job.job_id} {state}")

    def cancel(self, job: submitit.Job) -> None:
        job.cancel(check=False)
