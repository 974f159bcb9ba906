"""One Ray node we own: start ``ray start --block``, wait until it answers, stop exactly it.

Nothing here ever runs ``ray stop``: that command kills every Ray process of the current user
on the machine, i.e. other jobs' clusters too.

How "stop only my processes" is made exact: each node is ``ray start ... --block`` run as a
child we own, started in a NEW SESSION (``setsid``).  Every process Ray spawns for that node
(gcs_server, raylet, dashboard/monitor/log-monitor/client-server, the raylet's agents and all
workers) inherits that session id; Ray workers call ``setpgrp`` but not ``setsid``, so the
session id (= the PID of our ``ray start`` process) names exactly this node's processes.  Linux
never reuses a PID while it is still in use as a session id, so the match cannot hit a stranger.
Teardown: SIGTERM to ``ray start --block`` (Ray's own graceful shutdown), wait, then
SIGTERM/SIGKILL whatever is still in the session (plus any recorded descendant that left it),
identified by (pid, start time) so a recycled PID is never signalled (:mod:`.processes`).  If
the owning Python process is SIGKILLed, ``PR_SET_PDEATHSIG`` delivers SIGTERM to
``ray start --block``, which then shuts its node down.

Ray 2.57 facts this relies on (checked on this machine):
- ``--node-ip-address=127.0.0.1`` is rewritten by Ray to the node's routable IP; the real
  address is read from ``<temp_dir>/ray_current_cluster``.
- ``ray start --block`` drains for up to ``RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S`` (default
  30 s) on SIGTERM; we set it to 0 unless the caller overrides it.

What the node's processes read from their environment (:meth:`RayNode._child_env`): the token
file (``spec.auth``), the two metrics ports of the block, and, for a head on a loopback address,
Ray's single-machine mode, which keeps every server on 127.0.0.1 (``ray_env.py``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from rllm_sweeps.runtime.auth import AUTH_VARS
from rllm_sweeps.runtime.commands import head_command, worker_command
from rllm_sweeps.runtime.errors import RayClusterError
from rllm_sweeps.runtime.gcs import read_address, wait_for_nodes
from rllm_sweeps.runtime.listeners import Listener, listening
from rllm_sweeps.runtime.ports import PortLease, RayPorts, allocate_ports
from rllm_sweeps.runtime.processes import cluster_processes, pid_alive, signal_all, start_time, wait_gone
from rllm_sweeps.runtime.ray_env import loopback_env
from rllm_sweeps.runtime.signals import defer_signals
from rllm_sweeps.runtime.spec import TEMP_BASE_ENV, RayClusterSpec, check_temp_dir

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


def client_env(spec: RayClusterSpec, node_ip: str | None, *, head: bool) -> dict[str, str]:
    """What Ray reads alike in a node's processes and in its clients (the job's driver): the token
    file, and, for a head given no address of its own (a job of one node), loopback only."""
    env = spec.auth.env() if spec.auth is not None else {}
    if head and node_ip is None:
        env.update(loopback_env(spec.node_ip_address))
    return env


def _make_temp_dir() -> Path:
    base = os.environ.get(TEMP_BASE_ENV, "/tmp")
    check_temp_dir(Path(base) / "rr-xxxxxxxx")  # mkdtemp adds 8 characters
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
        self.listeners: set[Listener] = set()  # every listening socket ever seen
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
        # Ray's raylet starts one idle Python worker per CPU when the first driver connects, for tasks
        # to come. A job's work runs in actors with their own runtime environment (SkyRL's), which
        # never take those workers: each would be a Python start-up (and its memory) spent for nothing,
        # 64 of them on a 64-CPU node. Workers then start when work asks for them.
        env.setdefault("RAY_prestart_worker_first_driver", "0")
        # The node's token is the one in spec.auth, whatever this process inherited.
        for name in AUTH_VARS:
            env.pop(name, None)
        env.update(client_env(self.spec, self.node_ip, head=self.is_head))
        env.update(self.ports.env())
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
        started = start_time(self.proc.pid)
        if started is not None:
            self.recorded[self.proc.pid] = started

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
        self.listeners |= listening(live)
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
        with defer_signals():
            # if this is interrupted, _stopped stays False and a later call
            # finishes the job
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
        left = wait_gone(cluster_processes(sid, self.recorded), timeout=1.0)
        if left:
            self.recorded.update(left)
            signal_all(left, signal.SIGTERM)
            left = wait_gone(left, timeout=3.0)
        for _ in range(3):
            left.update(cluster_processes(sid, self.recorded))
            if not left:
                break
            signal_all(left, signal.SIGKILL)
            left = wait_gone(left, timeout=5.0)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5.0)
        self.leftovers = {p: s for p, s in left.items() if pid_alive(p, s)}


def start_node(node: RayNode, n_nodes: int = 1) -> RayNode:
    """Start ``node`` and wait until it answers and ``n_nodes`` nodes are alive; on any failure it
    is stopped (its temp dir kept, with its log) before the error goes on."""
    try:
        node.start()
        node.wait_ready(n_nodes)
    except BaseException:
        with contextlib.suppress(Exception):
            node.stop(remove_temp_dir=False)
        raise
    return node


def start_head_node(spec: RayClusterSpec, *, node_ip: str | None = None) -> RayNode:
    """Start a head node we own and wait for it to answer (caller stops it)."""
    return start_node(RayNode(spec, node_ip=node_ip))


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
    return start_node(RayNode(spec, head_address=address, node_ip=node_ip), expect_nodes or 1)
