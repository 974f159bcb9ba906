"""Per-job Ray clusters: bring up, export ``RAY_ADDRESS``, tear down exactly.

Every training job starts its OWN Ray cluster before the engine starts and
stops it at the end (normal exit, exception, SIGTERM).  Nothing here ever runs
``ray stop``: that command kills every Ray process of the current user on the
machine, i.e. other jobs' clusters too.

How "stop only my processes" is made exact
------------------------------------------
Each Ray node is ``ray start ... --block`` run as a child we own, started in a
NEW SESSION (``setsid``).  Every process Ray spawns for that node (gcs_server,
raylet, dashboard/monitor/log-monitor/client-server, the raylet's agents and
all workers) inherits that session id; Ray workers call ``setpgrp`` but not
``setsid``, so the session id (= the PID of our ``ray start`` process) names
exactly this node's processes.  Linux never reuses a PID while it is still in
use as a session id, so the match cannot hit a stranger.  Teardown: SIGTERM to
``ray start --block`` (Ray's own graceful shutdown), wait, then SIGTERM/SIGKILL
whatever is still in the session (plus any recorded descendant that left it),
identified by (pid, start time) so a recycled PID is never signalled; zombies
count as dead.  If the owning Python process is SIGKILLed, ``PR_SET_PDEATHSIG``
delivers SIGTERM to ``ray start --block``, which then shuts its node down.

Ports: each node gets a block of ports (GCS, client server, dashboard, node
manager, object manager, agent ports, metrics, worker port range) below the
kernel's ephemeral range, claimed with an ``flock`` held for the node's
lifetime and probed with ``bind``; two jobs on one machine never share one.

Ray 2.57 facts this relies on (checked on this machine):
- ``--node-ip-address=127.0.0.1`` is rewritten by Ray to the node's routable
  IP; the real address is read from ``<temp_dir>/ray_current_cluster``.
- Even with ``--include-dashboard=false`` a dashboard head process starts and
  binds ``--dashboard-port`` (default 8265, no retries): without a distinct
  port, the second cluster on a machine loses that process and ``--block``
  then kills the whole node.
- ``ray start --block`` drains for up to ``RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S``
  (default 30 s) on SIGTERM; we set it to 0 unless the caller overrides it.
- ``ray._raylet.GcsClient(address)`` blocks ~40 s when nothing listens, so we
  probe TCP first.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import fcntl
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = [
    "MAX_TEMP_DIR_LEN",
    "LocalRayCluster",
    "NodeInfo",
    "PortLease",
    "RayClusterError",
    "RayClusterSpec",
    "RayNode",
    "RayPorts",
    "Terminated",
    "allocate_ports",
    "attempt_token",
    "cluster_processes",
    "disconnect_driver",
    "head_command",
    "install_sigterm_handler",
    "pid_alive",
    "read_address",
    "slurm_head_host",
    "slurm_hostnames",
    "slurm_node_resources",
    "start_head_node",
    "start_worker_node",
    "sigterm_raises",
    "tcp_reachable",
    "wait_for_nodes",
    "worker_command",
]

# AF_UNIX paths are limited to 107 bytes.  Ray puts its sockets at
# <temp_dir>/session_YYYY-MM-DD_HH-MM-SS_ffffff_<pid>/sockets/plasma_store
# (64 bytes after temp_dir with a 7-digit pid); keep a small margin.
MAX_TEMP_DIR_LEN = 107 - 64 - 2

# Port block layout (offsets from the block base).  Slots 9..SERVICE_SLOTS-1
# are reserved; worker ports fill the rest of the block.
_SERVICE_SLOTS = 12
_DEFAULT_BLOCK_SIZE = 256
_DEFAULT_PORT_RANGE = (20000, 32768)  # below Linux's default ephemeral range
_LOCK_DIR_ENV = "RLLM_RAY_PORT_LOCK_DIR"
_PORT_RANGE_ENV = "RLLM_RAY_PORT_RANGE"  # "LO-HI", HI exclusive
_TEMP_BASE_ENV = "RLLM_RAY_TMP"  # short base directory for temp dirs


class RayClusterError(RuntimeError):
    """Ray could not be started, did not answer in time, or left processes."""


# --------------------------------------------------------------------------
# Spec and ports
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RayClusterSpec:
    """What one Ray node (the head of a local cluster, or one node of a
    multi-node cluster) is given.

    num_cpus / num_gpus are always passed explicitly (Ray hangs or
    over-subscribes under SLURM CPU limits otherwise).  temp_dir None means a
    fresh short directory under $RLLM_RAY_TMP or /tmp, removed after a clean
    stop.  port None means: allocate a free, locked port block; an explicit
    port P uses the block [P, P + block_size) and the caller guarantees it is
    disjoint from every other cluster's.
    """

    num_cpus: int
    num_gpus: int = 0
    temp_dir: Path | None = None
    port: int | None = None
    object_store_memory_mb: int | None = None
    node_ip_address: str = "127.0.0.1"
    resources: Mapping[str, float] | None = None
    include_dashboard: bool = False
    block_size: int = _DEFAULT_BLOCK_SIZE
    start_timeout_s: float = 60.0
    stop_grace_s: float = 15.0
    env: Mapping[str, str] | None = None
    keep_temp_dir: bool = False

    def __post_init__(self) -> None:
        if self.num_cpus < 0 or self.num_gpus < 0:
            raise ValueError("num_cpus and num_gpus must be >= 0")
        if self.block_size < _SERVICE_SLOTS + 2:
            raise ValueError(f"block_size must be >= {_SERVICE_SLOTS + 2}")
        if self.object_store_memory_mb is not None and self.object_store_memory_mb < 75:
            raise ValueError("object_store_memory_mb must be >= 75 (Ray's minimum)")
        if self.temp_dir is not None:
            _check_temp_dir(Path(self.temp_dir))


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
    min_worker: int
    max_worker: int

    @classmethod
    def from_base(cls, base: int, block_size: int = _DEFAULT_BLOCK_SIZE) -> RayPorts:
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
            min_worker=base + _SERVICE_SLOTS,
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
        if lo + 4 * _DEFAULT_BLOCK_SIZE <= eph_lo < hi:
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


def allocate_ports(block_size: int = _DEFAULT_BLOCK_SIZE) -> PortLease:
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


# --------------------------------------------------------------------------
# Commands (also usable by a SLURM launcher that runs them under srun)
# --------------------------------------------------------------------------


def _ray_executable() -> list[str]:
    exe = Path(sys.executable).parent / "ray"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("ray")
    if found:
        return [found]
    return [sys.executable, "-m", "ray.scripts.scripts"]


def _resource_args(spec: RayClusterSpec) -> list[str]:
    args = [f"--num-cpus={spec.num_cpus}", f"--num-gpus={spec.num_gpus}"]
    if spec.object_store_memory_mb is not None:
        args.append(f"--object-store-memory={spec.object_store_memory_mb * 1024 * 1024}")
    if spec.resources:
        args.append(f"--resources={json.dumps(dict(spec.resources))}")
    return args


def head_command(
    spec: RayClusterSpec,
    ports: RayPorts,
    temp_dir: Path,
    *,
    node_ip: str | None = None,
    block: bool = True,
) -> list[str]:
    """argv of ``ray start --head`` for ``spec`` on ``ports`` (``--block`` by
    default, so the process lives as long as the node)."""
    _check_temp_dir(temp_dir)
    argv = [
        *_ray_executable(),
        "start",
        "--head",
        f"--node-ip-address={node_ip or spec.node_ip_address}",
        *ports.head_args(),
        *_resource_args(spec),
        f"--temp-dir={temp_dir}",
        f"--include-dashboard={'true' if spec.include_dashboard else 'false'}",
        "--disable-usage-stats",
    ]
    if block:
        argv.append("--block")
    return argv


def worker_command(
    address: str,
    spec: RayClusterSpec,
    ports: RayPorts,
    temp_dir: Path,
    *,
    node_ip: str | None = None,
    block: bool = True,
) -> list[str]:
    """argv of ``ray start --address=IP:P`` joining the head at ``address``
    (``ports.gcs``/client/dashboard are not used on a worker node)."""
    _check_temp_dir(temp_dir)
    argv = [*_ray_executable(), "start", f"--address={address}"]
    if node_ip:
        argv.append(f"--node-ip-address={node_ip}")
    argv += [
        *ports.node_args(),
        *_resource_args(spec),
        f"--temp-dir={temp_dir}",
        "--disable-usage-stats",
    ]
    if block:
        argv.append("--block")
    return argv


# --------------------------------------------------------------------------
# Readiness
# --------------------------------------------------------------------------


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
    # Private API (the one `ray.nodes()` / `ray symmetric-run` build on); it
    # does not make this process a Ray driver, so SkyRL's later ray.init()
    # still works here.  Pinned: ray==2.57.0.
    from ray._raylet import GcsClient

    client = GcsClient(address=address)
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


# --------------------------------------------------------------------------
# Process bookkeeping (Linux /proc)
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Stat:
    state: str
    ppid: int
    pgrp: int
    session: int
    starttime: int


def _stat(pid: int) -> _Stat | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes().decode(errors="replace")
    except OSError:
        return None
    rest = raw[raw.rfind(")") + 2 :].split()
    # fields after comm: state(3) ppid(4) pgrp(5) session(6) ... starttime(22)
    return _Stat(rest[0], int(rest[1]), int(rest[2]), int(rest[3]), int(rest[19]))


def pid_alive(pid: int, starttime: int | None = None) -> bool:
    """True if ``pid`` runs and is not a zombie (and, if given, still has the
    same start time, i.e. was not recycled)."""
    st = _stat(pid)
    if st is None or st.state in ("Z", "X", "x"):
        return False
    return starttime is None or st.starttime == starttime


def _all_stats() -> dict[int, _Stat]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                out[int(name)] = st
    return out


def cluster_processes(session_id: int, extra: Mapping[int, int] | None = None) -> dict[int, int]:
    """Live (non-zombie) processes of one node: members of session
    ``session_id``, their descendants, and any ``extra`` {pid: starttime}
    still alive.  Returns {pid: starttime}."""
    stats = _all_stats()
    found = {
        pid: st.starttime for pid, st in stats.items() if st.session == session_id and st.state not in ("Z", "X", "x")
    }
    # descendants that might have left the session (setsid)
    children: dict[int, list[int]] = {}
    for pid, st in stats.items():
        children.setdefault(st.ppid, []).append(pid)
    stack = list(found)
    while stack:
        for c in children.get(stack.pop(), []):
            st = stats[c]
            if c not in found and st.state not in ("Z", "X", "x"):
                found[c] = st.starttime
                stack.append(c)
    for pid, start in (extra or {}).items():
        st = stats.get(pid)
        if st is not None and st.starttime == start and st.state not in ("Z", "X", "x"):
            found[pid] = start
    found.pop(os.getpid(), None)
    return found


def _signal_all(procs: Mapping[int, int], sig: int) -> None:
    for pid, start in procs.items():
        if pid_alive(pid, start):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


def _wait_gone(procs: Mapping[int, int], timeout: float) -> dict[int, int]:
    deadline = time.monotonic() + timeout
    while True:
        left = {p: s for p, s in procs.items() if pid_alive(p, s)}
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


# --------------------------------------------------------------------------
# SIGTERM -> exception, with deferral while a teardown runs
# --------------------------------------------------------------------------


class Terminated(SystemExit):
    """Raised in the main thread when a termination signal arrives (exit code
    128 + signum if uncaught); ``with`` blocks unwind, so clusters stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


