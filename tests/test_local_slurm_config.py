"""The local SLURM cluster's configuration files, rendered without root or a cluster (milliseconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rllm_sweeps.local_slurm.config import (
    ACCOUNTING_DB_SQL,
    HostFacts,
    mariadbd_options,
    munged_options,
    render_gres_conf,
    render_hosts,
    render_slurm_conf,
    render_slurmdbd_conf,
)
from rllm_sweeps.local_slurm.layout import ClusterPaths
from rllm_sweeps.local_slurm.settings import DEFAULT_PORT_BASE, ClusterSettings, Ports

BASE = Path("/tmp/rllm-slurm-unit")
PATHS = ClusterPaths(BASE)
HOST = HostFacts(hostname="box", cpus=8, mem_available_mb=10_000)
ONE_NODE = ClusterSettings.for_base(BASE, nodes=1, netns=False, port_base=DEFAULT_PORT_BASE)
TWO_NODES_NETNS = ClusterSettings.for_base(BASE, nodes=2, netns=True, port_base=DEFAULT_PORT_BASE)


def keys(text: str) -> dict[str, str]:
    """The Key=Value lines of a SLURM config file (node and partition lines excluded)."""
    out = {}
    for line in text.splitlines():
        if line.startswith(("#", "NodeName=", "PartitionName=")) or "=" not in line:
            continue
        key, _, value = line.partition("=")
        assert key not in out, f"{key} set twice"
        out[key] = value
    return out


def lines_starting(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


def test_ports_follow_the_port_base() -> None:
    assert Ports.from_base(18900) == Ports(mysql=18906, slurmctld=18917, slurmdbd=18919, slurmd=18930)
    conf = keys(render_slurm_conf(ClusterSettings.for_base(BASE, nodes=1, netns=False, port_base=18900), PATHS, HOST))
    assert (conf["SlurmctldPort"], conf["AccountingStoragePort"]) == ("18917", "18919")


def test_one_node_slurm_conf() -> None:
    text = render_slurm_conf(ONE_NODE, PATHS, HOST)
    conf = keys(text)
    assert conf["ClusterName"] == "rllm"
    assert conf["SlurmctldHost"] == "box(127.0.0.1)"
    assert conf["SlurmctldPort"] == "16817"
    assert conf["AuthInfo"] == f"socket={BASE}/munge/munge.socket.2,cred_expire=5"
    assert conf["StateSaveLocation"] == f"{BASE}/state"
    assert conf["SlurmdSpoolDir"] == f"{BASE}/spool/%n"
    assert conf["SlurmdPidFile"] == f"{BASE}/run/slurmd-%n.pid"
    assert conf["SlurmctldLogFile"] == f"{BASE}/log/slurmctld.log"
    assert conf["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert conf["AccountingStoragePort"] == "16819"
    assert conf["GresTypes"] == "gpu" and conf["AccountingStorageTRES"] == "gres/gpu"
    assert lines_starting(text, "NodeName=") == [
        "NodeName=n1 NodeHostname=box NodeAddr=127.0.0.1 Port=16830 CPUs=8 RealMemory=8500 Gres=gpu:4 State=UNKNOWN"
    ]
    assert lines_starting(text, "PartitionName=") == [
        "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        "PartitionName=short Nodes=ALL MaxTime=5 State=UP",
    ]
    assert text.endswith("State=UP\n")


def test_timers_the_cluster_shortens() -> None:
    conf = keys(render_slurm_conf(ONE_NODE, PATHS, HOST))
    assert conf["SlurmdTimeout"] == "30"  # a silent slurmd's node is DOWN (jobs NODE_FAIL) after 30 s
    assert conf["KillWait"] == "5"
    assert conf["MinJobAge"] == "3600"
    assert conf["ReturnToService"] == "2"
    assert conf["MaxArraySize"] == "1001"
    assert conf["SchedulerParameters"] == "batch_sched_delay=0,sched_interval=1,bf_interval=1"


def test_two_node_netns_slurm_conf() -> None:
    text = render_slurm_conf(TWO_NODES_NETNS, PATHS, HOST)
    assert keys(text)["SlurmctldHost"] == "box(10.250.0.1)"
    # Own addresses, no NodeHostname (each node's hostname is its name), consecutive ports,
    # and the host's memory shared by the nodes.
    assert lines_starting(text, "NodeName=") == [
        "NodeName=n1 NodeAddr=10.250.0.11 Port=16830 CPUs=8 RealMemory=4250 Gres=gpu:4 State=UNKNOWN",
        "NodeName=n2 NodeAddr=10.250.0.12 Port=16831 CPUs=8 RealMemory=4250 Gres=gpu:4 State=UNKNOWN",
    ]


def test_node_memory_has_a_floor() -> None:
    small = HostFacts(hostname="box", cpus=1, mem_available_mb=100)
    (node,) = lines_starting(render_slurm_conf(ONE_NODE, PATHS, small), "NodeName=")
    assert "RealMemory=500 " in node


def test_gres_conf_lists_each_nodes_fake_gpus() -> None:
    assert render_gres_conf(ONE_NODE, PATHS) == f"NodeName=n1 Name=gpu File={BASE}/dev/n1/nvidia[0-3]\n"
    two = ClusterSettings.for_base(BASE, nodes=2, netns=True, gpus_per_node=2, port_base=DEFAULT_PORT_BASE)
    assert render_gres_conf(two, PATHS).splitlines() == [
        f"NodeName=n1 Name=gpu File={BASE}/dev/n1/nvidia[0-1]",
        f"NodeName=n2 Name=gpu File={BASE}/dev/n2/nvidia[0-1]",
    ]
    assert "Gres=gpu:2 " in render_slurm_conf(two, PATHS, HOST)


@pytest.mark.parametrize("settings", [ONE_NODE, TWO_NODES_NETNS], ids=["1-node", "2-nodes-netns"])
def test_slurmdbd_conf_and_mariadb_agree_on_ports(settings: ClusterSettings) -> None:
    dbd = keys(render_slurmdbd_conf(settings, PATHS))
    assert (dbd["DbdAddr"], dbd["DbdPort"]) == ("127.0.0.1", "16819")
    assert (dbd["StorageHost"], dbd["StoragePort"]) == ("127.0.0.1", "16806")
    assert (dbd["StorageUser"], dbd["StoragePass"], dbd["StorageLoc"]) == ("slurm", "slurm", "slurm_acct_db")
    assert dbd["AuthInfo"] == f"socket={BASE}/munge/munge.socket.2"
    assert dbd["PidFile"] == f"{BASE}/run/slurmdbd.pid"
    mariadb = mariadbd_options(settings, PATHS)
    assert mariadb[0] == "--no-defaults"
    assert {"--port=16806", "--bind-address=127.0.0.1", f"--socket={BASE}/mysql/mysqld.sock"} <= set(mariadb)
    assert f"--pid-file={BASE}/run/mariadbd.pid" in mariadb
    assert "IDENTIFIED BY 'slurm'" in ACCOUNTING_DB_SQL and "slurm_acct_db" in ACCOUNTING_DB_SQL
    assert f"--socket={BASE}/munge/munge.socket.2" in munged_options(PATHS)


def test_hosts_file_of_netns_nodes() -> None:
    assert render_hosts(TWO_NODES_NETNS, "box").splitlines() == [
        "127.0.0.1 localhost",
        "10.250.0.1 box",
        "10.250.0.11 n1",
        "10.250.0.12 n2",
    ]


def test_settings_round_trip_and_namespace_names() -> None:
    assert ClusterSettings.from_json(TWO_NODES_NETNS.to_json()) == TWO_NODES_NETNS
    # cluster.json of clusters already up must still load: same keys, same order
    assert list(json.loads(TWO_NODES_NETNS.to_json())) == ["nodes", "netns", "gpus_per_node", "port_base", "ns_prefix"]
    other = ClusterSettings.for_base(Path("/tmp/other"), nodes=2, netns=True, port_base=DEFAULT_PORT_BASE)
    assert TWO_NODES_NETNS.ns_prefix != other.ns_prefix  # namespaces of two clusters never collide
    assert TWO_NODES_NETNS.ctl_ns == f"{TWO_NODES_NETNS.ns_prefix}-ctl"
    assert TWO_NODES_NETNS.node_ns("n2") == f"{TWO_NODES_NETNS.ns_prefix}-n2"
