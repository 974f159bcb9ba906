"""Port blocks for Ray nodes: two nodes on one machine never share a port.

Each node gets a block of ports (GCS, client server, dashboard, node manager, object manager,
agent ports, metrics, worker port range) below the kernel's ephemeral range, claimed with an
``flock`` held for the node's lifetime and probed with ``bind``.

Every port is passed explicitly because Ray 2.57 starts a dashboard head process that binds
``--dashboard-port`` (default 8265, no retries) even with ``--include-dashboard=false``:
without a distinct port, the second cluster on a machine loses that process and
``ray start --block`` then kills the whole node. The two Prometheus endpoints of the head's
autoscaler monitor and dashboard process, which Ray otherwise opens on fixed ports (44217, 44227)
outside any block, are moved into the block too (:meth:`RayPorts.env`): every port a node opens
is then in its block, which ``ray.json`` records.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import random
import socket
import time
from pathlib import Path

from rllm_sweeps.runtime.errors import RayClusterError

# Port block layout (offsets from the block base).  Slot 11 is reserved; worker ports fill
# the rest of the block.
SERVICE_SLOTS = 12
DEFAULT_BLOCK_SIZE = 256
_DEFAULT_PORT_RANGE = (20000, 32768)  # below Linux's default ephemeral range
_LOCK_DIR_ENV = "RLLM_RAY_PORT_LOCK_DIR"
_PORT_RANGE_ENV = "RLLM_RAY_PORT_RANGE"  # "LO-HI", HI exclusive


@dataclasses.dataclass(frozen=True)
class RayPorts:
    """Every port one Ray node listens on (worker range inclusive)."""

    gcs: int
    ray_client_server: int
    dashboard: int
    node_manager: int
    object_manager: int
    dashboard_agent_listen: int
    dashboard_agent_grpc: int
    runtime_env_agent: int
    metrics_export: int
    autoscaler_metrics: int
    dashboard_metrics: int
    min_worker: int
    max_worker: int

    @classmethod
    def from_base(cls, base: int, block_size: int = DEFAULT_BLOCK_SIZE) -> RayPorts:
        """The fixed layout of a block starting at ``base``."""
        if base < 1024 or base + block_size > 65536:
            raise ValueError(f"port block [{base}, {base + block_size}) out of range")
        return cls(
            gcs=base,
            ray_client_server=base + 1,
            dashboard=base + 2,
            node_manager=base + 3,
            object_manager=base + 4,
            dashboard_agent_listen=base + 5,
            dashboard_agent_grpc=base + 6,
            runtime_env_agent=base + 7,
            metrics_export=base + 8,
            autoscaler_metrics=base + 9,
            dashboard_metrics=base + 10,
            min_worker=base + SERVICE_SLOTS,
            max_worker=base + block_size - 1,
        )

    def service_ports(self) -> list[int]:
        return [
            self.gcs,
            self.ray_client_server,
            self.dashboard,
            self.node_manager,
            self.object_manager,
            self.dashboard_agent_listen,
            self.dashboard_agent_grpc,
            self.runtime_env_agent,
            self.metrics_export,
            self.autoscaler_metrics,
            self.dashboard_metrics,
        ]

    def all_ports(self) -> list[int]:
        return self.service_ports() + list(range(self.min_worker, self.max_worker + 1))

    def node_args(self) -> list[str]:
        """Flags valid on every node (head and workers)."""
        return [
            f"--node-manager-port={self.node_manager}",
            f"--object-manager-port={self.object_manager}",
            f"--min-worker-port={self.min_worker}",
            f"--max-worker-port={self.max_worker}",
            f"--dashboard-agent-listen-port={self.dashboard_agent_listen}",
            f"--dashboard-agent-grpc-port={self.dashboard_agent_grpc}",
            f"--runtime-env-agent-port={self.runtime_env_agent}",
            f"--metrics-export-port={self.metrics_export}",
        ]

    def env(self) -> dict[str, str]:
        """The ports Ray takes from its environment, not its flags (read by the head's monitor and
        dashboard processes: ``ray/autoscaler/_private/constants.py``, ``ray/dashboard/consts.py``)."""
        return {
            "AUTOSCALER_METRIC_PORT": str(self.autoscaler_metrics),
            "DASHBOARD_METRIC_PORT": str(self.dashboard_metrics),
        }

    def head_args(self) -> list[str]:
        """Head-only flags plus :meth:`node_args`."""
        return [
            f"--port={self.gcs}",
            f"--ray-client-server-port={self.ray_client_server}",
            f"--dashboard-port={self.dashboard}",
            *self.node_args(),
        ]


class PortLease:
    """A port block claimed with an ``flock`` (released by :meth:`release` or
    when the holding process dies)."""

    def __init__(self, ports: RayPorts, fd: int | None, lock_path: Path | None) -> None:
        self.ports = ports
        self._fd = fd
        self.lock_path = lock_path

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> PortLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _port_range() -> tuple[int, int]:
    env = os.environ.get(_PORT_RANGE_ENV)
    if env:
        lo_s, hi_s = env.split("-", 1)
        return int(lo_s), int(hi_s)
    lo, hi = _DEFAULT_PORT_RANGE
    try:
        eph_lo = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
        if lo + 4 * DEFAULT_BLOCK_SIZE <= eph_lo < hi:
            hi = eph_lo
    except (OSError, ValueError, IndexError):
        pass
    return lo, hi


def _lock_dir() -> Path:
    d = Path(os.environ.get(_LOCK_DIR_ENV, "/tmp/rllm-ray-ports"))
    if not d.is_dir():
        with contextlib.suppress(FileExistsError):
            d.mkdir(parents=True)
            # shared by every user of the machine, like /tmp
            with contextlib.suppress(OSError):
                os.chmod(d, 0o1777)
    return d


def _port_free(port: int) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # Ray's gRPC servers use SO_REUSEADDR; TIME_WAIT leftovers don't block them.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def allocate_ports(block_size: int = DEFAULT_BLOCK_SIZE) -> PortLease:
    """Claim a free port block on this machine: flock + bind probe of every
    port.  Keep the lease for as long as the node runs."""
    lo, hi = _port_range()
    n_blocks = (hi - lo) // block_size
    if n_blocks < 1:
        raise RayClusterError(f"port range [{lo}, {hi}) too small for blocks of {block_size}")
    lock_dir = _lock_dir()
    start = random.Random(os.getpid() ^ time.time_ns()).randrange(n_blocks)
    for i in range(n_blocks):
        base = lo + ((start + i) % n_blocks) * block_size
        lock_path = lock_dir / f"{base}-{block_size}.lock"
        try:
            fd = os.open(lock_path, os.O_RDONLY | os.O_CREAT, 0o644)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        ports = RayPorts.from_base(base, block_size)
        if all(_port_free(p) for p in ports.all_ports()):
            return PortLease(ports, fd, lock_path)
        os.close(fd)
    raise RayClusterError(
        f"no free block of {block_size} ports in [{lo}, {hi}) (set {_PORT_RANGE_ENV}=LO-HI to widen the range)"
    )
