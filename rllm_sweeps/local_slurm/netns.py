"""Network namespaces of a multi-node cluster: one per node (own hostname and address), one for the controller.

The nodes' veth pairs join a bridge in the controller namespace, on a private /24 (``SUBNET``) that
exists only inside the namespaces created here; slurmctld, slurmdbd and MariaDB run in the
controller namespace, and so must every client.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from rllm_sweeps.local_slurm.config import render_hosts
from rllm_sweeps.local_slurm.layout import ClusterPaths
from rllm_sweeps.local_slurm.processes import program, short_hostname
from rllm_sweeps.local_slurm.settings import SUBNET, ClusterSettings

NETNS_DIR = Path("/run/netns")  # where `ip netns` keeps named namespaces
Run = Callable[..., subprocess.CompletedProcess]


def netns_path(name: str) -> Path:
    return NETNS_DIR / name


def namespaces(settings: ClusterSettings) -> list[str]:
    """The controller's namespace, then each node's."""
    return [settings.ctl_ns] + [settings.node_ns(n) for n in settings.node_names]


def netns_inodes(settings: ClusterSettings | None) -> set[int]:
    """Inodes of the cluster's namespaces (a process is inside one when its /proc/PID/ns/net matches)."""
    if not settings or not settings.netns:
        return set()
    out = set()
    for name in namespaces(settings):
        try:
            out.add(os.stat(netns_path(name)).st_ino)
        except OSError:
            pass
    return out


def setup_netns(settings: ClusterSettings, paths: ClusterPaths, run: Run, log: Callable[[str], None]) -> None:
    """Create the namespaces (replacing stale ones), the bridge, one veth per node, and the nodes' hosts file."""
    ip = program("ip")
    ctl = settings.ctl_ns
    for name in namespaces(settings):
        if netns_path(name).exists():
            run([ip, "netns", "del", name], check=False)
        run([ip, "netns", "add", name])
        run([ip, "-n", name, "link", "set", "lo", "up"])
    run([ip, "-n", ctl, "link", "add", "br0", "type", "bridge"])
    run([ip, "-n", ctl, "addr", "add", f"{SUBNET}.1/24", "dev", "br0"])
    run([ip, "-n", ctl, "link", "set", "br0", "up"])
    for node in settings.node_names:
        ns = settings.node_ns(node)
        veth = f"v{node}"
        addr = settings.node_address(node)
        run([ip, "-n", ctl, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
        run([ip, "-n", ctl, "link", "set", veth, "master", "br0", "up"])
        run([ip, "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0"])
        run([ip, "-n", ns, "link", "set", "eth0", "up"])
    paths.hosts.write_text(render_hosts(settings, short_hostname()))
    log(f"network namespaces {ctl} + nodes on {SUBNET}.0/24 ready")


def teardown_netns(settings: ClusterSettings, run: Run) -> None:
    """Delete the nodes' namespaces, then the controller's."""
    ip = program("ip")
    for name in [settings.node_ns(n) for n in settings.node_names] + [settings.ctl_ns]:
        if netns_path(name).exists():
            run([ip, "netns", "del", name], check=False)