_teardown_depth = 0
# re-entrant: the Python-level handler runs in the main thread, possibly while
# that same thread is inside one of the short critical sections below
_teardown_lock = threading.RLock()
_pending_signal: int | None = None


@contextlib.contextmanager
def _defer_signals() -> Iterator[None]:
    """While a teardown runs, our handler records the signal instead of
    raising into the middle of the teardown; it is raised afterwards."""
    global _teardown_depth, _pending_signal
    with _teardown_lock:
        _teardown_depth += 1
    try:
        yield
    finally:
        with _teardown_lock:
            _teardown_depth -= 1
            pending = _pending_signal if _teardown_depth == 0 else None
            if pending is not None:
                _pending_signal = None
        if pending is not None:
            if threading.current_thread() is threading.main_thread():
                raise Terminated(pending)
            os.kill(os.getpid(), pending)  # re-deliver: the main thread raises


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    global _pending_signal
    with _teardown_lock:
        if _teardown_depth > 0:
            _pending_signal = signum
            return
    raise Terminated(signum)


def install_sigterm_handler(
    signals: Sequence[int] = (signal.SIGTERM, signal.SIGHUP),
) -> dict[int, Any]:
    """Make termination signals raise :class:`Terminated` in the main thread
    (so ``with LocalRayCluster(...)`` tears down); a signal arriving during a
    teardown is held until it finishes.  Returns the previous handlers."""
    previous = {}
    for sig in signals:
        previous[sig] = signal.signal(sig, _raise_terminated)
    return previous


