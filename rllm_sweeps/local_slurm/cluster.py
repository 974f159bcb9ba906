"""LocalSlurm: bring a local cluster up, check it, and take it down again, stopping only what it started."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from rllm_sweeps.local_slurm.client import SlurmClient
from rllm_sweeps.local_slurm.config import HostFacts, render_gres_conf, render_slurm_conf, render_slurmdbd_conf
from rllm_sweeps.local_slurm.daemons import MARKER_ENV, Daemons
from rllm_sweeps.local_slurm.errors import LocalSlurmError
from rllm_sweeps.local_slurm.layout import DIRS, ClusterPaths
from rllm_sweeps.local_slurm.netns import netns_inodes, setup_netns, teardown_netns
from rllm_sweeps.local_slurm.processes import (
    all_pids,
    check_ports_free,
    mem_available_mb,
    missing_binaries,
    pid_alive,
    proc_comm,
    proc_environ_has,
    proc_net_ns_inode,
    short_hostname,
    stop_pid,
    wait_until,
)
from rllm_sweeps.local_slurm.settings import (
    DEFAULT_BASE,
    DEFAULT_PORT_BASE,
    GPUS_PER_NODE,
    MAX_NODES,
    ClusterSettings,
)

MAX_BASE_LENGTH = 60  # unix socket paths (munge, MariaDB) under base must stay below 108 bytes
FAKE_GPU_MAJOR = 195  # NVIDIA's character-device major number


class LocalSlurm:
    """A local SLURM cluster (controller, nodes, accounting) under ``base``.

    ``nodes``, ``netns``, ``gpus_per_node`` and ``port_base`` matter for
    :meth:`up`; once the cluster is up they are saved in ``base/cluster.json``
    and :meth:`down`, :meth:`status`, :meth:`client_prefix` use the saved ones.
    Ports used (in the root network namespace unless ``netns``):
    ``port_base`` + 6 (MariaDB), +17 (slurmctld), +19 (slurmdbd), +30.. (slurmd).
    """

    def __init__(
        self,
        base: Path | str = DEFAULT_BASE,
        nodes: int = 1,
        netns: bool = False,
        *,
        gpus_per_node: int = GPUS_PER_NODE,
        port_base: int = DEFAULT_PORT_BASE,
        verbose: bool = True,
    ) -> None:
        self.base = Path(base).absolute()
        if nodes < 1 or nodes > MAX_NODES:
            raise ValueError(f"nodes must be in 1..{MAX_NODES}, got {nodes}")
        self.nodes = nodes
        self.netns = netns
        self.gpus_per_node = gpus_per_node
        self.port_base = port_base
        self.verbose = verbose
        self._t0 = time.monotonic()
        self._saved: ClusterSettings | None = self._load_settings()

    # ------------------------------------------------------------------------------ settings
    @property
    def paths(self) -> ClusterPaths:
        return ClusterPaths(self.base)

    @property
    def conf(self) -> Path:
        return self.paths.conf

    @property
    def log_dir(self) -> Path:
        return self.paths.log_dir

    def _load_settings(self) -> ClusterSettings | None:
        try:
            return ClusterSettings.from_json(self.paths.settings_file.read_text())
        except (OSError, ValueError, TypeError):
            return None

    def _requested_settings(self) -> ClusterSettings:
        return ClusterSettings.for_base(
            self.base, nodes=self.nodes, netns=self.netns, gpus_per_node=self.gpus_per_node, port_base=self.port_base
        )

    @property
    def settings(self) -> ClusterSettings:
        """Settings of the cluster as last brought up, else the requested ones."""
        return self._saved if self._saved is not None else self._requested_settings()

    @property
    def node_names(self) -> list[str]:
        return self.settings.node_names

    def node_address(self, node: str) -> str:
        """IP address of node ``nN`` (127.0.0.1 unless netns)."""
        return self.settings.node_address(node)

    @property
    def controller_address(self) -> str:
        return self.settings.controller_address

    def _daemons(self) -> Daemons:
        return Daemons(self.settings, self.paths, self._log)

    def _log(self, msg: str) -> None:
        if self.verbose:
            dt = time.monotonic() - self._t0
            print(f"[local_slurm {dt:6.2f}s] {msg}", file=sys.stderr, flush=True)

    # ------------------------------------------------------------------------------- clients
    @property
    def client(self) -> SlurmClient:
        return SlurmClient(self.settings, self.paths)

    def env(self) -> dict[str, str]:
        """Environment variables a client (sbatch, sacct, submitit) needs."""
        return self.client.env()

    def client_prefix(self) -> list[str]:
        """Command prefix that puts a client where it can reach the controller.

        Empty unless netns; then ``["nsenter", "--net=/run/netns/<ctl>"]``.
        """
        return self.client.prefix()

    def client_env(self) -> dict[str, str]:
        """os.environ plus :meth:`env`, for running clients via subprocess."""
        return self.client.full_env()

    def run_client(
        self, args: list[str], *, check: bool = False, timeout: float = 30, **kw
    ) -> subprocess.CompletedProcess:
        """Run a client command (e.g. ``["sacct", "-j", "1"]``) against this cluster."""
        return self.client.run(args, check=check, timeout=timeout, **kw)

    def node_states(self) -> dict[str, str]:
        """node -> state as sinfo reports it (e.g. 'idle', 'down*'); {} if unreachable."""
        return self.client.node_states()

    # ----------------------------------------------------------------------------- processes
    def daemon_pids(self) -> dict[str, int | None]:
        """Every daemon of the cluster and its live PID (None when not running)."""
        return self._daemons().pids()

    def cluster_pids(self) -> list[int]:
        """Live PIDs of everything this cluster started.

        The daemons (by pid file), every process started with this cluster's
        marker in its environment (daemons and their slurmstepd), and with
        netns every process inside the cluster's namespaces.
        """
        pids = {p for p in self.daemon_pids().values() if p}
        marker = f"{MARKER_ENV}={self.base}".encode()
        ns_inodes = netns_inodes(self._saved)
        for pid in all_pids():
            if pid == os.getpid() or not pid_alive(pid):
                continue
            if proc_environ_has(pid, marker):
                pids.add(pid)
            elif ns_inodes and proc_net_ns_inode(pid) in ns_inodes:
                pids.add(pid)
        return sorted(p for p in pids if pid_alive(p))

    def kill_slurmd(self, node: str = "n1") -> int:
        """SIGKILL one node's slurmd (by its PID file), as a crashed node daemon; returns its PID."""
        pid = self._daemons().pid(f"slurmd-{node}")
        if pid is None:
            raise LocalSlurmError(f"slurmd of {node} is not running")
        os.kill(pid, signal.SIGKILL)
        self._log(f"killed slurmd-{node} (pid {pid})")
        return pid

    def restart_slurmds(self, timeout: float = 120) -> None:
        """Start every slurmd that is not running and wait until all nodes are idle again."""
        self._daemons().start_slurmds(timeout)

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self.base.mkdir(parents=True, exist_ok=True)
        with open(self.paths.lock_file, "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    # ------------------------------------------------------------------------ health, status
    def is_up(self) -> bool:
        """All daemons alive, controller answers, every node usable."""
        self._saved = self._load_settings()
        if self._saved is None:
            return False
        if not all(self.daemon_pids().values()):
            return False
        return self.client.ping() and self.client.nodes_ready()

    def status(self) -> dict:
        """A summary: state ('up', 'down' or 'partial'), daemon PIDs, node states."""
        self._saved = self._load_settings()
        pids = self.daemon_pids() if self._saved else {}
        alive = [n for n, p in pids.items() if p]
        nodes = self.node_states() if pids.get("slurmctld") else {}
        if self._saved and alive and len(alive) == len(pids) and self.client.nodes_ready():
            state = "up"
        elif alive:
            state = "partial"
        else:
            state = "down"
        return {
            "state": state,
            "base": str(self.base),
            "settings": asdict(self._saved) if self._saved else None,
            "daemons": pids,
            "nodes": nodes,
            "env": self.env(),
            "client_prefix": self.client_prefix() if self._saved else [],
            "logs": str(self.log_dir),
        }

    # ------------------------------------------------------------------------------------ up
    def up(self, timeout: float = 60) -> None:
        """Bring the cluster up; a no-op (after a health check) when already up."""
        self._t0 = time.monotonic()
        if os.geteuid() != 0:
            raise LocalSlurmError("the local SLURM cluster must be started as root")
        missing = missing_binaries(self.netns)
        if missing:
            raise LocalSlurmError(f"missing programs: {', '.join(missing)}; run launchers/install_slurm_deps.sh")
        if len(str(self.base)) > MAX_BASE_LENGTH:
            raise LocalSlurmError(f"base dir too long for unix socket paths: {self.base}")
        with self._lock():
            self._saved = self._load_settings()
            requested = self._requested_settings()
            if self._saved is not None and any(self.daemon_pids().values()):
                if self._saved != requested:
                    raise LocalSlurmError(
                        f"a cluster with other settings is running under {self.base}: "
                        f"{asdict(self._saved)} (requested {asdict(requested)}); run down first"
                    )
                if self.is_up():
                    self._log(f"already up under {self.base} (healthy): nothing to do")
                    return
                self._log("cluster is partially up; restarting it")
                self._down_locked(timeout=30)
            self._saved = None
            self._up_locked(requested, timeout)

    def _up_locked(self, s: ClusterSettings, timeout: float) -> None:
        paths = self.paths
        self._log(f"bringing up {s.nodes} node(s){' in network namespaces' if s.netns else ''} under {self.base}")
        for d in DIRS:
            (self.base / d).mkdir(parents=True, exist_ok=True)
        os.chmod(self.base, 0o755)
        if not s.netns:
            ports = s.ports
            check_ports_free(
                [ports.mysql, ports.slurmctld, ports.slurmdbd] + [ports.slurmd + i for i in range(s.nodes)]
            )
        # settings are saved first, so a failed bring-up can still be torn down
        paths.settings_file.write_text(s.to_json())
        self._saved = s
        daemons = self._daemons()
        try:
            if s.netns:
                setup_netns(s, paths, daemons.run, self._log)
            make_fake_gpus(s, paths)
            self._write_configs(s)
            daemons.start_munge()
            daemons.start_mariadb(timeout)
            daemons.start_slurmdbd(timeout)
            daemons.start_slurmctld(timeout)
            daemons.start_slurmds(timeout)
        except BaseException:
            self._log("bring-up failed; tearing down what was started")
            with contextlib.suppress(Exception):
                self._down_locked(timeout=20)
            raise
        self._log(f"up: {', '.join(self.node_names)} idle; export SLURM_CONF={self.conf}")
        if s.netns:
            self._log(f"clients must run under: {' '.join(self.client_prefix())}")

    def _write_configs(self, s: ClusterSettings) -> None:
        paths = self.paths
        host = HostFacts(hostname=short_hostname(), cpus=os.cpu_count() or 1, mem_available_mb=mem_available_mb())
        paths.conf.write_text(render_slurm_conf(s, paths, host))
        paths.gres_conf.write_text(render_gres_conf(s, paths))
        paths.slurmdbd_conf.write_text(render_slurmdbd_conf(s, paths))
        os.chmod(paths.slurmdbd_conf, 0o600)
        self._log("wrote slurm.conf, gres.conf, slurmdbd.conf")

    # ---------------------------------------------------------------------------------- down
    def down(self, timeout: float = 30, purge: bool = False) -> None:
        """Stop everything this cluster started (idempotent). ``purge`` removes base."""
        self._t0 = time.monotonic()
        if not self.base.exists():
            self._log(f"nothing under {self.base}: already down")
            return
        with self._lock():
            self._saved = self._load_settings()
            if self._saved is None:
                self._log(f"no cluster.json under {self.base}: already down")
            else:
                self._down_locked(timeout)
        if purge:
            shutil.rmtree(self.base, ignore_errors=True)
            self._log(f"removed {self.base}")

    def _down_locked(self, timeout: float) -> None:
        s = self._saved
        assert s is not None
        daemons = self._daemons()
        pids = daemons.pids()
        if not any(pids.values()) and not self.cluster_pids():
            self._log("already down")
            was_up = False
        else:
            was_up = True
            self._log(f"stopping cluster under {self.base}")
            if pids.get("slurmctld"):
                self._cancel_all_jobs(timeout)
            order = [f"slurmd-{n}" for n in s.node_names]
            order += ["slurmctld", "slurmdbd", "mariadbd", "munged"]
            for name in order:
                pid = daemons.pid(name)
                if pid is not None:
                    stop_pid(pid, name, self._log)
            for pid in self.cluster_pids():
                stop_pid(pid, proc_comm(pid) or "?", self._log)
        if s.netns:
            teardown_netns(s, daemons.run)
        for pid_file, _ in daemons.pid_files().values():
            pid_file.unlink(missing_ok=True)
        left = self.cluster_pids()
        if left:
            raise LocalSlurmError(f"processes still alive after down: {left}")
        if was_up:
            self._log("down")

    def _cancel_all_jobs(self, timeout: float) -> None:
        if not self.client.ping():
            return
        res = self.run_client(["squeue", "-h", "-o", "%A"])
        jobs = res.stdout.split() if res.returncode == 0 else []
        if not jobs:
            return
        self._log(f"cancelling {len(jobs)} job(s)")
        self.run_client(["scancel", *jobs])

        def done() -> bool:
            r = self.run_client(["squeue", "-h", "-o", "%A"])
            return r.returncode == 0 and not r.stdout.split()

        def no_stepd() -> bool:
            return not any(proc_comm(p) == "slurmstepd" for p in self.cluster_pids())

        try:
            wait_until("jobs to finish after scancel", done, timeout, None)
            wait_until("slurmstepd processes to exit", no_stepd, timeout, None)
        except LocalSlurmError as e:
            self._log(f"warning: {e}; killing remaining processes")


def make_fake_gpus(settings: ClusterSettings, paths: ClusterPaths) -> None:
    """Character devices base/dev/<node>/nvidiaN that gres.conf hands out as the nodes' GPUs."""
    for node in settings.node_names:
        d = paths.dev / node
        d.mkdir(parents=True, exist_ok=True)
        for i in range(settings.gpus_per_node):
            p = d / f"nvidia{i}"
            if p.exists() and stat.S_ISCHR(p.lstat().st_mode):
                continue
            p.unlink(missing_ok=True)
            os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(FAKE_GPU_MAJOR, i))
