"""A job's Ray cluster on every node of its allocation.

One node (a local run, a 1-node SLURM job): a Ray head on this machine, nothing else.
N nodes (``SLURM_JOB_NUM_NODES=N``): every node runs the same ``python -m rllm_sweeps ...``
(submitit starts it once per node) and the job decides by its rank (``node_role.py``):

    rank 0: trains; :func:`job_ray_cluster`: the Ray head, bound to the first node's address;
            ``ray.json`` (address + attempt token) in the job directory; wait until N nodes are
            alive; ``RAY_ADDRESS``; train; stop the head; the attempt marked over in ``ray.json``
            (:func:`mark_attempt_over`, also when the job failed before its head was up).
    rank k: :func:`run_worker`: wait for this attempt's ``ray.json``, join with SLURM's
            CPUs/GPUs, leave when the head's GCS stops answering or the attempt is over (marked in
            ``ray.json``, or its end recorded in ``attempts.jsonl`` by the SLURM task, which
            covers a rank 0 killed outright), and stop exactly this node's Ray processes.

The job directory is on a filesystem every node sees (submitit relies on that too), so
``ray.json`` is how the nodes find each other. Its token (SLURM job id + restart count) keeps
a worker from joining the head of an earlier attempt after a requeue.

Only the job may talk to its cluster: rank 0 writes a fresh Ray auth token for each attempt,
before its head starts, to ``ray-auth-token`` in the job directory (mode 0600, ``auth.py``); the
head, the worker nodes (which read it once this attempt's ``ray.json`` names the head), every
process Ray starts for them, and this process as the driver (SkyRL's ``ray.init``, RayJaxBackend)
run with ``RAY_AUTH_MODE=token`` and that file's path; the token itself is never printed, put on
a command line or recorded. A cluster of one node is kept on loopback (``ray_env.py``).

A job whose backend uses no Ray (SkyRL's single-process ``JaxBackend`` on one node) starts none:
:func:`no_ray` writes ``ray.json`` with ``ray: false``, no address and no processes, so the
records, teardown checks and ``status`` read the same file either way.

``ray.json`` (rank 0) and ``ray-worker-K.json`` (rank K) are records: records/ray_cluster.py
(``RayClusterRecord``, ``RayWorkerRecord``) says what each field holds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rllm_sweeps.records.attempts import attempt_ended
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.model import RecordError, read_record, write_record
from rllm_sweeps.records.ray_cluster import Listener, RayClusterRecord, RayWorkerRecord
from rllm_sweeps.runtime.auth import AUTH_VARS, RayAuth
from rllm_sweeps.runtime.errors import RayClusterError
from rllm_sweeps.runtime.gcs import NodeInfo, disconnect_driver, tcp_reachable, wait_for_nodes
from rllm_sweeps.runtime.nodes import RayNode, client_env, start_head_node, start_worker_node
from rllm_sweeps.runtime.ray_env import this_process_env
from rllm_sweeps.runtime.signals import sigterm_raises
from rllm_sweeps.runtime.slurm_env import attempt_token, slurm_head_host, slurm_node_resources
from rllm_sweeps.runtime.spec import RayClusterSpec

RAY_FILE = "ray.json"
JOIN_TIMEOUT_S = 300.0  # worker nodes start in parallel with the head; SLURM may start them late
LEAVE_AFTER_MISSES = 3  # consecutive unanswered GCS probes before a worker node leaves
SNAPSHOT_EVERY_S = 5.0  # a /proc scan: cheap, but not for every probe on a busy node


@dataclasses.dataclass
class JobRay:
    """The Ray cluster a job trains on, and its record (ray.json)."""

    address: str | None  # None: the job runs without Ray
    nodes: list[NodeInfo]
    ray_up_s: float
    path: Path
    record: RayClusterRecord

    @property
    def node_count(self) -> int:
        return len(self.nodes) if self.address is not None else 1

    def update(self, **fields: Any) -> None:
        """ray.json with ``fields`` (RayClusterRecord's) changed."""
        self.record = dataclasses.replace(self.record, **fields)
        write_record(self.path, self.record)

    def placement_nodes(self, placement_group: Any) -> list[str]:
        """Address of the node holding each bundle of ``placement_group``, in bundle order
        (needs this process connected as a Ray driver)."""
        from ray.util.placement_group import placement_group_table

        where = placement_group_table(placement_group)["bundles_to_node_id"]
        address = {n.node_id: n.address for n in self.nodes}
        return [address.get(where[i], where[i]) for i in sorted(where)]


def worker_file(job_dir: Path, rank: int) -> Path:
    return Path(job_dir) / f"ray-worker-{rank}.json"


@contextlib.contextmanager
def job_ray_cluster(
    job_dir: Path, num_cpus: int, num_gpus: int, nodes: int, join_timeout_s: float = JOIN_TIMEOUT_S
) -> Iterator[JobRay]:
    """Bring up the job's Ray head, wait for ``nodes`` nodes, export RAY_ADDRESS; on exit
    disconnect this process's driver and stop exactly the head's processes."""
    started = time.monotonic()
    # Several nodes: bind to the address the other nodes reach this one at, not loopback.
    head_ip = slurm_head_host()[1] if nodes > 1 else None
    # This attempt's token, before anything listens (the worker nodes read it once ray.json names the head).
    auth = RayAuth.fresh(JobPaths(job_dir).ray_auth_token)
    spec = RayClusterSpec(num_cpus=num_cpus, num_gpus=num_gpus, auth=auth)
    # This process is the cluster's driver (the GCS queries below, SkyRL's ray.init): the same token.
    connect_env = client_env(spec, head_ip, head=True)
    with this_process_env(connect_env, drop=AUTH_VARS):
        with _head_cluster(job_dir, spec, head_ip, nodes, join_timeout_s, started, connect_env) as cluster:
            yield cluster


@contextlib.contextmanager
def _head_cluster(
    job_dir: Path,
    spec: RayClusterSpec,
    head_ip: str | None,
    nodes: int,
    join_timeout_s: float,
    started: float,
    connect_env: dict[str, str],
) -> Iterator[JobRay]:
    head = start_head_node(spec, node_ip=head_ip)
    assert head.address is not None
    first = RayClusterRecord(
        token=attempt_token(),
        ray=True,
        address=head.address,
        auth="token",
        connect_env=connect_env,
        ports=dataclasses.asdict(head.ports),
    )
    cluster = JobRay(head.address, [], 0.0, Path(job_dir) / RAY_FILE, first)
    saved_address = os.environ.get("RAY_ADDRESS")
    try:
        cluster.update(pids=head.pids(), listening=_listening(head))  # the worker nodes' cue to join
        alive = _wait_for_workers(head, nodes, join_timeout_s)
        cluster.nodes, cluster.ray_up_s = alive, round(time.monotonic() - started, 3)
        cluster.update(
            nodes=len(alive),
            node_addresses=sorted(n.address for n in alive),
            ray_up_s=cluster.ray_up_s,
            pids=head.pids(),
            listening=_listening(head),
        )
        os.environ["RAY_ADDRESS"] = head.address
        yield cluster
    finally:
        if saved_address is None:
            os.environ.pop("RAY_ADDRESS", None)
        else:
            os.environ["RAY_ADDRESS"] = saved_address
        head.snapshot()  # while the JAX processes still run, so the record covers them
        disconnect_driver(head.address)
        try:
            head.stop()
        finally:
            # every process ever seen, to check teardown
            cluster.update(pids=sorted(head.recorded), listening=_listening(head))


def _listening(node: RayNode) -> tuple[Listener, ...]:
    """Every socket the node's processes were seen listening on, for its record."""
    return tuple(sorted(node.listeners))


@contextlib.contextmanager
def no_ray(job_dir: Path, why: str) -> Iterator[JobRay]:
    """The record of a job that needs no Ray (``why``): ``ray.json`` says so, with no processes."""
    path = Path(job_dir) / RAY_FILE
    record = RayClusterRecord(token=attempt_token(), ray=False, why=why)
    write_record(path, record)
    yield JobRay(None, [], 0.0, path, record)


def _wait_for_workers(head: RayNode, nodes: int, timeout: float) -> list[NodeInfo]:
    assert head.address is not None and head.proc is not None
    proc = head.proc

    def head_died() -> str | None:
        return None if proc.poll() is None else f"the Ray head exited (code {proc.returncode}); log: {head.log_path}"

    try:
        return wait_for_nodes(head.address, nodes, timeout=timeout, abort=head_died)
    except RayClusterError as err:
        raise RayClusterError(
            f"{err}. Worker nodes join from the other nodes of this SLURM job (the same train.py "
            f"command, rank > 0); see node-*.log in the job directory."
        ) from None


def mark_attempt_over(job_dir: Path) -> None:
    """Rank 0's training process has ended: this attempt's worker nodes leave, including any
    still waiting to join (e.g. when train.py failed before starting the head)."""
    token = attempt_token()
    path = Path(job_dir) / RAY_FILE
    write_record(path, dataclasses.replace(_read_record(path, token) or RayClusterRecord(token=token), ended=True))


def _attempt_over(path: Path, token: str | None) -> bool:
    """Rank 0 marked this attempt over, or the SLURM task recorded its end (rank 0 was killed)."""
    record = _read_record(path, token)
    if record is not None and record.ended:
        return True
    if token is None:  # outside SLURM
        return False
    from submitit.slurm.slurm import SlurmJobEnvironment

    # The task records the attempt under submitit's job id (an array task's is ARRAY_TASK).
    restarts = int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)
    return attempt_ended(path.parent, SlurmJobEnvironment().job_id, restarts)


