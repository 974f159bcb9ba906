"""Where a local cluster keeps its state: every path under its one short base directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Created on every `up`; the rest (munge/, mysql/data, spool/<node>, dev/<node>) by whoever needs it.
DIRS = ("etc", "run", "log", "state", "spool", "mysql", "mysql/tmp", "dev")


@dataclass(frozen=True)
class ClusterPaths:
    """Paths of a cluster under ``base`` (absolute; short enough for unix socket paths)."""

    base: Path

    @property
    def etc(self) -> Path:
        return self.base / "etc"

    @property
    def conf(self) -> Path:
        return self.etc / "slurm.conf"

    @property
    def gres_conf(self) -> Path:
        return self.etc / "gres.conf"

    @property
    def slurmdbd_conf(self) -> Path:
        return self.etc / "slurmdbd.conf"

    @property
    def hosts(self) -> Path:
        """/etc/hosts of the nodes (netns: bind-mounted in each node's mount namespace)."""
        return self.etc / "hosts"

    @property
    def run(self) -> Path:
        return self.base / "run"

    @property
    def log_dir(self) -> Path:
        return self.base / "log"

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def spool(self) -> Path:
        return self.base / "spool"

    @property
    def dev(self) -> Path:
        return self.base / "dev"

    @property
    def munge_dir(self) -> Path:
        return self.base / "munge"

    @property
    def munge_socket(self) -> Path:
        return self.munge_dir / "munge.socket.2"

    @property
    def munge_key(self) -> Path:
        return self.munge_dir / "munge.key"

    @property
    def mysql_socket(self) -> Path:
        return self.base / "mysql" / "mysqld.sock"

    @property
    def mysql_datadir(self) -> Path:
        return self.base / "mysql" / "data"

    @property
    def mysql_tmpdir(self) -> Path:
        # MariaDB's own: its temporary tables are named after its pid, and two clusters'
        # servers sharing /tmp once collided during the first start's initialisation.
        return self.base / "mysql" / "tmp"

    @property
    def settings_file(self) -> Path:
        return self.base / "cluster.json"

    @property
    def lock_file(self) -> Path:
        return self.base / ".lock"

    def pid_files(self, node_names: list[str]) -> dict[str, tuple[Path, str]]:
        """daemon name -> (pid file, expected /proc/PID/comm)."""
        out = {
            "munged": (self.run / "munged.pid", "munged"),
            "mariadbd": (self.run / "mariadbd.pid", "mariadbd"),
            "slurmdbd": (self.run / "slurmdbd.pid", "slurmdbd"),
            "slurmctld": (self.run / "slurmctld.pid", "slurmctld"),
        }
        for node in node_names:
            out[f"slurmd-{node}"] = (self.run / f"slurmd-{node}.pid", "slurmd")
        return out
