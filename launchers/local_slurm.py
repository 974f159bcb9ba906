"""A real, local SLURM cluster for development, tests and CI.

Runs slurmctld, one or more slurmd, munged, slurmdbd and a private MariaDB on
this host, as root, without systemd. All state (munge key and socket,
slurm.conf, gres.conf, slurmdbd.conf, the MariaDB datadir, spool, logs, pid
files, fake GPU device nodes) lives under one short base directory.

CLI::

    python -m launchers.local_slurm up     [--base DIR] [--nodes N] [--netns]
    python -m launchers.local_slurm down   [--base DIR] [--purge]
    python -m launchers.local_slurm status [--base DIR]
    python -m launchers.local_slurm env    [--base DIR]   # eval "$(... env)"

Python API::

    cluster = LocalSlurm(Path("/tmp/rllm-slurm"), nodes=1, netns=False)
    cluster.up()                 # idempotent; verifies health when already up
    os.environ.update(cluster.env())   # SLURM_CONF for sbatch/sacct/submitit
    cluster.down()               # idempotent

With ``netns=True`` every node runs in its own network namespace (own
hostname ``nN`` and address on a private /24 that exists only inside the
namespaces created here), joined by veth pairs to a bridge in a controller
namespace where slurmctld, slurmdbd and MariaDB run. Clients (sbatch, squeue,
sacct, python using submitit) must then run inside the controller namespace:
prefix commands with :meth:`LocalSlurm.client_prefix` (``nsenter --net=...``).

Install the packages first with ``launchers/install_slurm_deps.sh``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_BASE = Path("/tmp/rllm-slurm")
DEFAULT_PORT_BASE = 16800
CLUSTER_NAME = "rllm"
GPUS_PER_NODE = 4
SUBNET = "10.250.0"  # /24, exists only inside the namespaces created here
MARKER_ENV = "RLLM_LOCAL_SLURM_DAEMON_BASE"  # tags daemons (and their slurmstepd)

REQUIRED_BINARIES = (
    "slurmctld",
    "slurmd",
    "slurmdbd",
    "sbatch",
    "squeue",
    "scontrol",
    "sinfo",
    "sacct",
    "sacctmgr",
    "scancel",
    "munged",
    "munge",
    "unmunge",
    "mungekey",
    "mariadbd",
    "mariadb",
    "mariadb-admin",
    "mariadb-install-db",
    "setsid",
)
NETNS_BINARIES = ("ip", "nsenter", "unshare")
_SBIN_DIRS = ("/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin")


class LocalSlurmError(RuntimeError):
    """Bring-up, health check or tear-down of the local cluster failed."""


def which(name: str) -> str | None:
    """Like shutil.which, but also looks in the sbin directories."""
    found = shutil.which(name)
    if found:
        return found
    for d in _SBIN_DIRS:
        p = Path(d) / name
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def missing_binaries(netns: bool = False) -> list[str]:
    """Names of the programs needed by the local cluster that are not installed."""
    names = REQUIRED_BINARIES + (NETNS_BINARIES if netns else ())
    return [n for n in names if which(n) is None]


def _proc_state(pid: int) -> str | None:
    """Process state letter from /proc/PID/stat, or None when there is no such process."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm may contain spaces/parens: the state follows the last ')'.
    return data[data.rfind(")") + 2 :].split(" ", 1)[0]


def pid_alive(pid: int) -> bool:
    """True when PID exists and is not a zombie (PID 1 here may reap late)."""
    state = _proc_state(pid)
    return state is not None and state not in ("Z", "X")


