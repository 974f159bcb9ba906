"""Network namespaces of a multi-node cluster: one per node (own hostname and address), one for the controller.

The nodes' veth pairs join a bridge in the controller namespace, on a private /24 (``SUBNET``) that
exists only inside the namespaces created here; slurmctld, slurmdbd and MariaDB run in the
controller namespace, and so must every client.

The building blocks (a fresh namespace, a bridge in a hub namespace, a veth from a member to it) are
the ones every local test cluster in namespaces uses: the Ray test cluster's too
(tests/ray_network.py), whose hub also takes this process's own namespace as a member.
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
BRIDGE = "br0"  # in the hub namespace: a name of that namespace alone
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


def add_namespace(name: str, run: Run) -> None:
    """A fresh named namespace (a stale one of that name replaced) with its loopback up."""
    ip = program("ip")
    delete_namespace(name, run)
    run([ip, "netns", "add", name])
    run([ip, "-n", name, "link", "set", "lo", "up"])


def delete_namespace(name: str, run: Run) -> None:
    """Delete a named namespace, if there; its veth ends go with it, and so do their peers."""
    if netns_path(name).exists():
        run([program("ip"), "netns", "del", name], check=False)


def add_bridge(hub: str, run: Run, address: str | None = None) -> None:
    """Bridge ``BRIDGE`` in namespace ``hub``, with ``address`` (CIDR) when the hub itself takes part."""
    ip = program("ip")
    run([ip, "-n", hub, "link", "add", BRIDGE, "type", "bridge"])
    if address is not None:
        run([ip, "-n", hub, "addr", "add", address, "dev", BRIDGE])
    run([ip, "-n", hub, "link", "set", BRIDGE, "up"])


def attach(hub: str, port: str, member: str | None, device: str, address: str, run: Run) -> None:
    """A veth from the hub's bridge (its end there named ``port``) to ``member``'s namespace (None:
    this process's own), where its end is ``device`` with ``address`` (CIDR)."""
    ip = program("ip")
    into = member if member is not None else str(os.getpid())  # `ip ... netns PID`: that process's namespace
    run([ip, "-n", hub, "link", "add", port, "type", "veth", "peer", "name", device, "netns", into])
    run([ip, "-n", hub, "link", "set", port, "master", BRIDGE, "up"])
    inside = [ip] if member is None else [ip, "-n", member]
    run([*inside, "addr", "add", address, "dev", device])
    run([*inside, "link", "set", device, "up"])


def setup_netns(settings: ClusterSettings, paths: ClusterPaths, run: Run, log: Callable[[str], None]) -> None:
    """Create the namespaces (replacing stale ones), the bridge, one veth per node, and the nodes' hosts file."""
    ctl = settings.ctl_ns
    for name in namespaces(settings):
        add_namespace(name, run)
    add_bridge(ctl, run, f"{SUBNET}.1/24")
    for node in settings.node_names:
        attach(ctl, f"v{node}", settings.node_ns(node), "eth0", f"{settings.node_address(node)}/24", run)
    paths.hosts.write_text(render_hosts(settings, short_hostname()))
    log(f"network namespaces {ctl} + nodes on {SUBNET}.0/24 ready")


def teardown_netns(settings: ClusterSettings, run: Run) -> None:
    """Delete the nodes' namespaces, then the controller's."""
    for name in [settings.node_ns(n) for n in settings.node_names] + [settings.ctl_ns]:
        delete_namespace(name, run)
