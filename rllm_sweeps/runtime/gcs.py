"""Talking to a Ray cluster's GCS: is it there, which nodes are alive, what is its address, and
leaving it as a driver before it goes away.

``ray._raylet.GcsClient(address)`` blocks about 40 s when nothing listens (Ray 2.57), so every
query probes TCP first.
"""

from __future__ import annotations

import dataclasses
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rllm_sweeps.runtime.errors import RayClusterError
from rllm_sweeps.runtime.ray_private import gcs_client


@dataclasses.dataclass(frozen=True)
class NodeInfo:
    """One alive node as the GCS reports it."""

    node_id: str
    address: str
    node_manager_port: int
    is_head: bool
    session_dir: str
    resources: dict[str, float]


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def tcp_reachable(address: str, timeout: float = 0.5) -> bool:
    """Something accepts TCP connections at ``host:port`` (cheap; no Ray RPC)."""
    try:
        with socket.create_connection(_split_address(address), timeout=timeout):
            return True
    except OSError:
        return False


def _alive_nodes(address: str, rpc_timeout: float) -> list[NodeInfo]:
    # Ray's private GcsClient (runtime/ray_private.py says why): not a driver, so SkyRL's ray.init() still works.
    client = gcs_client(address)
    infos = client.get_all_node_info(timeout=rpc_timeout)
    out = []
    for info in infos.values():
        if info.state != 0:  # GcsNodeInfo.ALIVE == 0
            continue
        out.append(
            NodeInfo(
                node_id=info.node_id.hex(),
                address=info.node_manager_address,
                node_manager_port=info.node_manager_port,
                is_head=bool(info.is_head_node),
                session_dir=info.session_dir,
                resources=dict(info.resources_total),
            )
        )
    return out


def wait_for_nodes(
    address: str,
    n: int,
    timeout: float = 120.0,
    *,
    poll_s: float = 0.25,
    where: Callable[[NodeInfo], bool] | None = None,
    abort: Callable[[], str | None] | None = None,
) -> list[NodeInfo]:
    """Block until the GCS at ``address`` reports at least ``n`` alive nodes
    (counting only those matching ``where``, if given) instead of sleeping;
    return them.  ``abort`` (returns an error string or None) is polled too,
    e.g. to notice a dead ``ray start``.  Raises :class:`RayClusterError` on
    timeout."""
    deadline = time.monotonic() + timeout
    last: list[NodeInfo] = []
    last_err: str = "GCS not reachable"
    while True:
        if abort is not None:
            why = abort()
            if why:
                raise RayClusterError(why)
        if tcp_reachable(address):
            try:
                remaining = max(0.5, deadline - time.monotonic())
                last = _alive_nodes(address, rpc_timeout=min(5.0, remaining))
                if where is not None:
                    last = [node for node in last if where(node)]
                if len(last) >= n:
                    return last
                last_err = f"{len(last)}/{n} nodes alive"
            except Exception as e:  # RpcError while the GCS is starting
                last_err = f"{type(e).__name__}: {e}"
        if time.monotonic() >= deadline:
            raise RayClusterError(f"Ray cluster at {address} not ready after {timeout:.0f}s: {last_err}")
        time.sleep(poll_s)


def read_address(temp_dir: Path) -> str | None:
    """The GCS address ``ray start`` recorded in ``temp_dir`` (None if not yet)."""
    try:
        text = (Path(temp_dir) / "ray_current_cluster").read_text().strip()
    except OSError:
        return None
    return text or None


def disconnect_driver(address: str) -> bool:
    """If THIS process is a Ray driver connected to ``address`` (e.g. SkyRL's
    ``ray.init()`` ran in-process), ``ray.shutdown()`` it before the cluster
    goes away; a driver left connected to a dead GCS delays interpreter exit
    by several seconds.  Returns True if it disconnected."""
    ray = sys.modules.get("ray")
    if ray is None:
        return False
    try:
        if not ray.is_initialized() or ray.get_runtime_context().gcs_address != address:
            return False
        ray.shutdown()
        return True
    except Exception:
        return False
