"""What a SLURM job's environment says about this node: its CPUs/GPUs, the allocation's hosts,
and which attempt of the job this is."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

from rllm_sweeps.runtime.errors import RayClusterError


def _gpu_count(value: str) -> int | None:
    """'2', 'a100:2', 'gpu:a100:2', 'a100:2,v100:1' -> total count."""
    total = 0
    try:
        for part in value.split(","):
            total += int(part.rsplit(":", 1)[-1])
    except ValueError:
        return None
    return total


def slurm_node_resources(environ: Mapping[str, str] | None = None) -> tuple[int, int]:
    """(num_cpus, num_gpus) for this node from SLURM_CPUS_ON_NODE and
    SLURM_GPUS_ON_NODE (falling back to SLURM_GPUS_PER_NODE); outside SLURM,
    the CPUs this process may run on and 0 GPUs."""
    environ = os.environ if environ is None else environ
    cpus_s = environ.get("SLURM_CPUS_ON_NODE")
    cpus = int(cpus_s) if cpus_s and cpus_s.isdigit() else len(os.sched_getaffinity(0))
    gpus = None
    for key in ("SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE"):
        if environ.get(key):
            gpus = _gpu_count(environ[key])
            if gpus is not None:
                break
    return cpus, gpus or 0


def slurm_head_host() -> tuple[str, str]:
    """(hostname, IP) of the allocation's first node (SLURM_JOB_NODELIST, read by submitit),
    where the head runs."""
    from submitit.slurm.slurm import SlurmJobEnvironment

    host = SlurmJobEnvironment().hostnames[0]
    try:
        ip = socket.gethostbyname(host)
    except OSError as e:
        raise RayClusterError(f"cannot resolve head host {host!r}: {e}") from e
    return host, ip


def attempt_token() -> str | None:
    """This attempt of this SLURM job ("JOBID.RESTARTS"; None outside SLURM): a ``ray.json``
    carrying another token belongs to an earlier job or attempt."""
    job = os.environ.get("SLURM_JOB_ID")
    if job is None:
        return None
    return f"{job}.{os.environ.get('SLURM_RESTART_COUNT', '0')}"
