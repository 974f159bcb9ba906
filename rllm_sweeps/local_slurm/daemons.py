"""Starting each daemon of a local cluster (munged, MariaDB, slurmdbd, slurmctld, slurmd) and waiting until it serves.

Every daemon starts with ``MARKER_ENV`` in its environment, which its children (slurmstepd, the
jobs) inherit: that is how ``down`` finds everything the cluster started, and only that.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rllm_sweeps.local_slurm.client import SlurmClient
from rllm_sweeps.local_slurm.config import ACCOUNTING_DB_SQL, mariadb_install_options, mariadbd_options, munged_options
from rllm_sweeps.local_slurm.layout import ClusterPaths
from rllm_sweeps.local_slurm.netns import netns_path
from rllm_sweeps.local_slurm.processes import SBIN_DIRS, program, read_pid_file, run_command, wait_until
from rllm_sweeps.local_slurm.settings import ClusterSettings

MARKER_ENV = "RLLM_LOCAL_SLURM_DAEMON_BASE"  # tags daemons (and their slurmstepd)


def daemon_env(paths: ClusterPaths) -> dict[str, str]:
    """The whole environment of the daemons and their helper commands."""
    return {
        "PATH": os.environ.get("PATH", "") + ":" + ":".join(SBIN_DIRS),
        "LANG": "C.UTF-8",
        "HOME": os.environ.get("HOME", "/root"),
        "SLURM_CONF": str(paths.conf),
        MARKER_ENV: str(paths.base),
    }


@dataclass(frozen=True)
class Daemons:
    """The daemons of the cluster with ``settings`` under ``paths``: their PIDs, and how each starts."""

    settings: ClusterSettings
    paths: ClusterPaths
    log: Callable[[str], None]

    @property
    def client(self) -> SlurmClient:
        return SlurmClient(self.settings, self.paths)

    def run(self, args: list[str], *, check: bool = True, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        """Run a command in the daemons' environment (LocalSlurmError when it fails)."""
        return run_command(args, env=daemon_env(self.paths), check=check, timeout=timeout, **kw)

    def pid_files(self) -> dict[str, tuple[Path, str]]:
        return self.paths.pid_files(self.settings.node_names)

    def pid(self, name: str) -> int | None:
        """PID of daemon ``name`` when alive (checked against its comm), else None."""
        pid_file, comm = self.pid_files()[name]
        return read_pid_file(pid_file, comm)

    def pids(self) -> dict[str, int | None]:
        """Every daemon of the cluster and its live PID (None when not running)."""
        return {name: self.pid(name) for name in self.pid_files()}

    def _probe(self, args: list[str], **kw) -> bool:
        """True when a check command (munge, mariadb-admin ping) succeeds."""
        return subprocess.run(args, capture_output=True, env=daemon_env(self.paths), **kw).returncode == 0

    # ------------------------------------------------------------------------------------ munge
    def start_munge(self) -> None:
        d = self.paths.munge_dir
        d.mkdir(exist_ok=True)
        os.chmod(d, 0o755)  # munged refuses a socket dir that is not 0755
        key = self.paths.munge_key
        if not key.exists():
            self.run([program("mungekey"), "-c", "-k", str(key)])
        os.chmod(key, 0o600)
        sock = self.paths.munge_socket
        if self.pid("munged") is None:
            for stale in (sock, Path(f"{sock}.lock")):
                stale.unlink(missing_ok=True)
            self.run([program("munged"), *munged_options(self.paths)])

        def ok() -> bool:
            cred = subprocess.run(["munge", "-n", "-S", str(sock)], capture_output=True, env=daemon_env(self.paths))
            return cred.returncode == 0 and self._probe(["unmunge", "-S", str(sock)], input=cred.stdout)

        wait_until("munged", ok, 15, self.paths.log_dir / "munged.log")
        self.log(f"munged up (pid {self.pid('munged')})")

    # ---------------------------------------------------------------------------------- mariadb
    def _mysql_client(self, prog: str) -> list[str]:
        return [program(prog), "--no-defaults", f"--socket={self.paths.mysql_socket}", "-uroot"]

    def start_mariadb(self, timeout: float) -> None:
        datadir = self.paths.mysql_datadir
        log = self.paths.log_dir / "mariadb.log"
        # Initialised once; a first start that failed half-way (its marker never written) is
        # started over rather than served from a datadir without its system tables.
        initialised = datadir / ".initialised"
        if not initialised.exists():
            self.log("initialising MariaDB datadir (first start only)")
            shutil.rmtree(datadir, ignore_errors=True)
            self.run([program("mariadb-install-db"), *mariadb_install_options(self.paths)], timeout=120)
            initialised.touch()
        if self.pid("mariadbd") is None:
            self.paths.mysql_socket.unlink(missing_ok=True)
            self.run(
                [
                    program("setsid"),
                    "-f",
                    *self.client.prefix(),
                    program("mariadbd"),
                    *mariadbd_options(self.settings, self.paths),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                capture_output=False,
            )
        wait_until("MariaDB", lambda: self._probe(self._mysql_client("mariadb-admin") + ["ping"]), timeout, log)
        self.run(self._mysql_client("mariadb") + ["-e", ACCOUNTING_DB_SQL])
        self.log(f"MariaDB up (pid {self.pid('mariadbd')}, port {self.settings.ports.mysql})")

    # ------------------------------------------------------------------------- slurmdbd, slurmctld
    def start_slurmdbd(self, timeout: float) -> None:
        if self.pid("slurmdbd") is None:
            self.run(self.client.prefix() + [program("slurmdbd")])

        def ok() -> bool:
            if self.pid("slurmdbd") is None:
                return False
            return self.client.run(["sacctmgr", "-n", "-P", "list", "cluster", "format=cluster"]).returncode == 0

        wait_until("slurmdbd", ok, timeout, self.paths.log_dir / "slurmdbd.log")
        self.log(f"slurmdbd up (pid {self.pid('slurmdbd')})")

    def start_slurmctld(self, timeout: float) -> None:
        if self.pid("slurmctld") is None:
            self.run(self.client.prefix() + [program("slurmctld"), "-f", str(self.paths.conf)])

        def ok() -> bool:
            return self.pid("slurmctld") is not None and self.client.ping()

        wait_until("slurmctld (scontrol ping)", ok, timeout, self.paths.log_dir / "slurmctld.log")
        self.log(f"slurmctld up (pid {self.pid('slurmctld')})")

    # ----------------------------------------------------------------------------------- slurmd
    def _slurmd_command(self, node: str) -> list[str]:
        slurmd, conf = program("slurmd"), self.paths.conf
        if not self.settings.netns:
            return [slurmd, "-f", str(conf), "-N", node]
        # Own UTS and mount namespaces: the node's hostname, and the cluster's hosts file as /etc/hosts.
        script = f"mount --bind {self.paths.hosts} /etc/hosts && hostname {node} && exec {slurmd} -f {conf} -N {node}"
        return [
            program("nsenter"),
            f"--net={netns_path(self.settings.node_ns(node))}",
            program("unshare"),
            "--uts",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
        ]

    def start_slurmds(self, timeout: float) -> None:
        """Start every slurmd that is not running and wait until every node is usable."""
        nodes = self.settings.node_names
        for node in nodes:
            if self.pid(f"slurmd-{node}") is not None:
                continue
            (self.paths.spool / node).mkdir(parents=True, exist_ok=True)
            self.run(self._slurmd_command(node))
        client = self.client

        def hint() -> str:
            res = client.run(["sinfo", "-R", "-N"])
            return f"node states: {client.node_states()}\n{res.stdout}"

        resumed: list[bool] = []
        started = time.monotonic()

        def ready() -> bool:
            if client.nodes_ready():
                return True
            # Nodes drained/down in the saved state (e.g. after a crash) stay so across
            # restarts: resume them once, so that `up` means usable.
            if not resumed and time.monotonic() - started > 2:
                states = client.node_states()
                bad = [n for n, st in states.items() if st.startswith(("drain", "down")) and "*" not in st]
                if bad:
                    self.log(f"resuming nodes {bad} (states {states})")
                    client.run(["scontrol", "update", f"nodename={','.join(bad)}", "state=resume"])
                    resumed.append(True)
            return False

        wait_until(
            f"nodes {','.join(nodes)} idle (sinfo)", ready, timeout, self.paths.log_dir / f"slurmd-{nodes[0]}.log", hint
        )
        pids = {n: self.pid(f"slurmd-{n}") for n in nodes}
        self.log(f"slurmd up: {pids}")
