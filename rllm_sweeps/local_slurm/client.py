"""SLURM's client programs (sbatch, squeue, sinfo, scontrol, sacct) pointed at a local cluster."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from rllm_sweeps.local_slurm.layout import ClusterPaths
from rllm_sweeps.local_slurm.netns import netns_path
from rllm_sweeps.local_slurm.processes import program
from rllm_sweeps.local_slurm.settings import ClusterSettings

USABLE_NODE_STATES = frozenset({"idle", "mixed", "allocated", "completing"})


@dataclass(frozen=True)
class SlurmClient:
    """How a client reaches the cluster: SLURM_CONF, and with netns the controller's namespace."""

    settings: ClusterSettings
    paths: ClusterPaths

    def env(self) -> dict[str, str]:
        """Environment variables a client (sbatch, sacct, submitit) needs."""
        return {"SLURM_CONF": str(self.paths.conf)}

    def prefix(self) -> list[str]:
        """Command prefix that puts a client where it can reach the controller.

        Empty unless netns; then ``["nsenter", "--net=/run/netns/<ctl>"]``.
        """
        if not self.settings.netns:
            return []
        return [program("nsenter"), f"--net={netns_path(self.settings.ctl_ns)}"]

    def full_env(self) -> dict[str, str]:
        """os.environ plus :meth:`env`, for running clients via subprocess."""
        return {**os.environ, **self.env()}

    def run(self, args: list[str], *, check: bool = False, timeout: float = 30, **kw) -> subprocess.CompletedProcess:
        """Run a client command (e.g. ``["sacct", "-j", "1"]``) against this cluster."""
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        return subprocess.run(self.prefix() + args, env=self.full_env(), check=check, timeout=timeout, **kw)

    def ping(self) -> bool:
        """True when slurmctld answers ``scontrol ping``."""
        try:
            res = self.run(["scontrol", "ping"], timeout=15)
        except subprocess.TimeoutExpired:
            return False
        return res.returncode == 0 and "UP" in res.stdout

    def node_states(self) -> dict[str, str]:
        """node -> state as sinfo reports it (e.g. 'idle', 'down*'); {} if unreachable."""
        try:
            res = self.run(["sinfo", "-h", "-N", "-o", "%N %T"], timeout=15)
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

    def nodes_ready(self) -> bool:
        """Every node of the cluster can run jobs."""
        states = self.node_states()
        return all(states.get(n) in USABLE_NODE_STATES for n in self.settings.node_names)
