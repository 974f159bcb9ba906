"""Pytest fixtures for a real local SLURM cluster (see rllm_sweeps/local_slurm/).

Import the fixtures in tests/conftest.py::

    from slurm_fixtures import local_slurm, local_slurm_netns, slurm_env  # noqa: F401

- ``local_slurm`` (session): a 1-node cluster under /tmp/rllm-slurm (override
  with RLLM_SWEEPS_SLURM_BASE; under pytest-xdist one per worker, /tmp/rllm-slurm-gw1, ...).
  Brought up on first use and torn down at the end of the session, unless it was
  already up (a developer's running cluster is used as is and left running).
- ``local_slurm_netns`` (session): a 2-node cluster whose nodes have their own
  network namespaces, hostnames (n1, n2) and addresses, under
  /tmp/rllm-slurm-ns. Clients must run under ``cluster.client_prefix()``.
- ``slurm_env`` (function): ``local_slurm`` with SLURM_CONF set in os.environ
  for the test (what submitit needs), restored afterwards.

When the SLURM/munge/MariaDB programs are missing (or not root) the fixtures
skip, unless RLLM_SWEEPS_REQUIRE_SLURM is set (CI), where they fail instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rllm_sweeps.local_slurm import SUBNET, LocalSlurm, missing_binaries, pid_alive
from rllm_sweeps.local_slurm.settings import DEFAULT_PORT_BASE

__all__ = [
    "SUBNET",
    "LocalSlurm",
    "local_slurm",
    "local_slurm_netns",
    "missing_binaries",
    "pid_alive",
    "require_local_slurm",
    "slurm_env",
    "slurm_unavailable_reason",
]

REQUIRE_ENV = "RLLM_SWEEPS_REQUIRE_SLURM"
BASE_ENV = "RLLM_SWEEPS_SLURM_BASE"  # also what conf/cluster/local.yaml reads for the jobs' SLURM_CONF
SLURM_BASE = Path(os.environ.get(BASE_ENV, "/tmp/rllm-slurm"))
SLURM_NETNS_BASE = Path(os.environ.get("RLLM_SWEEPS_SLURM_NETNS_BASE", "/tmp/rllm-slurm-ns"))
# The 1-node clusters' first TCP port: another value lets two checkouts' suites run side by side.
PORT_BASE = int(os.environ.get("RLLM_SWEEPS_SLURM_PORT_BASE", DEFAULT_PORT_BASE))


def slurm_unavailable_reason(netns: bool = False) -> str | None:
    """Why a local cluster cannot be started here, or None when it can."""
    missing = missing_binaries(netns)
    if missing:
        return (
            f"local SLURM cluster unavailable: missing {', '.join(missing)} "
            f"(install with launchers/install_slurm_deps.sh)"
        )
    if os.geteuid() != 0:
        return "local SLURM cluster unavailable: needs root"
    return None


def require_local_slurm(netns: bool = False) -> None:
    """Skip the test (or fail, when RLLM_SWEEPS_REQUIRE_SLURM is set) without SLURM."""
    reason = slurm_unavailable_reason(netns)
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{reason}; {REQUIRE_ENV} is set, so this is an error", pytrace=False)
    pytest.skip(reason)


BRINGUP_LOCK = Path("/tmp/rllm-slurm-bringup.lock")


@contextlib.contextmanager
def one_bringup_at_a_time() -> Iterator[None]:
    """Clusters come up one after another across pytest-xdist workers: MariaDB's first-start
    initialisation, run for two clusters at once on a busy machine, once left a data directory
    without its system tables (MariaDB then refused slurmdbd)."""
    with BRINGUP_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _session_cluster(cluster: LocalSlurm) -> Iterator[LocalSlurm]:
    # A cluster already up is used with the settings it runs with, and left up.
    with one_bringup_at_a_time():
        probe = LocalSlurm(cluster.base, verbose=False)
        already_up = probe.is_up()
        if not already_up:
            cluster.up()
    if already_up:
        probe.verbose = True
        yield probe
        return
    try:
        yield cluster
    finally:
        cluster.down()


def worker_cluster() -> LocalSlurm:
    """This pytest process's 1-node cluster. Under pytest-xdist each worker has its own (its own
    base directory and ports), so 1-node tests run in parallel without sharing a controller;
    a developer's RLLM_SWEEPS_SLURM_BASE is used by every worker as it is."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if BASE_ENV in os.environ or not worker.startswith("gw"):
        return LocalSlurm(SLURM_BASE, nodes=1, port_base=PORT_BASE)
    index = int(worker[2:])
    # 600 ports apart from PORT_BASE, default 16800 (a cluster uses port_base + 0..~40); 17800, the
    # down/up test's own cluster, falls between two blocks.
    return LocalSlurm(Path(f"{SLURM_BASE}-{worker}"), nodes=1, port_base=PORT_BASE + 600 * index)


@pytest.fixture(scope="session")
def local_slurm() -> Iterator[LocalSlurm]:
    """A running 1-node local SLURM cluster with accounting and 4 fake GPUs."""
    require_local_slurm()
    yield from _session_cluster(worker_cluster())


@pytest.fixture(scope="session")
def local_slurm_netns() -> Iterator[LocalSlurm]:
    """A running 2-node cluster, one network namespace (hostname, IP) per node."""
    require_local_slurm(netns=True)
    yield from _session_cluster(LocalSlurm(SLURM_NETNS_BASE, nodes=2, netns=True))


@pytest.fixture
def slurm_env(local_slurm: LocalSlurm, monkeypatch: pytest.MonkeyPatch) -> LocalSlurm:
    """``local_slurm`` with its client environment (SLURM_CONF) in os.environ."""
    for key, value in local_slurm.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv(BASE_ENV, str(local_slurm.base))  # the jobs' SLURM_CONF (cluster=local)
    return local_slurm
