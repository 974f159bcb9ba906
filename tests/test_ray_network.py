"""tests/ray_network.py on real network namespaces (root and iproute2; skipped without, failed in CI):
this process and every member reach each other over the bridge, two networks of one process never
share a /24 or a name, and nothing of a network is left once it is closed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

import pytest
from ray_network import PrivateNetwork, require_network

from rllm_sweeps.local_slurm.netns import netns_path
from rllm_sweeps.local_slurm.processes import proc_net_ns_inode, program

PORT = 18_999  # in a member's own namespace: no other process there to take it


def links() -> str:
    return subprocess.run([program("ip"), "-o", "link"], capture_output=True, text=True, check=True).stdout


def fetch_in(member_path: str | None, url: str) -> str:
    """GET `url` from a process in the namespace at `member_path` (None: this one)."""
    code = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=5).status)"
    prefix = [program("nsenter"), f"--net={member_path}"] if member_path else []
    return subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True, timeout=30).stdout


@pytest.fixture
def network() -> Iterator[PrivateNetwork]:
    require_network()
    net = PrivateNetwork()
    try:
        yield net
    finally:
        net.close()


def test_this_process_and_each_member_reach_a_member_over_the_private_bridge(network: PrivateNetwork) -> None:
    head, worker = network.add("head"), network.add("worker")
    server = subprocess.Popen(
        [program("nsenter"), f"--net={head.path}", sys.executable, "-m", "http.server", "-b", head.address, str(PORT)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://{head.address}:{PORT}/"
        deadline = time.monotonic() + 30
        while True:
            try:
                assert urllib.request.urlopen(url, timeout=2).status == 200  # from here: the root's veth
                break
            except OSError:
                assert time.monotonic() < deadline, "nothing answered on the head's address"
                time.sleep(0.2)
        assert fetch_in(str(worker.path), url).strip() == "200"  # member to member, through the hub's bridge
        assert proc_net_ns_inode(server.pid) == os.stat(head.path).st_ino != proc_net_ns_inode(os.getpid())
    finally:
        server.terminate()
        server.wait()


def test_two_networks_of_one_process_have_their_own_subnet_and_names_and_leave_nothing_when_closed(
    network: PrivateNetwork,
) -> None:
    other = PrivateNetwork()
    try:
        member = other.add("head")
        assert other.subnet != network.subnet and other.prefix != network.prefix
        assert other.prefix in links() and member.path.exists()
    finally:
        other.close()
    assert not member.path.exists() and not netns_path(other.hub).exists()
    assert f" {other.prefix}:" not in links() and f" {other.prefix}@" not in links()
