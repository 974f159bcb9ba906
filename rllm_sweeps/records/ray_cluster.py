"""A job's Ray cluster, as its nodes record it in the job directory (runtime/job_ray.py writes them):

    ray.json            rank 0: the cluster (or that the job runs without Ray, and why), how to reach
                        it, its processes and sockets; the attempt marked over (`ended`)
    ray-worker-K.json   rank K > 0: its node, its processes and sockets

The directory is how the nodes of a job find each other: a worker joins the head that this
attempt's ray.json names (`token`: SLURM's job id and restart count), never an earlier attempt's.
Every process seen (`pids`) and every socket they listened on (`listening`) are recorded for the
teardown and port checks.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import field
from typing import ClassVar

from pydantic.dataclasses import dataclass as record

from rllm_sweeps.records.model import Migration, same_shape


@record(frozen=True, order=True)
class Listener:
    """One listening TCP socket of a process (runtime/listeners.py finds them)."""

    address: str  # as bound: 127.0.0.1, 0.0.0.0, ::, ::ffff:10.0.0.1, ...
    port: int
    process: str  # /proc/PID/comm of a process holding it

    @property
    def loopback_only(self) -> bool:
        ip = ipaddress.ip_address(self.address)
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return ip.is_loopback


@record(frozen=True)
class RayClusterRecord:
    """ray.json: the job's Ray cluster, written by rank 0 (and marked over when its attempt ends)."""

    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: same_shape}

    token: str | None  # the attempt ("JOBID.RESTARTS"; None outside SLURM)
    # True: Ray is up; False: the job runs without Ray (`why`); None: the attempt ended before its head started
    ray: bool | None = None
    why: str | None = None
    address: str | None = None  # the head's GCS address (RAY_ADDRESS)
    nodes: int = 1  # alive in the cluster
    node_addresses: tuple[str, ...] = ()
    ray_up_s: float | None = None  # head start until every node joined
    process_nodes: tuple[str, ...] = ()  # the node of each RayJaxBackend process, in bundle order
    pids: tuple[int, ...] = ()  # every process of the head node seen (rewritten after teardown)
    auth: str | None = None  # "token": Ray's token authentication (the token in ray-auth-token, never here)
    connect_env: dict[str, str] = field(default_factory=dict)  # what a client sets besides RAY_ADDRESS
    ports: dict[str, int] = field(default_factory=dict)  # the head's port block (runtime/ports.py's RayPorts)
    listening: tuple[Listener, ...] = ()
    ended: bool = False  # the attempt is over: its worker nodes leave
    schema_version: int = 1


@record(frozen=True)
class RayWorkerRecord:
    """ray-worker-K.json: rank K's Ray worker node."""

    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: same_shape}

    head: str  # the head's address it joined
    token: str | None  # the attempt it joined
    node_ip: str
    pids: tuple[int, ...] = ()  # every process of the node seen (rewritten after teardown)
    ports: dict[str, int] = field(default_factory=dict)
    listening: tuple[Listener, ...] = ()
    schema_version: int = 1


__all__ = ["Listener", "RayClusterRecord", "RayWorkerRecord"]