@contextlib.contextmanager
def sigterm_raises(
    signals: Sequence[int] = (signal.SIGTERM, signal.SIGHUP),
) -> Iterator[None]:
    """Context manager form of :func:`install_sigterm_handler` (restores the
    previous handlers on exit).  Main thread only."""
    previous = install_sigterm_handler(signals)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# --------------------------------------------------------------------------
# One Ray node we own
# --------------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1
try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _prctl = _libc.prctl
except (OSError, AttributeError):  # pragma: no cover - non-Linux
    _prctl = None


def _preexec_pdeathsig() -> None:
    # Runs in the child between fork and exec: only a preloaded C call.
    # PDEATHSIG fires when the *thread* that forked us exits, so a node must
    # be started and stopped by a thread that outlives it (true for `with`).
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _check_temp_dir(temp_dir: Path) -> None:
    s = str(temp_dir)
    if not os.path.isabs(s):
        raise ValueError(f"temp_dir must be absolute: {s}")
    if len(s.encode()) > MAX_TEMP_DIR_LEN:
        raise ValueError(
            f"temp_dir {s!r} is {len(s.encode())} bytes; Ray's socket paths under it "
            f"would exceed the 107-byte AF_UNIX limit (max {MAX_TEMP_DIR_LEN} bytes). "
            f"Use a short directory, e.g. /tmp/rr-XXXX (set {_TEMP_BASE_ENV})."
        )


