"""What the tests of a job's Ray cluster check about its token (runtime/auth.py), shared by the
one-node (test_job.py) and two-node (test_slurm_multinode.py) jobs."""

from __future__ import annotations

import ipaddress
import stat
from pathlib import Path

from rllm_sweeps.records.layout import JobPaths


def job_token(job_dir: Path) -> bytes:
    """The job's current Ray token (the test runs as the job's user)."""
    return JobPaths(job_dir).ray_auth_token.read_bytes().strip()


def files_holding(root: Path, secret: bytes) -> list[Path]:
    """Every file under ``root`` whose bytes contain ``secret``."""
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and secret in p.read_bytes()]


def assert_token_only_in_its_file(job_dir: Path, root: Path, *tokens: bytes) -> None:
    """The token file is the user's alone, and no other file under ``root`` (the job's or the
    sweep's directory) holds any of ``tokens``."""
    token_file = JobPaths(job_dir).ray_auth_token
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    for token in tokens:
        assert len(token) == 64
        assert [p for p in files_holding(root, token) if p != token_file] == []


def assert_strangers_refused(probe: dict) -> None:
    """The probe's three clients: no token and a wrong token refused by the cluster, the job's let in;
    and the token on no process command line, Ray's own among those searched."""
    clients = probe["clients"]
    outcomes = {name: c["outcome"] for name, c in clients.items()}
    assert outcomes == {"none": "refused", "wrong": "refused", "right": "accepted"}, clients
    assert clients["none"]["invalid_token"] and clients["wrong"]["invalid_token"], clients
    assert probe["cmdlines"]["ray"] > 0 and probe["cmdlines"]["with_token"] == 0, probe["cmdlines"]


# SkyRL's RayJaxBackend: its JAX processes (Ray actors) open JAX's own coordination service on a
# port SkyRL picks, bound to every interface (docs/JOBS.md, "Who may talk to a job's Ray cluster").
JAX_PROCESS = "ray::RayJaxBack"  # /proc/PID/comm keeps 15 characters


def assert_listens_in_its_block(record: dict, loopback: bool) -> None:
    """Every socket Ray's processes of a node listened on is in the node's port block (ray.json's
    ``ports``) and, for a one-node cluster, on loopback; the dashboard's port is not open."""
    ports = record["ports"]
    low, high = ports["gcs"], ports["max_worker"]
    rays = [s for s in record["listening"] if s["process"] != JAX_PROCESS]
    assert "raylet" in {s["process"] for s in rays}, record["listening"]  # (the GCS: on the head only)
    assert [s for s in rays if not low <= s["port"] <= high] == [], (ports, rays)
    assert ports["dashboard"] not in {s["port"] for s in rays}  # the dashboard is off
    if loopback:
        assert [s for s in rays if not _loopback(s["address"])] == [], rays


def _loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback
