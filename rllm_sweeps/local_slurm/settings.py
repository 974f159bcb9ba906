"""What a local cluster is: node count, fake GPUs, ports, addresses, namespace names.

A :class:`ClusterSettings` is saved as ``base/cluster.json`` when the cluster comes up; later
``down``/``status`` calls read it back, so they act on the cluster as it was brought up.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

DEFAULT_BASE = Path("/tmp/rllm-slurm")
DEFAULT_PORT_BASE = 16800
CLUSTER_NAME = "rllm"
GPUS_PER_NODE = 4
SUBNET = "10.250.0"  # /24, exists only inside the namespaces created here
MAX_NODES = 50
LOCALHOST = "127.0.0.1"


@dataclass(frozen=True)
class Ports:
    """TCP ports of the daemons (in the root network namespace unless netns)."""

    mysql: int
    slurmctld: int
    slurmdbd: int
    slurmd: int  # of the first node; node i (0-based) listens on slurmd + i

    @classmethod
    def from_base(cls, port_base: int) -> Ports:
        return cls(mysql=port_base + 6, slurmctld=port_base + 17, slurmdbd=port_base + 19, slurmd=port_base + 30)


def ns_prefix_for(base: Path) -> str:
    """Short, per-base prefix of the network namespace names (they live in one global /run/netns)."""
    return "rs" + hashlib.sha1(str(base).encode()).hexdigest()[:6]


@dataclass(frozen=True)
class ClusterSettings:
    """The settings a cluster is brought up with; field order is cluster.json's key order."""

    nodes: int
    netns: bool
    gpus_per_node: int
    port_base: int
    ns_prefix: str

    @classmethod
    def for_base(
        cls, base: Path, *, nodes: int, netns: bool, gpus_per_node: int = GPUS_PER_NODE, port_base: int
    ) -> ClusterSettings:
        return cls(
            nodes=nodes, netns=netns, gpus_per_node=gpus_per_node, port_base=port_base, ns_prefix=ns_prefix_for(base)
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ClusterSettings:
        """Settings from cluster.json; ValueError/TypeError when it is not one."""
        return cls(**json.loads(text))

    @property
    def ports(self) -> Ports:
        return Ports.from_base(self.port_base)

    @property
    def node_names(self) -> list[str]:
        return [f"n{i}" for i in range(1, self.nodes + 1)]

    def node_address(self, node: str) -> str:
        """IP address of node ``nN`` (127.0.0.1 unless netns)."""
        if not self.netns:
            return LOCALHOST
        return f"{SUBNET}.{10 + int(node[1:])}"

    @property
    def controller_address(self) -> str:
        return f"{SUBNET}.1" if self.netns else LOCALHOST

    @property
    def ctl_ns(self) -> str:
        """Network namespace of slurmctld, slurmdbd and MariaDB (netns only)."""
        return f"{self.ns_prefix}-ctl"

    def node_ns(self, node: str) -> str:
        return f"{self.ns_prefix}-{node}"
