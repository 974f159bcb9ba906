"""A private network for the Ray test cluster: each node in a network namespace of its own, as the
local SLURM cluster's nodes are (rllm_sweeps/local_slurm/netns.py builds both).

The nodes' veths join a bridge in a hub namespace; so does one veth from this process's own (the
root) namespace, with the subnet's first address. Why a veth into the root namespace rather than the
clients inside a namespace: the clients are this test process itself (JobSubmissionClient, the GCS
queries) and the sweepers it starts, and a Python process cannot move into a namespace for good; so
the root namespace reaches the nodes like any machine on their network, with nothing wrapped.
Why the bridge is in a hub namespace and not in the root one: frames bridged there would pass the
root namespace's firewall (bridge-nf-call-iptables, often a DROP policy where Docker runs); in the
hub namespace, which has no rules, they pass alone.

Names carry this process's PID and a counter (namespaces, and the one device in the root
namespace), and the /24 is one no route of the root namespace overlaps, chosen under a lock:
parallel test workers and other sessions never collide. :meth:`PrivateNetwork.close` deletes the
namespaces (a veth goes with its namespace, and so does its peer); the nodes' processes are
stopped by their RayNode, by PID, before.
"""

from __future__ import annotations

import fcntl
import ipaddress
import itertools
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from slurm_fixtures import REQUIRE_ENV

from rllm_sweeps.local_slurm.netns import add_bridge, add_namespace, attach, delete_namespace, netns_path
from rllm_sweeps.local_slurm.processes import NETNS_BINARIES, program, run_command, which
from rllm_sweeps.runtime.nodes import RayNode
from rllm_sweeps.runtime.spec import RayClusterSpec

SUBNETS = ipaddress.ip_network("10.251.0.0/16")  # the /24s tried; the SLURM cluster's 10.250.0 is apart
LOCK = Path("/tmp/rllm-ray-netns.lock")  # held while a /24 is chosen and taken
_networks = itertools.count()


def network_unavailable_reason() -> str | None:
    missing = [name for name in NETNS_BINARIES if which(name) is None]
    if missing:
        return f"Ray cluster in network namespaces unavailable: missing {', '.join(missing)} (iproute2, util-linux)"
    if os.geteuid() != 0:
        return "Ray cluster in network namespaces unavailable: needs root"
    return None


def require_network() -> None:
    """Skip (or fail, where RLLM_SWEEPS_REQUIRE_SLURM is set: CI) without root and iproute2."""
    reason = network_unavailable_reason()
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{reason}; {REQUIRE_ENV} is set, so this is an error", pytrace=False)
    pytest.skip(reason)


def _run(args: list[str], check: bool = True) -> subprocess.CompletedProcess:
    return run_command(args, env=dict(os.environ), check=check)


def _taken_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 route's destination in this namespace (a private network's root veth adds one)."""
    out = _run([program("ip"), "-4", "-o", "route", "show", "table", "all"]).stdout
    found = []
    for line in out.splitlines():
        dest = line.split()[0] if line.split()[0] not in ("local", "broadcast", "unicast") else line.split()[1]
        if dest != "default":
            found.append(ipaddress.ip_network(dest, strict=False))
    return found


@dataclass(frozen=True)
class Member:
    """One namespace on the network: its name, its path (for nsenter) and its address."""

    name: str
    address: str

    @property
    def path(self) -> Path:
        return netns_path(self.name)


class PrivateNetwork:
    """A /24 on a bridge in a hub namespace; this process's namespace holds its first address."""

    def __init__(self) -> None:
        self.prefix = f"rr{os.getpid()}n{next(_networks)}"
        self.hub = f"{self.prefix}-hub"
        self.members: list[Member] = []
        with LOCK.open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            taken = _taken_networks()
            free = (s for s in SUBNETS.subnets(new_prefix=24) if not any(s.overlaps(t) for t in taken))
            subnet = next(free, None)
            if subnet is None:
                raise RuntimeError(f"no /24 of {SUBNETS} is free of this machine's routes")
            self.subnet = subnet
            add_namespace(self.hub, _run)
            try:
                add_bridge(self.hub, _run)
                # The root namespace's end: the one device outside the namespaces, so named after them.
                attach(self.hub, "vroot", None, self.prefix, self._cidr(1), _run)
            except BaseException:
                self.close()
                raise
        self.address = self._host(1)

    def _host(self, index: int) -> str:
        return str(self.subnet.network_address + index)

    def _cidr(self, index: int) -> str:
        return f"{self._host(index)}/{self.subnet.prefixlen}"

    def add(self, role: str) -> Member:
        """A new namespace on the network, with the next address."""
        index = len(self.members) + 2
        member = Member(f"{self.prefix}-{role}", self._host(index))
        add_namespace(member.name, _run)
        self.members.append(member)
        attach(self.hub, f"v{index}", member.name, "eth0", self._cidr(index), _run)
        return member

    def close(self) -> None:
        for member in self.members:
            delete_namespace(member.name, _run)
        # The root namespace's end now, not when the kernel has cleaned the hub's namespace up.
        _run([program("ip"), "link", "del", self.prefix], check=False)
        delete_namespace(self.hub, _run)


class NodeInNetns(RayNode):
    """A Ray node whose processes run in ``member``'s network namespace, on its address (nsenter
    execs `ray start`: the node's session stays the PID this RayNode started)."""

    def __init__(self, spec: RayClusterSpec, member: Member, *, head_address: str | None = None) -> None:
        super().__init__(spec, head_address=head_address, node_ip=member.address)
        self.member = member

    def command(self) -> list[str]:
        return [program("nsenter"), f"--net={self.member.path}", *super().command()]
