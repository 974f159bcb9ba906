"""Shared fixtures, and how the suite is spread over pytest-xdist workers.

The local SLURM cluster fixtures come from slurm_fixtures.py. Each local cluster is one shared
machine: its tests run one after another on one worker (an xdist group per cluster), and go first,
since they wait on SLURM's timers more than they compute. Tests that assert a wall-clock time are
marked `timed` and run alone after the parallel part (see the Makefile's `test`).
"""

from __future__ import annotations

import pytest
from slurm_fixtures import local_slurm, local_slurm_netns, slurm_env  # noqa: F401

NETNS_CLUSTER_GROUP = "slurm-2-nodes"
CLUSTER_GROUP = "slurm-1-node"


def cluster_group(item: pytest.Item) -> str | None:
    """The xdist group of a test that uses a local SLURM cluster, or None."""
    fixtures = getattr(item, "fixturenames", ())
    if "local_slurm_netns" in fixtures:
        return NETNS_CLUSTER_GROUP
    if item.get_closest_marker("slurm") is not None:
        return CLUSTER_GROUP
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    first, rest = [], []
    for item in items:
        group = cluster_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        (first if group is not None else rest).append(item)
    items[:] = first + rest


@pytest.hookimpl(trylast=True)  # after xdist has tagged each grouped test's id with its group
def pytest_collection_finish(session: pytest.Session) -> None:
    if not session.config.getoption("loadgroup", False):
        return
    for item in session.items:
        group = cluster_group(item)
        if group is not None and not item.nodeid.endswith(f"@{group}"):
            raise pytest.UsageError(
                f"pytest-xdist did not group {item.nodeid} with its SLURM cluster's tests "
                "(pytest >= 9.2 breaks --dist loadgroup; see pyproject.toml's dev extra)"
            )
