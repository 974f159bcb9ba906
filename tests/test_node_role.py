"""Every node of an allocation runs the same train.py command; the job decides by its rank
(rllm_sweeps/runtime/node_role.py). Rank > 0 joining a real Ray head: tests/test_ray_cluster.py
and tests/test_slurm_multinode.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rllm_sweeps.records.model import read_record
from rllm_sweeps.records.ray_cluster import RayClusterRecord
from rllm_sweeps.runtime.job_ray import RAY_FILE
from rllm_sweeps.runtime.node_role import NodeRole, NoJobDir, job_dir_of, run_node

REPO = Path(__file__).resolve().parents[1]


def test_one_node_trains_without_needing_a_job_directory():
    ran = []
    run_node(["trainer.lr=1e-3"], lambda: ran.append(True), NodeRole(rank=0, nodes=1))
    assert ran == [True]


def test_a_sweeper_inside_a_multi_node_allocation_runs_as_a_sweeper_on_any_rank():
    ran = []
    run_node(["-m", "trainer.lr=1e-3,2e-3"], lambda: ran.append(True), NodeRole(rank=0, nodes=2))
    run_node(["--multirun", "trainer.lr=1e-3,2e-3"], lambda: ran.append(True), NodeRole(rank=1, nodes=2))
    assert ran == [True, True]


def test_the_job_directory_is_read_from_hydra_run_dir():
    assert job_dir_of(["a=1", "hydra.run.dir=/x/jobs/0001-ab"]) == Path("/x/jobs/0001-ab")
    assert job_dir_of(["a=1", "hydra.sweep.dir=/x"]) is None


def test_several_nodes_without_a_job_directory_are_refused_before_anything_runs():
    ran = []
    with pytest.raises(NoJobDir, match="hydra.run.dir=DIR"):
        run_node(["trainer.lr=1e-3"], lambda: ran.append(True), NodeRole(rank=0, nodes=2))
    assert ran == []


def test_rank_0_marks_the_attempt_over_for_the_other_nodes_even_when_training_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "31")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")

    def fails() -> None:
        raise RuntimeError("bad dataset")

    with pytest.raises(RuntimeError, match="bad dataset"):
        run_node([f"hydra.run.dir={tmp_path}"], fails, NodeRole(rank=0, nodes=2))
    # this attempt's ray.json, marked over before any head started: no address for a node to join
    record = read_record(RayClusterRecord, tmp_path / RAY_FILE)
    assert (record.token, record.ended, record.ray, record.address) == ("31.2", True, None, None)


def test_the_role_is_read_from_slurms_variables_and_is_rank_0_of_1_outside_slurm(monkeypatch):
    for key in ("SLURM_JOB_ID", "SLURM_NODEID", "SLURM_JOB_NUM_NODES"):
        monkeypatch.delenv(key, raising=False)
    assert NodeRole.of_this_process() == NodeRole(rank=0, nodes=1)
    monkeypatch.setenv("SLURM_JOB_ID", "5")
    monkeypatch.setenv("SLURM_NODEID", "1")
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "3")
    assert NodeRole.of_this_process() == NodeRole(rank=1, nodes=3)


@pytest.mark.slow
def test_train_py_on_several_nodes_without_a_job_directory_exits_2_naming_the_fix():
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "5", "SLURM_NODEID": "0", "SLURM_JOB_NUM_NODES": "2"}
    out = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "trainer.total_batches=1"],
        cwd=REPO,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert "error: a job on 2 nodes needs its directory on the command line (hydra.run.dir=DIR" in out.stderr