def _read_record(path: Path, token: str | None) -> RayClusterRecord | None:
    """This attempt's ray.json, or None (none yet, or an earlier attempt's)."""
    try:
        record = read_record(RayClusterRecord, path)
    except (OSError, RecordError):
        return None
    return record if record.token == token else None


def _head_address(record: RayClusterRecord | None) -> str | None:
    return None if record is None else record.address


def ip_towards(address: str) -> str:
    """This machine's address on the route to ``address`` (what the head reaches us at)."""
    host, _, port = address.rpartition(":")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((host, int(port)))  # UDP connect only picks the route; nothing is sent
        return s.getsockname()[0]


def run_worker(job_dir: Path, rank: int, join_timeout_s: float = JOIN_TIMEOUT_S, poll_s: float = 0.5) -> int:
    """Run this node's Ray worker for the current attempt until the head is gone (rank > 0)."""
    token = attempt_token()
    path = Path(job_dir) / RAY_FILE
    with sigterm_raises():  # scancel / a time limit: the `finally` below still stops the node
        deadline = time.monotonic() + join_timeout_s
        head = _head_address(_read_record(path, token))
        while not (head or _attempt_over(path, token)):
            if time.monotonic() > deadline:
                raise RayClusterError(f"no Ray head address for attempt {token} in {path} after {join_timeout_s:.0f}s")
            time.sleep(0.2)
            head = _head_address(_read_record(path, token))
        if not head:
            print(f"rank {rank}: attempt {token} ended before its Ray head started", flush=True)
            return 0
        cpus, gpus = slurm_node_resources()
        node_ip = ip_towards(head)
        spec = RayClusterSpec(num_cpus=cpus, num_gpus=gpus, auth=RayAuth.existing(JobPaths(job_dir).ray_auth_token))
        # This process queries the GCS while the node joins: with the cluster's token too.
        with this_process_env(client_env(spec, node_ip, head=False), drop=AUTH_VARS):
            node = start_worker_node(head, spec, node_ip=node_ip)
            mine = RayWorkerRecord(head, token, node_ip, node.pids(), dataclasses.asdict(node.ports), _listening(node))
            try:
                write_record(worker_file(job_dir, rank), mine)
                print(f"rank {rank}: Ray worker {node_ip} joined {head} ({cpus} CPUs, {gpus} GPUs)", flush=True)
                print(f"rank {rank}: leaving: {_wait_until_over(node, head, path, token, poll_s)}", flush=True)
            finally:
                try:
                    node.stop()
                finally:
                    mine = dataclasses.replace(mine, pids=sorted(node.recorded), listening=_listening(node))
                    write_record(worker_file(job_dir, rank), mine)
    return 0


def _wait_until_over(node: RayNode, head: str, path: Path, token: str | None, poll_s: float) -> str:
    assert node.proc is not None
    misses, snapshot_at = 0, 0.0
    while True:
        if time.monotonic() >= snapshot_at:
            node.snapshot()  # record the processes Ray starts here (JAX actors) for the teardown check
            snapshot_at = time.monotonic() + SNAPSHOT_EVERY_S
        if node.proc.poll() is not None:
            return f"`ray start` exited with code {node.proc.returncode}"
        if _attempt_over(path, token):
            return "rank 0 ended the attempt"
        # Ray's own raylet would wait a minute for a lost GCS; the head stopping is our signal.
        misses = 0 if tcp_reachable(head) else misses + 1
        if misses >= LEAVE_AFTER_MISSES:
            return "the head's GCS stopped answering"
        time.sleep(poll_s)