def _make_temp_dir() -> Path:
    base = os.environ.get(_TEMP_BASE_ENV, "/tmp")
    _check_temp_dir(Path(base) / "rr-xxxxxxxx")  # mkdtemp adds 8 characters
    return Path(tempfile.mkdtemp(prefix="rr-", dir=base))


def _tail(path: Path, n: int = 30) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "<no log>"
    return "\n".join(lines[-n:])


class RayNode:
    """One ``ray start --block`` process we own, plus its port lease and temp
    dir.  :meth:`stop` stops exactly this node's processes."""

    def __init__(
        self,
        spec: RayClusterSpec,
        *,
        head_address: str | None = None,
        node_ip: str | None = None,
    ) -> None:
        self.spec = spec
        self.head_address = head_address  # None -> this node is a head
        self.node_ip = node_ip
        self._own_temp_dir = spec.temp_dir is None
        self.temp_dir: Path = Path(spec.temp_dir) if spec.temp_dir else _make_temp_dir()
        self.temp_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.temp_dir / "ray-start.log"
        self._lease: PortLease | None = None
        if spec.port is None:
            self._lease = allocate_ports(spec.block_size)
            self.ports = self._lease.ports
        else:
            self.ports = RayPorts.from_base(spec.port, spec.block_size)
        self.proc: subprocess.Popen[bytes] | None = None
        self.address: str | None = None
        self.recorded: dict[int, int] = {}  # every pid (-> starttime) ever seen
        self.leftovers: dict[int, int] = {}
        self._stopped = False

    @property
    def is_head(self) -> bool:
        return self.head_address is None

    @property
    def session_id(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def command(self) -> list[str]:
        if self.is_head:
            return head_command(self.spec, self.ports, self.temp_dir, node_ip=self.node_ip)
        assert self.head_address is not None
        return worker_command(self.head_address, self.spec, self.ports, self.temp_dir, node_ip=self.node_ip)

    def _child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        # never let an inherited address steer the new node somewhere else
        env.pop("RAY_ADDRESS", None)
        env.setdefault("RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S", "0")
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        env.update(self.spec.env or {})
        return env

    def start(self) -> None:
        """Spawn ``ray start --block`` in its own session (returns at once)."""
        if self.proc is not None:
            raise RayClusterError("node already started")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._child_env(),
                start_new_session=True,
                preexec_fn=_preexec_pdeathsig,
                close_fds=True,
            )
        st = _stat(self.proc.pid)
        if st is not None:
            self.recorded[self.proc.pid] = st.starttime

    def _dead_reason(self) -> str | None:
        if self.proc is not None and self.proc.poll() is not None:
            return (
                f"`ray start` exited with code {self.proc.returncode} before the node "
                f"was ready; log: {self.log_path}\n{_tail(self.log_path)}"
            )
        return None

    def wait_ready(self, n_nodes: int = 1, timeout: float | None = None) -> str:
        """Wait until this node's GCS address is known and ``n_nodes`` nodes
        are alive; returns the GCS address."""
        timeout = self.spec.start_timeout_s if timeout is None else timeout
        deadline = time.monotonic() + timeout
        address = self.head_address
        while address is None:
            why = self._dead_reason()
            if why:
                raise RayClusterError(why)
            address = read_address(self.temp_dir)
            if address is None:
                if time.monotonic() >= deadline:
                    raise RayClusterError(
                        f"Ray head did not start within {timeout:.0f}s; log: {self.log_path}\n{_tail(self.log_path)}"
                    )
                time.sleep(0.1)
        mine = str(self.temp_dir).rstrip("/") + "/"
        try:
            # this node registered (its session dir is under OUR temp dir, so
            # the GCS answering is ours) ...
            wait_for_nodes(
                address,
                1,
                timeout=max(1.0, deadline - time.monotonic()),
                where=lambda node: node.session_dir.startswith(mine),
                abort=self._dead_reason,
            )
            # ... and the cluster has the nodes the caller expects
            if n_nodes > 1:
                wait_for_nodes(
                    address,
                    n_nodes,
                    timeout=max(1.0, deadline - time.monotonic()),
                    abort=self._dead_reason,
                )
        except RayClusterError as e:
            raise RayClusterError(f"{e}\nlog: {self.log_path}") from None
        self.address = address
        self.snapshot()
        return address

    def snapshot(self) -> dict[int, int]:
        """Record (and return) the node's live processes right now."""
        sid = self.session_id
        if sid is None:
            return {}
        live = cluster_processes(sid, self.recorded)
        self.recorded.update(live)
        return live

    def pids(self) -> list[int]:
        """Live PIDs of this node (session members and descendants)."""
        return sorted(self.snapshot())

    def stop(self, *, remove_temp_dir: bool | None = None) -> None:
        """Stop every process of this node: SIGTERM ``ray start --block``
        (graceful), then SIGTERM/SIGKILL what is left of its session; verify.
        Idempotent.  Raises :class:`RayClusterError` if processes survive."""
        if self._stopped:
            return
        with _defer_signals():
            # if this is interrupted, _stopped stays False and a later call
            # (e.g. the atexit hook) finishes the job
            self._stop_processes()
            self._stopped = True
            if self._lease is not None:
                self._lease.release()
            keep = self.spec.keep_temp_dir or not self._own_temp_dir
            if remove_temp_dir is not None:
                keep = keep or not remove_temp_dir
            if not keep and not self.leftovers:
                shutil.rmtree(self.temp_dir, ignore_errors=True)
        if self.leftovers:
            raise RayClusterError(f"Ray processes survived SIGKILL: {sorted(self.leftovers)} (log: {self.log_path})")

    def _stop_processes(self) -> None:
        proc = self.proc
        if proc is None:
            return
        sid = proc.pid
        self.snapshot()
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=self.spec.stop_grace_s)
        # whatever Ray's own shutdown left behind (or everything, if
        # `ray start` was already dead)
        left = _wait_gone(cluster_processes(sid, self.recorded), timeout=1.0)
        if left:
            self.recorded.update(left)
            _signal_all(left, signal.SIGTERM)
            left = _wait_gone(left, timeout=3.0)
        for _ in range(3):
            left.update(cluster_processes(sid, self.recorded))
            if not left:
                break
            _signal_all(left, signal.SIGKILL)
            left = _wait_gone(left, timeout=5.0)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5.0)
        self.leftovers = {p: s for p, s in left.items() if pid_alive(p, s)}


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


