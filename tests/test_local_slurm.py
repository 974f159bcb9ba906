"""Integration tests against a real local SLURM cluster (rllm_sweeps/local_slurm/)."""
# Fixtures imported from slurm_fixtures are "redefined" as test arguments:
# ruff: noqa: F811

from __future__ import annotations

import ipaddress
import tempfile
import time
from pathlib import Path

import pytest
import submitit

# Fixtures live in tests/slurm_fixtures.py; importing them here keeps this module
# self-contained (harmless once tests/conftest.py imports them too).
# slurm_fixtures re-exports the local cluster API (the repo root is on sys.path: pytest's pythonpath).
from slurm_fixtures import (  # noqa: F401
    SUBNET,
    LocalSlurm,
    local_slurm,
    local_slurm_netns,
    pid_alive,
    require_local_slurm,
    slurm_env,
)

pytestmark = pytest.mark.slurm


def _wait_state(cluster: LocalSlurm, job_id: str, want: set[str], timeout: float = 30) -> str:
    """Poll sacct until the job's state is in ``want``; returns the state."""
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        res = cluster.run_client(["sacct", "-j", job_id, "-X", "-n", "-P", "-o", "JobID,State"])
        for line in res.stdout.splitlines():
            jid, _, st = line.partition("|")
            if jid == job_id:
                state = st.split()[0] if st else ""
        if state in want:
            return state
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} not in {want} after {timeout}s (last state {state!r})")


def _sbatch(cluster: LocalSlurm, *args: str) -> str:
    res = cluster.run_client(["sbatch", "--parsable", *args], check=True)
    return res.stdout.strip().split(";")[0]


def _wait_done(job: submitit.Job, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not job.done():
        assert time.monotonic() < deadline, f"submitit job {job.job_id} not done in {timeout}s"
        time.sleep(0.2)


def test_cluster_config(local_slurm: LocalSlurm) -> None:
    conf = local_slurm.run_client(["scontrol", "show", "config"], check=True).stdout
    assert "MaxArraySize            = 1001" in conf
    assert "accounting_storage/slurmdbd" in conf
    short = local_slurm.run_client(["scontrol", "show", "partition", "short"], check=True).stdout
    assert "MaxTime=00:05:00" in short
    debug = local_slurm.run_client(["scontrol", "show", "partition", "debug"], check=True).stdout
    assert "Default=YES" in debug and "MaxTime=UNLIMITED" in debug


def test_submitit_result_and_sacct(slurm_env: LocalSlurm, tmp_path: Path) -> None:
    def add(a: int, b: int) -> int:  # local: pickled by value, no import needed in the job
        return a + b

    ex = submitit.AutoExecutor(folder=tmp_path / "submitit", cluster="slurm")
    ex.update_parameters(timeout_min=5, slurm_partition="debug", cpus_per_task=1)
    job = ex.submit(add, 2, 3)
    _wait_done(job)
    assert job.result() == 5
    assert _wait_state(slurm_env, str(job.job_id), {"COMPLETED"}) == "COMPLETED"
    # submitit itself learns the state through sacct (needs real accounting)
    assert job.get_info(mode="force").get("State") == "COMPLETED"


def test_gpus_per_node(slurm_env: LocalSlurm, tmp_path: Path) -> None:
    def gpu_env() -> dict[str, str | None]:
        import os

        keys = ("CUDA_VISIBLE_DEVICES", "SLURM_GPUS_ON_NODE", "SLURM_JOB_GPUS")
        return {k: os.environ.get(k) for k in keys}

    ex = submitit.AutoExecutor(folder=tmp_path / "submitit", cluster="slurm")
    ex.update_parameters(timeout_min=5, slurm_partition="debug", gpus_per_node=2)
    job = ex.submit(gpu_env)
    _wait_done(job)
    env = job.result()
    devices = (env["CUDA_VISIBLE_DEVICES"] or "").split(",")
    assert len(devices) == 2 and len(set(devices)) == 2, env
    assert env["SLURM_GPUS_ON_NODE"] == "2", env


def test_down_kills_everything_and_up_again() -> None:
    """A separate cluster (own base dir and ports) so a running one is not bounced."""
    require_local_slurm()
    base = Path(tempfile.mkdtemp(prefix="rllm-slurm-t", dir="/tmp"))
    cluster = LocalSlurm(base, port_base=17800)
    try:
        cluster.up()
        cluster.up()  # idempotent: healthy -> no-op
        mark = base / "job.pids"
        job = _sbatch(
            cluster,
            "-o",
            "/dev/null",
            "--wrap",
            f"sleep 300 & echo $$ $! > {mark}.tmp; mv {mark}.tmp {mark}; wait",
        )
        deadline = time.monotonic() + 30
        while not mark.exists():
            assert time.monotonic() < deadline, "job did not start"
            time.sleep(0.1)
        job_pids = [int(p) for p in mark.read_text().split()]
        pids = cluster.cluster_pids()
        assert len(pids) >= 6, pids  # munged, mariadbd, slurmdbd, slurmctld, slurmd, stepd
        assert all(pid_alive(p) for p in job_pids)

        cluster.down()
        left = [p for p in pids + job_pids if pid_alive(p)]
        assert not left, f"still alive after down: {left}"
        assert cluster.cluster_pids() == []
        assert cluster.status()["state"] == "down"
        cluster.down()  # idempotent

        cluster.up()
        job2 = _sbatch(cluster, "-o", "/dev/null", "--wrap", "true")
        assert int(job2) > int(job)  # state (job ids) survives down/up
        assert _wait_state(cluster, job2, {"COMPLETED"}) == "COMPLETED"
        assert _wait_state(cluster, job, {"CANCELLED"}) == "CANCELLED"
    finally:
        cluster.down(purge=True)


def test_netns_two_nodes_distinct_hosts(local_slurm_netns: LocalSlurm, tmp_path: Path) -> None:
    cluster = local_slurm_netns
    out = tmp_path / "hosts.out"
    job = _sbatch(
        cluster,
        "-N2",
        "--ntasks-per-node=1",
        "-o",
        str(out),
        "--wrap",
        "srun bash -c 'echo \"$(hostname) $(hostname -I) $SLURMD_NODENAME\"'",
    )
    assert _wait_state(cluster, job, {"COMPLETED", "FAILED", "CANCELLED"}) == "COMPLETED"
    rows = [line.split() for line in out.read_text().splitlines() if line.strip()]
    assert len(rows) == 2, rows
    hostnames = {r[0] for r in rows}
    ips = {r[1] for r in rows}
    assert hostnames == {"n1", "n2"}, rows
    assert len(ips) == 2, rows
    subnet = ipaddress.ip_network(f"{SUBNET}.0/24")
    assert all(ipaddress.ip_address(ip) in subnet for ip in ips), rows