def _proc_comm(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def _proc_environ_has(pid: int, entry: bytes) -> bool:
    try:
        data = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return entry in data.split(b"\0")


def _all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _mem_available_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    raise LocalSlurmError("cannot read MemAvailable from /proc/meminfo")


def _tail(path: Path, n: int = 15) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return "\n".join("    " + ln for ln in lines[-n:])


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
        if nodes < 1 or nodes > 50:
            raise ValueError(f"nodes must be in 1..50, got {nodes}")
        self.nodes = nodes
        self.netns = netns
        self.gpus_per_node = gpus_per_node
        self.port_base = port_base
        self.verbose = verbose
        self._t0 = time.monotonic()
        self._saved: dict | None = self._load_settings()

    # ------------------------------------------------------------------ paths
    @property
    def conf(self) -> Path:
        return self.base / "etc" / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.base / "munge" / "munge.socket.2"

    @property
    def mysql_socket(self) -> Path:
        return self.base / "mysql" / "mysqld.sock"

    @property
    def log_dir(self) -> Path:
        return self.base / "log"

    @property
    def _settings_file(self) -> Path:
        return self.base / "cluster.json"

    # --------------------------------------------------------------- settings
    def _load_settings(self) -> dict | None:
        try:
            return json.loads(self._settings_file.read_text())
        except (OSError, ValueError):
            return None

    def _requested_settings(self) -> dict:
        return {
            "nodes": self.nodes,
            "netns": self.netns,
            "gpus_per_node": self.gpus_per_node,
            "port_base": self.port_base,
            "ns_prefix": "rs" + hashlib.sha1(str(self.base).encode()).hexdigest()[:6],
        }

    @property
    def settings(self) -> dict:
        """Settings of the cluster as last brought up, else the requested ones."""
        return self._saved if self._saved is not None else self._requested_settings()

    @property
    def node_names(self) -> list[str]:
        return [f"n{i}" for i in range(1, self.settings["nodes"] + 1)]

    def _ports(self, s: dict | None = None) -> dict[str, int]:
        pb = (s or self.settings)["port_base"]
        return {"mysql": pb + 6, "slurmctld": pb + 17, "slurmdbd": pb + 19, "slurmd": pb + 30}

    def _ctl_ns(self, s: dict | None = None) -> str:
        return f"{(s or self.settings)['ns_prefix']}-ctl"

    def _node_ns(self, node: str, s: dict | None = None) -> str:
        return f"{(s or self.settings)['ns_prefix']}-{node}"

    def node_address(self, node: str) -> str:
        """IP address of node ``nN`` (127.0.0.1 unless netns)."""
        if not self.settings["netns"]:
            return "127.0.0.1"
        return f"{SUBNET}.{10 + int(node[1:])}"

    @property
    def controller_address(self) -> str:
        return f"{SUBNET}.1" if self.settings["netns"] else "127.0.0.1"

    # ---------------------------------------------------------------- clients
    def env(self) -> dict[str, str]:
        """Environment variables a client (sbatch, sacct, submitit) needs."""
        return {"SLURM_CONF": str(self.conf)}

    def client_prefix(self) -> list[str]:
        """Command prefix that puts a client where it can reach the controller.

        Empty unless netns; then ``["nsenter", "--net=/run/netns/<ctl>"]``.
        """
        if not self.settings["netns"]:
            return []
        return [which("nsenter") or "nsenter", f"--net=/run/netns/{self._ctl_ns()}"]

    def client_env(self) -> dict[str, str]:
        """os.environ plus :meth:`env`, for running clients via subprocess."""
        return {**os.environ, **self.env()}

    def run_client(
        self, args: list[str], *, check: bool = False, timeout: float = 30, **kw
    ) -> subprocess.CompletedProcess:
        """Run a client command (e.g. ``["sacct", "-j", "1"]``) against this cluster."""
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        return subprocess.run(
            self.client_prefix() + args,
            env=self.client_env(),
            check=check,
            timeout=timeout,
            **kw,
        )

    # ---------------------------------------------------------------- logging
    def _log(self, msg: str) -> None:
        if self.verbose:
            dt = time.monotonic() - self._t0
            print(f"[local_slurm {dt:6.2f}s] {msg}", file=sys.stderr, flush=True)

    # ------------------------------------------------------------ pid files
    def _pid_files(self, s: dict | None = None) -> dict[str, tuple[Path, str]]:
        """name -> (pid file, expected /proc/PID/comm)."""
        s = s or self.settings
        run = self.base / "run"
        out = {
            "munged": (run / "munged.pid", "munged"),
            "mariadbd": (run / "mariadbd.pid", "mariadbd"),
            "slurmdbd": (run / "slurmdbd.pid", "slurmdbd"),
            "slurmctld": (run / "slurmctld.pid", "slurmctld"),
        }
        for i in range(1, s["nodes"] + 1):
            out[f"slurmd-n{i}"] = (run / f"slurmd-n{i}.pid", "slurmd")
        return out

    def _daemon_pid(self, name: str, s: dict | None = None) -> int | None:
        """PID of daemon ``name`` when alive (checked against its comm), else None."""
        pid_file, comm = self._pid_files(s)[name]
        try:
            pid = int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        if pid_alive(pid) and _proc_comm(pid) == comm:
            return pid
        return None

    def daemon_pids(self) -> dict[str, int | None]:
        """Every daemon of the cluster and its live PID (None when not running)."""
        return {name: self._daemon_pid(name) for name in self._pid_files()}

    def cluster_pids(self) -> list[int]:
        """Live PIDs of everything this cluster started.

        The daemons (by pid file), every process started with this cluster's
        marker in its environment (daemons and their slurmstepd), and with
        netns every process inside the cluster's namespaces.
        """
        pids = {p for p in self.daemon_pids().values() if p}
        marker = f"{MARKER_ENV}={self.base}".encode()
        ns_inodes = self._netns_inodes()
        for pid in _all_pids():
            if pid == os.getpid() or not pid_alive(pid):
                continue
            if _proc_environ_has(pid, marker):
                pids.add(pid)
            elif ns_inodes:
                try:
                    if os.stat(f"/proc/{pid}/ns/net").st_ino in ns_inodes:
                        pids.add(pid)
                except OSError:
                    pass
        return sorted(p for p in pids if pid_alive(p))

    # ---------------------------------------------------------------- helpers
    def _daemon_env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "") + ":" + ":".join(_SBIN_DIRS),
            "LANG": "C.UTF-8",
            "HOME": os.environ.get("HOME", "/root"),
            "SLURM_CONF": str(self.conf),
            MARKER_ENV: str(self.base),
        }

    def _run(
        self, args: list[str], *, check: bool = True, timeout: float = 60, env=None, **kw
    ) -> subprocess.CompletedProcess:
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        try:
            res = subprocess.run(args, env=env or self._daemon_env(), timeout=timeout, stdin=subprocess.DEVNULL, **kw)
        except subprocess.TimeoutExpired as e:
            raise LocalSlurmError(f"timed out after {timeout}s: {' '.join(args)}") from e
        if check and res.returncode != 0:
            raise LocalSlurmError(
                f"command failed (rc={res.returncode}): {' '.join(args)}\nstdout: {res.stdout}\nstderr: {res.stderr}"
            )
        return res

    def _ctl_prefix(self) -> list[str]:
        """Prefix for daemons that live with the controller (netns: ctl namespace)."""
        return self.client_prefix()

    def _wait(self, what: str, predicate, timeout: float, log: Path | None, hint=None) -> None:
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            if predicate():
                return
            if time.monotonic() > deadline:
                msg = f"timed out after {timeout:.0f}s waiting for {what}"
                if hint:
                    msg += f"\n{hint()}"
                if log is not None:
                    msg += f"\nsee {log}; last lines:\n{_tail(log)}"
                raise LocalSlurmError(msg)
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    @contextlib.contextmanager
    def _lock(self):
        self.base.mkdir(parents=True, exist_ok=True)
        with open(self.base / ".lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    # ------------------------------------------------------------ health/status
    def _ctl_ping(self) -> bool:
        try:
            res = self.run_client(["scontrol", "ping"], timeout=15)
        except subprocess.TimeoutExpired:
            return False
        return res.returncode == 0 and "UP" in res.stdout

    def node_states(self) -> dict[str, str]:
        """node -> state as sinfo reports it (e.g. 'idle', 'down*'); {} if unreachable."""
        try:
            res = self.run_client(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=15)
        except subprocess.TimeoutExpired:
            return {}
        if res.returncode != 0:
            return {}
        out = {}
        for line in res.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                out[parts[0]] = parts[1]
        return out

    def _nodes_ready(self) -> bool:
        states = self.node_states()
        ok = {"idle", "mixed", "allocated", "completing"}
        return all(states.get(n) in ok for n in self.node_names)

    def is_up(self) -> bool:
        """All daemons alive, controller answers, every node usable."""
        self._saved = self._load_settings()
        if self._saved is None:
            return False
        if not all(self.daemon_pids().values()):
            return False
        return self._ctl_ping() and self._nodes_ready()

    def status(self) -> dict:
        """A summary: state ('up', 'down' or 'partial'), daemon PIDs, node states."""
        self._saved = self._load_settings()
        pids = self.daemon_pids() if self._saved else {}
        alive = [n for n, p in pids.items() if p]
        nodes = self.node_states() if pids.get("slurmctld") else {}
        if self._saved and alive and len(alive) == len(pids) and self._nodes_ready():
            state = "up"
        elif alive:
            state = "partial"
        else:
            state = "down"
        return {
            "state": state,
            "base": str(self.base),
            "settings": self._saved,
            "daemons": pids,
            "nodes": nodes,
            "env": self.env(),
            "client_prefix": self.client_prefix() if self._saved else [],
            "logs": str(self.log_dir),
        }

    # --------------------------------------------------------------------- up
    def up(self, timeout: float = 60) -> None:
        """Bring the cluster up; a no-op (after a health check) when already up."""
        self._t0 = time.monotonic()
        if os.geteuid() != 0:
            raise LocalSlurmError("the local SLURM cluster must be started as root")
        missing = missing_binaries(self.netns)
        if missing:
            raise LocalSlurmError(f"missing programs: {', '.join(missing)}; run launchers/install_slurm_deps.sh")
        if len(str(self.base)) > 60:
            raise LocalSlurmError(f"base dir too long for unix socket paths: {self.base}")
        with self._lock():
            self._saved = self._load_settings()
            requested = self._requested_settings()
            if self._saved is not None and any(self.daemon_pids().values()):
                if self._saved != requested:
                    raise LocalSlurmError(
                        f"a cluster with other settings is running under {self.base}: "
                        f"{self._saved} (requested {requested}); run down first"
                    )
                if self.is_up():
                    self._log(f"already up under {self.base} (healthy): nothing to do")
                    return
                self._log("cluster is partially up; restarting it")
                self._down_locked(timeout=30)
            self._saved = None
            self._up_locked(requested, timeout)

    def _up_locked(self, s: dict, timeout: float) -> None:
        b = self.base
        self._log(f"bringing up {s['nodes']} node(s){' in network namespaces' if s['netns'] else ''} under {b}")
        for d in ("etc", "run", "log", "state", "spool", "mysql", "dev"):
            (b / d).mkdir(parents=True, exist_ok=True)
        os.chmod(b, 0o755)
        self._check_ports_free(s)
        # settings are saved first, so a failed bring-up can still be torn down
        self._settings_file.write_text(json.dumps(s, indent=1) + "\n")
        self._saved = s
        try:
            if s["netns"]:
                self._setup_netns(s)
            self._make_fake_gpus(s)
            self._write_configs(s)
            self._start_munge()
            self._start_mariadb(timeout)
            self._start_slurmdbd(timeout)
            self._start_slurmctld(timeout)
            self._start_slurmds(timeout)
        except BaseException:
            self._log("bring-up failed; tearing down what was started")
            with contextlib.suppress(Exception):
                self._down_locked(timeout=20)
            raise
        self._log(f"up: {', '.join(self.node_names)} idle; export SLURM_CONF={self.conf}")
        if s["netns"]:
            self._log(f"clients must run under: {' '.join(self.client_prefix())}")

    def _check_ports_free(self, s: dict) -> None:
        if s["netns"]:
            return
        ports = self._ports(s)
        wanted = [ports["mysql"], ports["slurmctld"], ports["slurmdbd"]]
        wanted += [ports["slurmd"] + i for i in range(s["nodes"])]
        for port in wanted:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sk:
                sk.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    sk.bind(("127.0.0.1", port))
                except OSError as e:
                    if e.errno == errno.EADDRINUSE:
                        raise LocalSlurmError(
                            f"port {port} on 127.0.0.1 is in use (another local cluster?); "
                            f"use another port_base or --netns"
                        ) from e
                    raise

    def _make_fake_gpus(self, s: dict) -> None:
        for node in self.node_names:
            d = self.base / "dev" / node
            d.mkdir(parents=True, exist_ok=True)
            for i in range(s["gpus_per_node"]):
                p = d / f"nvidia{i}"
                if p.exists() and stat.S_ISCHR(p.lstat().st_mode):
                    continue
                p.unlink(missing_ok=True)
                os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(195, i))

    def _write_configs(self, s: dict) -> None:
        b = self.base
        ports = self._ports(s)
        host = socket.gethostname().split(".")[0]
        cpus = os.cpu_count() or 1
        mem = max(500, int(_mem_available_mb() * 0.85 / s["nodes"]))
        g = s["gpus_per_node"]
        lines = [
            "# generated by launchers/local_slurm.py; rewritten on every `up`",
            f"ClusterName={CLUSTER_NAME}",
            f"SlurmctldHost={host}({self.controller_address})",
            f"SlurmctldPort={ports['slurmctld']}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket},cred_expire=5",
            f"StateSaveLocation={b}/state",
            f"SlurmdSpoolDir={b}/spool/%n",
            f"SlurmctldPidFile={b}/run/slurmctld.pid",
            f"SlurmdPidFile={b}/run/slurmd-%n.pid",
            f"SlurmctldLogFile={b}/log/slurmctld.log",
            f"SlurmdLogFile={b}/log/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "MailProg=/bin/true",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU_Memory",
            "DefMemPerCPU=1000",
            "ReturnToService=2",
            "MpiDefault=none",
            "KillWait=5",
            # A node whose slurmd stops answering is declared down (its jobs: NODE_FAIL) after
            # 30 s, not SLURM's default 300 s: node failures can be tried out here.
            "SlurmdTimeout=30",
            "MinJobAge=3600",
            "MaxArraySize=1001",
            "SchedulerParameters=batch_sched_delay=0,sched_interval=1,bf_interval=1",
            "GresTypes=gpu",
            "AccountingStorageType=accounting_storage/slurmdbd",
            "AccountingStorageHost=localhost",
            f"AccountingStoragePort={ports['slurmdbd']}",
            f"AccountingStoragePass={self.munge_socket}",
            "AccountingStorageTRES=gres/gpu",
            "JobCompType=jobcomp/none",
        ]
        for i, node in enumerate(self.node_names):
            if s["netns"]:
                where = f"NodeAddr={self.node_address(node)}"
            else:
                where = f"NodeHostname={host} NodeAddr=127.0.0.1"
            lines.append(
                f"NodeName={node} {where} Port={ports['slurmd'] + i} CPUs={cpus} "
                f"RealMemory={mem} Gres=gpu:{g} State=UNKNOWN"
            )
        lines += [
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "PartitionName=short Nodes=ALL MaxTime=5 State=UP",
        ]
        self.conf.write_text("\n".join(lines) + "\n")
        gres = [f"NodeName={node} Name=gpu File={b}/dev/{node}/nvidia[0-{g - 1}]" for node in self.node_names]
        (b / "etc" / "gres.conf").write_text("\n".join(gres) + "\n")
        dbd = b / "etc" / "slurmdbd.conf"
        dbd.write_text(
            "\n".join(
                [
                    "AuthType=auth/munge",
                    f"AuthInfo=socket={self.munge_socket}",
                    "DbdHost=localhost",
                    "DbdAddr=127.0.0.1",
                    f"DbdPort={ports['slurmdbd']}",
                    "SlurmUser=root",
                    f"PidFile={b}/run/slurmdbd.pid",
                    f"LogFile={b}/log/slurmdbd.log",
                    "DebugLevel=info",
                    "StorageType=accounting_storage/mysql",
                    "StorageHost=127.0.0.1",
                    f"StoragePort={ports['mysql']}",
                    "StorageUser=slurm",
                    "StoragePass=slurm",
                    "StorageLoc=slurm_acct_db",
                ]
            )
            + "\n"
        )
        os.chmod(dbd, 0o600)
        self._log("wrote slurm.conf, gres.conf, slurmdbd.conf")

    # ------------------------------------------------------------------ munge
    def _start_munge(self) -> None:
        d = self.base / "munge"
        d.mkdir(exist_ok=True)
        os.chmod(d, 0o755)  # munged refuses a socket dir that is not 0755
        key = d / "munge.key"
        if not key.exists():
            self._run([which("mungekey") or "mungekey", "-c", "-k", str(key)])
        os.chmod(key, 0o600)
        if self._daemon_pid("munged") is None:
            for stale in (self.munge_socket, Path(f"{self.munge_socket}.lock")):
                stale.unlink(missing_ok=True)
            self._run(
                [
                    which("munged") or "munged",
                    f"--socket={self.munge_socket}",
                    f"--key-file={key}",
                    f"--pid-file={self.base}/run/munged.pid",
                    f"--log-file={self.log_dir}/munged.log",
                    f"--seed-file={d}/munged.seed",
                ]
            )
        sock = str(self.munge_socket)

        def ok() -> bool:
            cred = subprocess.run(["munge", "-n", "-S", sock], capture_output=True, env=self._daemon_env())
            if cred.returncode != 0:
                return False
            res = subprocess.run(
                ["unmunge", "-S", sock],
                input=cred.stdout,
                capture_output=True,
                env=self._daemon_env(),
            )
            return res.returncode == 0

        self._wait("munged", ok, 15, self.log_dir / "munged.log")
        self._log(f"munged up (pid {self._daemon_pid('munged')})")

    # ---------------------------------------------------------------- mariadb
    def _mysql_client(self, prog: str) -> list[str]:
        return [which(prog) or prog, "--no-defaults", f"--socket={self.mysql_socket}", "-uroot"]

    def _start_mariadb(self, timeout: float) -> None:
        datadir = self.base / "mysql" / "data"
        log = self.log_dir / "mariadb.log"
        if not (datadir / "mysql").is_dir():
            self._log("initialising MariaDB datadir (first start only)")
            shutil.rmtree(datadir, ignore_errors=True)
            self._run(
                [
                    which("mariadb-install-db") or "mariadb-install-db",
                    "--no-defaults",
                    f"--datadir={datadir}",
                    "--user=root",
                    "--auth-root-authentication-method=socket",
                    "--skip-test-db",
                    "--skip-name-resolve",
                ],
                timeout=120,
            )
        if self._daemon_pid("mariadbd") is None:
            self.mysql_socket.unlink(missing_ok=True)
            port = self._ports()["mysql"]
            self._run(
                [which("setsid") or "setsid", "-f"]
                + self._ctl_prefix()
                + [
                    which("mariadbd") or "mariadbd",
                    "--no-defaults",
                    f"--datadir={datadir}",
                    f"--socket={self.mysql_socket}",
                    f"--port={port}",
                    "--bind-address=127.0.0.1",
                    f"--pid-file={self.base}/run/mariadbd.pid",
                    f"--log-error={log}",
                    "--user=root",
                    "--skip-name-resolve",
                    "--skip-log-bin",
                    "--performance-schema=OFF",
                    "--innodb-buffer-pool-size=64M",
                    "--innodb-log-file-size=16M",
                    "--innodb-lock-wait-timeout=900",
                    "--max-connections=200",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                capture_output=False,
            )

        def ok() -> bool:
            res = subprocess.run(
                self._mysql_client("mariadb-admin") + ["ping"],
                capture_output=True,
                env=self._daemon_env(),
            )
            return res.returncode == 0

        self._wait("MariaDB", ok, timeout, log)
        sql = (
            "CREATE DATABASE IF NOT EXISTS slurm_acct_db; "
            "CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurm'; "
            "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm'; "
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost'; "
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; "
            "FLUSH PRIVILEGES;"
        )
        self._run(self._mysql_client("mariadb") + ["-e", sql])
        self._log(f"MariaDB up (pid {self._daemon_pid('mariadbd')}, port {self._ports()['mysql']})")

    # --------------------------------------------------------------- slurmdbd
    def _start_slurmdbd(self, timeout: float) -> None:
        log = self.log_dir / "slurmdbd.log"
        if self._daemon_pid("slurmdbd") is None:
            self._run(self._ctl_prefix() + [which("slurmdbd") or "slurmdbd"])

        def ok() -> bool:
            if self._daemon_pid("slurmdbd") is None:
                return False
            res = self.run_client(["sacctmgr", "-n", "-P", "list", "cluster", "format=cluster"])
            return res.returncode == 0

        self._wait("slurmdbd", ok, timeout, log)
        self._log(f"slurmdbd up (pid {self._daemon_pid('slurmdbd')})")

    # -------------------------------------------------------------- slurmctld
    def _start_slurmctld(self, timeout: float) -> None:
        log = self.log_dir / "slurmctld.log"
        if self._daemon_pid("slurmctld") is None:
            self._run(self._ctl_prefix() + [which("slurmctld") or "slurmctld", "-f", str(self.conf)])

        def ok() -> bool:
            return self._daemon_pid("slurmctld") is not None and self._ctl_ping()

        self._wait("slurmctld (scontrol ping)", ok, timeout, log)
        self._log(f"slurmctld up (pid {self._daemon_pid('slurmctld')})")

    # ----------------------------------------------------------------- slurmd
    def _start_slurmds(self, timeout: float) -> None:
        s = self.settings
        slurmd = which("slurmd") or "slurmd"
        for node in self.node_names:
            if self._daemon_pid(f"slurmd-{node}") is not None:
                continue
            (self.base / "spool" / node).mkdir(parents=True, exist_ok=True)
            if s["netns"]:
                hosts = self.base / "etc" / "hosts"
                script = f"mount --bind {hosts} /etc/hosts && hostname {node} && exec {slurmd} -f {self.conf} -N {node}"
                cmd = [
                    which("nsenter") or "nsenter",
                    f"--net=/run/netns/{self._node_ns(node)}",
                    which("unshare") or "unshare",
                    "--uts",
                    "--mount",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                    script,
                ]
            else:
                cmd = [slurmd, "-f", str(self.conf), "-N", node]
            self._run(cmd)
        logs = self.log_dir / f"slurmd-{self.node_names[0]}.log"

        def hint() -> str:
            res = self.run_client(["sinfo", "-R", "-N"])
            return f"node states: {self.node_states()}\n{res.stdout}"

        resumed: list[bool] = []
        started = time.monotonic()

        def ready() -> bool:
            if self._nodes_ready():
                return True
            # Nodes drained/down in the saved state (e.g. after a crash) stay so across
            # restarts: resume them once, so that `up` means usable.
            if not resumed and time.monotonic() - started > 2:
                states = self.node_states()
                bad = [n for n, st in states.items() if st.startswith(("drain", "down")) and "*" not in st]
                if bad:
                    self._log(f"resuming nodes {bad} (states {states})")
                    self.run_client(["scontrol", "update", f"nodename={','.join(bad)}", "state=resume"])
                    resumed.append(True)
            return False

        self._wait(f"nodes {','.join(self.node_names)} idle (sinfo)", ready, timeout, logs, hint)
        pids = {n: self._daemon_pid(f"slurmd-{n}") for n in self.node_names}
        self._log(f"slurmd up: {pids}")

    # ------------------------------------------------------------------ netns
    def _netns_path(self, name: str) -> Path:
        return Path("/run/netns") / name

    def _netns_inodes(self) -> set[int]:
        s = self._saved
        if not s or not s.get("netns"):
            return set()
        names = [self._ctl_ns(s)] + [self._node_ns(n, s) for n in self.node_names]
        out = set()
        for n in names:
            try:
                out.add(os.stat(self._netns_path(n)).st_ino)
            except OSError:
                pass
        return out

    def _setup_netns(self, s: dict) -> None:
        ip = which("ip") or "ip"
        ctl = self._ctl_ns(s)
        for name in [ctl] + [self._node_ns(n, s) for n in self.node_names]:
            if self._netns_path(name).exists():
                self._run([ip, "netns", "del", name], check=False)
            self._run([ip, "netns", "add", name])
            self._run([ip, "-n", name, "link", "set", "lo", "up"])
        self._run([ip, "-n", ctl, "link", "add", "br0", "type", "bridge"])
        self._run([ip, "-n", ctl, "addr", "add", f"{SUBNET}.1/24", "dev", "br0"])
        self._run([ip, "-n", ctl, "link", "set", "br0", "up"])
        host = socket.gethostname().split(".")[0]
        hosts = ["127.0.0.1 localhost", f"{SUBNET}.1 {host}"]
        for node in self.node_names:
            ns = self._node_ns(node, s)
            veth = f"v{node}"
            addr = self.node_address(node)
            self._run([ip, "-n", ctl, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
            self._run([ip, "-n", ctl, "link", "set", veth, "master", "br0", "up"])
            self._run([ip, "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0"])
            self._run([ip, "-n", ns, "link", "set", "eth0", "up"])
            hosts.append(f"{addr} {node}")
        (self.base / "etc" / "hosts").write_text("\n".join(hosts) + "\n")
        self._log(f"network namespaces {ctl} + nodes on {SUBNET}.0/24 ready")

    def _teardown_netns(self, s: dict) -> None:
        ip = which("ip") or "ip"
        for name in [self._node_ns(n, s) for n in self.node_names] + [self._ctl_ns(s)]:
            if self._netns_path(name).exists():
                self._run([ip, "netns", "del", name], check=False)

    # ------------------------------------------------------------------- down
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
        pids = self.daemon_pids()
        if not any(pids.values()) and not self.cluster_pids():
            self._log("already down")
            was_up = False
        else:
            was_up = True
            self._log(f"stopping cluster under {self.base}")
            if pids.get("slurmctld"):
                self._cancel_all_jobs(timeout)
            order = [f"slurmd-{n}" for n in self.node_names]
            order += ["slurmctld", "slurmdbd", "mariadbd", "munged"]
            for name in order:
                pid = self._daemon_pid(name)
                if pid is not None:
                    self._stop_pid(pid, name)
            stragglers = self.cluster_pids()
            for pid in stragglers:
                self._stop_pid(pid, _proc_comm(pid) or "?")
        if s.get("netns"):
            self._teardown_netns(s)
        for pid_file, _ in self._pid_files(s).values():
            pid_file.unlink(missing_ok=True)
        left = self.cluster_pids()
        if left:
            raise LocalSlurmError(f"processes still alive after down: {left}")
        if was_up:
            self._log("down")

    def _cancel_all_jobs(self, timeout: float) -> None:
        if not self._ctl_ping():
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
            return not any(_proc_comm(p) == "slurmstepd" for p in self.cluster_pids())

        try:
            self._wait("jobs to finish after scancel", done, timeout, None)
            self._wait("slurmstepd processes to exit", no_stepd, timeout, None)
        except LocalSlurmError as e:
            self._log(f"warning: {e}; killing remaining processes")

    def kill_slurmd(self, node: str = "n1") -> int:
        """SIGKILL one node's slurmd (by its PID file), as a crashed node daemon; returns its PID."""
        pid = self._daemon_pid(f"slurmd-{node}")
        if pid is None:
            raise LocalSlurmError(f"slurmd of {node} is not running")
        os.kill(pid, signal.SIGKILL)
        self._log(f"killed slurmd-{node} (pid {pid})")
        return pid

    def restart_slurmds(self, timeout: float = 120) -> None:
        """Start every slurmd that is not running and wait until all nodes are idle again."""
        self._start_slurmds(timeout)

    def _stop_pid(self, pid: int, name: str) -> None:
        for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if not pid_alive(pid):
                    self._log(f"stopped {name} (pid {pid})")
                    return
                time.sleep(0.05)
            if sig == signal.SIGTERM:
                self._log(f"{name} (pid {pid}) ignored SIGTERM; sending SIGKILL")
        if pid_alive(pid):
            raise LocalSlurmError(f"could not stop {name} (pid {pid})")


# --------------------------------------------------------------------------- CLI
def _main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m launchers.local_slurm",
        description="A real local SLURM cluster (slurmctld, slurmd, slurmdbd+MariaDB, munge).",
    )
    p.add_argument("command", choices=["up", "down", "status", "env"])
    p.add_argument("--base", type=Path, default=DEFAULT_BASE, help=f"state dir [{DEFAULT_BASE}]")
    p.add_argument("--nodes", type=int, default=1, help="number of slurmd nodes (up) [1]")
    p.add_argument("--netns", action="store_true", help="one network namespace per node (up; needs root)")
    p.add_argument("--port-base", type=int, default=DEFAULT_PORT_BASE, help="ports (up)")
    p.add_argument("--timeout", type=float, default=60, help="seconds per wait [60]")
    p.add_argument("--purge", action="store_true", help="down: also delete the base dir")
    p.add_argument("-q", "--quiet", action="store_true")
    a = p.parse_args(argv)
    cluster = LocalSlurm(a.base, nodes=a.nodes, netns=a.netns, port_base=a.port_base, verbose=not a.quiet)
    try:
        if a.command == "up":
            cluster.up(timeout=a.timeout)
            for k, v in cluster.env().items():
                print(f"export {k}={v}")
            if cluster.client_prefix():
                print(f"# run clients under: {' '.join(cluster.client_prefix())}")
        elif a.command == "down":
            cluster.down(timeout=a.timeout, purge=a.purge)
        elif a.command == "env":
            for k, v in cluster.env().items():
                print(f"export {k}={v}")
            if cluster.client_prefix():
                print(f"run clients under: {' '.join(cluster.client_prefix())}", file=sys.stderr)
        else:
            st = cluster.status()
            print(f"state:  {st['state']}")
            print(f"base:   {st['base']}")
            if st["settings"]:
                print(f"nodes:  {st['settings']['nodes']} (netns={st['settings']['netns']}; as last brought up)")
            for name, pid in st["daemons"].items():
                print(f"  {name:12s} {pid if pid else '-'}")
            for node, state in st["nodes"].items():
                print(f"  node {node}: {state}")
            print(f"logs:   {st['logs']}")
            for k, v in st["env"].items():
                print(f"export {k}={v}")
            if st["client_prefix"]:
                print(f"run clients under: {' '.join(st['client_prefix'])}")
            return 0 if st["state"] == "up" else 1
    except LocalSlurmError as e:
        print(f"local_slurm: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_main())