def start_head_node(spec: RayClusterSpec, *, node_ip: str | None = None) -> RayNode:
    """Start a head node we own and wait for it to answer (caller stops it)."""
    node = RayNode(spec, node_ip=node_ip)
    try:
        node.start()
        node.wait_ready(1)
    except BaseException:
        with contextlib.suppress(Exception):
            node.stop(remove_temp_dir=False)
        raise
    return node


def start_worker_node(
    address: str,
    spec: RayClusterSpec,
    *,
    expect_nodes: int | None = None,
    node_ip: str | None = None,
) -> RayNode:
    """Start a worker node that joins the head at ``address`` and wait until
    it is registered (and, if ``expect_nodes`` is given, until that many nodes
    are alive)."""
    node = RayNode(spec, head_address=address, node_ip=node_ip)
    try:
        node.start()
        node.wait_ready(expect_nodes or 1)
    except BaseException:
        with contextlib.suppress(Exception):
            node.stop(remove_temp_dir=False)
        raise
    return node


# --------------------------------------------------------------------------
# The per-job local cluster
# --------------------------------------------------------------------------


class LocalRayCluster:
    """A single-node Ray cluster owned by this job.

    ``with LocalRayCluster(RayClusterSpec(num_cpus=4)) as c:`` starts the head,
    waits until it answers, sets ``os.environ["RAY_ADDRESS"]`` to ``c.address``
    (restored on exit; ``export_env=False`` skips that, e.g. when several
    clusters live in threads of one process: pass ``c.env()`` to children
    instead), and on exit, exception or :class:`Terminated` stops exactly its
    own processes.  An atexit hook stops it if the ``with`` is bypassed.

    Start and stop it from one thread that outlives the cluster (the main
    thread, normally): ``ray start`` gets SIGTERM through PR_SET_PDEATHSIG
    when the starting *thread* exits.  Call :func:`install_sigterm_handler`
    (or use :func:`sigterm_raises`) in the main thread so SIGTERM unwinds the
    ``with``.  If this process is itself connected as a driver (SkyRL's
    in-process ``ray.init()``), stop() calls ``ray.shutdown()`` first.
    """

    def __init__(self, spec: RayClusterSpec, *, export_env: bool = True) -> None:
        self.spec = spec
        self.export_env = export_env
        self.node: RayNode | None = None
        self._saved_env: tuple[bool, str | None] | None = None

    @property
    def address(self) -> str:
        if self.node is None or self.node.address is None:
            raise RayClusterError("cluster not started")
        return self.node.address

    @property
    def temp_dir(self) -> Path:
        assert self.node is not None
        return self.node.temp_dir

    @property
    def log_path(self) -> Path:
        assert self.node is not None
        return self.node.log_path

    @property
    def ports(self) -> RayPorts:
        assert self.node is not None
        return self.node.ports

    @property
    def session_id(self) -> int:
        assert self.node is not None and self.node.session_id is not None
        return self.node.session_id

    @property
    def recorded_pids(self) -> dict[int, int]:
        """Every {pid: starttime} of this cluster seen so far."""
        return dict(self.node.recorded) if self.node else {}

    def pids(self) -> list[int]:
        """Live PIDs of this cluster right now."""
        return self.node.pids() if self.node else []

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default os.environ) with RAY_ADDRESS set to this cluster."""
        env = dict(os.environ if base is None else base)
        env["RAY_ADDRESS"] = self.address
        return env

    def start(self) -> LocalRayCluster:
        import atexit

        if self.node is not None:
            raise RayClusterError("cluster already started")
        self.node = start_head_node(self.spec)
        try:
            atexit.register(self._atexit)
            if self.export_env:
                self._saved_env = ("RAY_ADDRESS" in os.environ, os.environ.get("RAY_ADDRESS"))
                os.environ["RAY_ADDRESS"] = self.address
        except BaseException:  # e.g. Terminated right after start: __exit__ won't run
            self.stop(remove_temp_dir=False)
            raise
        return self

    def stop(self, *, remove_temp_dir: bool | None = None) -> None:
        import atexit

        if self._saved_env is not None:
            had, old = self._saved_env
            self._saved_env = None
            if had and old is not None:
                os.environ["RAY_ADDRESS"] = old
            else:
                os.environ.pop("RAY_ADDRESS", None)
        if self.node is not None:
            if self.node.address is not None:
                disconnect_driver(self.node.address)
            self.node.stop(remove_temp_dir=remove_temp_dir)
        atexit.unregister(self._atexit)  # only once the node is really stopped

    def _atexit(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()

    def __enter__(self) -> LocalRayCluster:
        return self.start()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.stop()


# --------------------------------------------------------------------------
# SLURM helpers (multi-node)
# --------------------------------------------------------------------------


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


def slurm_hostnames(nodelist: str | None = None) -> list[str]:
    """Expanded host names of ``nodelist`` (default $SLURM_JOB_NODELIST),
    via ``scontrol show hostnames``; the first one runs the head."""
    nodelist = nodelist or os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
    if not nodelist:
        raise RayClusterError("SLURM_JOB_NODELIST is not set")
    out = subprocess.run(
        ["scontrol", "show", "hostnames", nodelist],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    return [h for h in out.split() if h]


def slurm_head_host(nodelist: str | None = None) -> tuple[str, str]:
    """(hostname, IP) of the allocation's first node, where the head runs."""
    host = slurm_hostnames(nodelist)[0]
    try:
        ip = socket.gethostbyname(host)
    except OSError as e:
        raise RayClusterError(f"cannot resolve head host {host!r}: {e}") from e
    return host, ip


