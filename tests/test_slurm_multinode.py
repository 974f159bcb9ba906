"""2-node SLURM jobs on the real local cluster whose nodes have their own network namespaces
(hostnames n1, n2 and distinct addresses): one Ray cluster across both nodes."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slurm_fixtures import SUBNET, LocalSlurm
from test_slurm_sweep import QUICK

from rllm_sweeps.results import JobResult
from rllm_sweeps.runtime.job_ray import JOIN_TIMEOUT_S
from rllm_sweeps.runtime.ray_cluster import pid_alive

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.slurm]


def run_two_node_job(cluster: LocalSlurm, sweep_dir: Path, *overrides: str) -> tuple[str, Path]:
    """One job with resources.nodes=2 through the SLURM launcher; (output and logs, job dir)."""
    # The sweeper (a SLURM client) runs where it reaches the controller; conf/cluster/local.yaml
    # points the job at this cluster's slurm.conf through RLLM_SWEEPS_SLURM_BASE.
    env = {**cluster.client_env(), "RLLM_SWEEPS_SLURM_BASE": str(cluster.base), "PYTHONPATH": str(REPO)}
    argv = [sys.executable, str(REPO / "train.py"), "-m", *QUICK, "resources.nodes=2", *overrides]
    argv += ["cluster=local", f"hydra.sweep.dir={sweep_dir}"]
    proc = subprocess.run(
        cluster.client_prefix() + argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=900
    )
    job_dirs = list(sweep_dir.glob("jobs/*"))
    assert len(job_dirs) == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    job_dir = job_dirs[0]
    logs = "".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(job_dir.glob("*.log")))
    return proc.stdout[-3000:] + proc.stderr[-3000:] + logs, job_dir


def test_two_node_job_trains_on_one_ray_cluster_across_both_nodes_and_leaves_no_ray_process(
    local_slurm_netns: LocalSlurm, tmp_path: Path
) -> None:
    out, job_dir = run_two_node_job(local_slurm_netns, tmp_path, "skyrl.jax.use_ray=true")
    result = JobResult.read(job_dir)
    assert result is not None and result.status == "completed" and result.steps == 2, out
    assert result.backend == "RayJaxBackend" and result.processes == 2
    assert result.nodes == 2  # counted in the Ray cluster, not copied from resources.nodes

    # ONE Ray cluster: the head on n1 and a worker on n2 that joined the head's address, each
    # node at its own address on the namespaces' subnet.
    head = json.loads((job_dir / "ray.json").read_text())
    worker = json.loads((job_dir / "ray-worker-1.json").read_text())
    assert head["nodes"] == 2 and len(set(head["node_addresses"])) == 2, head
    subnet = ipaddress.ip_network(f"{SUBNET}.0/24")
    assert all(ipaddress.ip_address(a) in subnet for a in head["node_addresses"]), head
    assert worker["head"] == head["address"] and worker["token"] == head["token"]
    head_ip = head["address"].rsplit(":", 1)[0]
    assert worker["node_ip"] in head["node_addresses"] and worker["node_ip"] != head_ip
    assert head["ray_up_s"] > 0 and head["ended"] is True
    # RayJaxBackend's two JAX processes ran one on each node.
    assert sorted(head["process_nodes"]) == sorted(head["node_addresses"]), head

    # Afterwards no process of that cluster remains, on either node (same host: /proc shows all).
    assert head["pids"] and worker["pids"]
    left = [pid for pid in head["pids"] + worker["pids"] if pid_alive(pid)]
    assert not left, f"Ray processes still running: {left}"


def test_two_node_job_failing_before_its_ray_head_is_up_ends_without_waiting_for_its_worker(
    local_slurm_netns: LocalSlurm, tmp_path: Path
) -> None:
    started = time.monotonic()
    # The task's dataset function rejects this in the job, before Ray starts.
    out, job_dir = run_two_node_job(local_slurm_netns, tmp_path, "task.dataset.letters=ab1")
    result = JobResult.read(job_dir)
    assert result is not None and result.status == "failed" and "letters must be" in (result.error or ""), out
    # The worker on n2 left when rank 0 marked the attempt over, not at its join timeout.
    assert "ended before its Ray head started" in (job_dir / "ray-worker-1.log").read_text(), out
    assert not (job_dir / "ray-worker-1.json").exists()
    assert time.monotonic() - started < JOIN_TIMEOUT_S
