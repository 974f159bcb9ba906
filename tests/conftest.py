"""Shared fixtures, and how the suite is spread over pytest-xdist workers.

The local SLURM cluster fixtures come from slurm_fixtures.py. Each worker has its own 1-node
cluster; the 2-node cluster is one shared machine, so its tests run one after another on one
worker (an xdist group). The tests sharing an expensive module-scoped fixture (a SkyRL backend, a
12-trial Optuna study) are a group too, so that it is built once, not once per worker. SLURM tests
go first, since they wait on SLURM's timers more than they compute; within each part the `slow`
tests (seconds to minutes each) go before the quick ones, so that the quick ones fill the workers'
tail instead of a learning test started last stretching it (pytest-xdist hands out tests in this
order, after its groups: docs/BENCHMARKS.md, "The suite's order"). Tests that assert a
wall-clock time are marked `timed` and run alone after the parallel part (see the Makefile's
`test`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from finished_sweeps import run_finished_sweep
from slurm_fixtures import local_slurm, local_slurm_netns, slurm_env  # noqa: F401

NETNS_CLUSTER_GROUP = "slurm-2-nodes"
# Module-scoped fixtures too costly to build on every worker -> the xdist group of their tests.
SHARED_FIXTURE_GROUPS = {
    "backend_and_tokenizer": "jax-backend",  # tests/test_jax_engine_reads.py: a JaxBackend, compiled
    "jax_trainings": "jax-backend",  # tests/test_jax_engine_reads.py: the trainings on it that several tests compare
    "example": "optuna-example",  # tests/test_optuna.py: the shipped 12-trial study, run once
    "finished_sweep": "kept-grid",  # finished_sweeps.py: a finished 2-job grid (records and export tests)
    "finished_optuna": "kept-optuna",  # tests/test_sweep_records_kept.py: a finished 2-trial study
    "ray_cluster": "ray-cluster",  # tests/test_ray_cluster_launcher.py: a Ray cluster and its 4-job sweeps, once
    "installed": "installed-wheel",  # tests/test_installed_package.py: the wheel built, installed in a new venv
    "whole_batch_update": "memory-fit",  # tests/test_memory_fit.py: a real engine compiled, one update
}


@pytest.fixture(scope="session")
def finished_sweep(tmp_path_factory) -> Path:
    """A grid of 2 quick jobs, run to the end once for every module that reads it (finished_sweeps.py)."""
    return run_finished_sweep(tmp_path_factory.mktemp("kept"))


def cluster_group(item: pytest.Item) -> str | None:
    """The xdist group of a test that shares a local SLURM cluster with others, or None. The 1-node
    cluster is one per worker (slurm_fixtures.worker_cluster), so its tests need no group; the
    2-node cluster's network namespaces and addresses are fixed, so there is one, on one worker."""
    if "local_slurm_netns" in getattr(item, "fixturenames", ()):
        return NETNS_CLUSTER_GROUP
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    first, rest = [], []
    grouping = config.pluginmanager.hasplugin("xdist")
    for item in items:
        group = cluster_group(item)
        shared = next((g for f, g in SHARED_FIXTURE_GROUPS.items() if f in getattr(item, "fixturenames", ())), None)
        if grouping and (group or shared):
            item.add_marker(pytest.mark.xdist_group(group or shared))
        (first if group is not None or item.get_closest_marker("slurm") else rest).append(item)
    items[:] = sorted(first, key=is_quick) + sorted(rest, key=is_quick)  # stable: collection order within


def is_quick(item: pytest.Item) -> bool:
    """Not marked `slow` (which says: seconds or more): a quick test, one that can end the run."""
    return item.get_closest_marker("slow") is None


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