# --------------------------------------------------------------------------
# CLI for sbatch scripts: one `node` task per node under srun, `wait` in the
# batch script, e.g.
#   srun --nodes=$N --ntasks-per-node=1 --overlap \
#        python -m rllm_sweeps.runtime.ray_cluster node --address-file $D/ray.json &
#   export RAY_ADDRESS=$(python -m rllm_sweeps.runtime.ray_cluster wait \
#        --address-file $D/ray.json --nodes $N)
#   python train.py ...; kill -TERM %1; wait
# --------------------------------------------------------------------------


def attempt_token() -> str | None:
    """This attempt of this SLURM job ("JOBID.RESTARTS"; None outside SLURM): an address
    file carrying another token belongs to an earlier job or attempt."""
    job = os.environ.get("SLURM_JOB_ID")
    if job is None:
        return None
    return f"{job}.{os.environ.get('SLURM_RESTART_COUNT', '0')}"


def _write_address_file(path: Path, address: str, token: str | None) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"address": address, "token": token}))
    os.replace(tmp, path)  # atomic: readers never see half a file


def _read_address_file(path: Path, token: str | None) -> str | None:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if token is not None and data.get("token") != token:
        return None  # a previous job's (or attempt's) file
    return data.get("address")


def _poll_address_file(path: Path, token: str | None, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        address = _read_address_file(path, token)
        if address:
            return address
        if time.monotonic() >= deadline:
            raise RayClusterError(f"no head address in {path} after {timeout:.0f}s (token {token})")
        time.sleep(0.2)


def _run_node(args: Any) -> int:
    cpus, gpus = slurm_node_resources()
    spec = RayClusterSpec(
        num_cpus=args.num_cpus if args.num_cpus is not None else cpus,
        num_gpus=args.num_gpus if args.num_gpus is not None else gpus,
        port=args.port,
        object_store_memory_mb=args.object_store_memory_mb,
        start_timeout_s=args.timeout,
    )
    role = args.role
    if role == "auto":
        role = "head" if os.environ.get("SLURM_NODEID", os.environ.get("SLURM_PROCID", "0")) == "0" else "worker"
    address_file = Path(args.address_file)
    with sigterm_raises():
        if role == "head":
            node_ip = args.node_ip
            if node_ip is None and os.environ.get("SLURM_JOB_NODELIST"):
                node_ip = slurm_head_host()[1]
            node = start_head_node(spec, node_ip=node_ip)
            assert node.address is not None
            _write_address_file(address_file, node.address, args.token)
        else:
            address = _poll_address_file(address_file, args.token, args.timeout)
            node = start_worker_node(address, spec, node_ip=args.node_ip)
        try:
            info = {"role": role, "address": node.address, "session_id": node.session_id}
            print(json.dumps({**info, "temp_dir": str(node.temp_dir)}), flush=True)
            assert node.proc is not None
            while node.proc.poll() is None:
                time.sleep(0.5)
            print(f"ray start exited with {node.proc.returncode}; log: {node.log_path}", file=sys.stderr)
            return 1
        finally:
            node.stop()


def _run_wait(args: Any) -> int:
    deadline = time.monotonic() + args.timeout
    address = _poll_address_file(Path(args.address_file), args.token, args.timeout)
    wait_for_nodes(address, args.nodes, timeout=max(1.0, deadline - time.monotonic()))
    print(address, flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``node``: run one Ray node of this job until SIGTERM (head writes its
    address to --address-file, workers read it); ``wait``: block until N
    nodes are alive, then print the address for RAY_ADDRESS."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m rllm_sweeps.runtime.ray_cluster")
    sub = ap.add_subparsers(dest="cmd", required=True)
    node = sub.add_parser("node", help="run this node's Ray (head or worker) until SIGTERM")
    node.add_argument("--role", choices=["auto", "head", "worker"], default="auto")
    node.add_argument("--num-cpus", type=int, default=None)
    node.add_argument("--num-gpus", type=int, default=None)
    node.add_argument("--port", type=int, default=None, help="base of this node's port block")
    node.add_argument("--node-ip", default=None)
    node.add_argument("--object-store-memory-mb", type=int, default=None)
    wait = sub.add_parser("wait", help="wait for N alive nodes, print the address")
    wait.add_argument("--nodes", type=int, required=True)
    for p in (node, wait):
        p.add_argument("--address-file", required=True)
        p.add_argument("--token", default=attempt_token(), help="job tag (default: SLURM job id.restart)")
        p.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args(argv)
    return _run_node(args) if args.cmd == "node" else _run_wait(args)


if __name__ == "__main__":
    sys.exit(main())
