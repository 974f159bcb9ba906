"""Which GPUs a local job gets (launchers/gpu_placement.py, launchers/gpus.py), and the local launcher
applying it to real processes: each job's CUDA_VISIBLE_DEVICES and memory cap as decided, a job waiting
until its GPUs free, a job asking for more GPUs than the machine has refused up front."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from launchers.base import JobState, LaunchRequest
from launchers.gpu_placement import GpuPool, GpuRequest, job_environment, place
from launchers.gpus import visible_gpus
from launchers.local import LocalLauncher
from rllm_sweeps.records.resources import Resources

SHAPE = Resources(nodes=1, gpus_per_node=0, cpus_per_task=2, jobs_per_gpu=1, mem_gb=8, time_min=60)

FREE = {"0": Fraction(1), "1": Fraction(1)}


def test_a_job_of_no_gpu_always_starts_and_gets_none():
    assert place({}, GpuRequest(0, 1)) == ()
    assert place({"0": Fraction(0)}, GpuRequest(0, 1)) == ()


def test_one_gpu_jobs_take_free_gpus_in_order_and_wait_when_all_are_busy():
    assert place(FREE, GpuRequest(1, 1)) == ("0",)
    assert place({"0": Fraction(0), "1": Fraction(1)}, GpuRequest(1, 1)) == ("1",)
    assert place({"0": Fraction(0), "1": Fraction(0)}, GpuRequest(1, 1)) is None


def test_a_two_gpu_job_needs_two_whole_free_gpus():
    assert place(FREE, GpuRequest(2, 1)) == ("0", "1")
    assert place({"0": Fraction(1, 2), "1": Fraction(1)}, GpuRequest(2, 1)) is None
    assert place({"0": Fraction(1), "1": Fraction(1), "2": Fraction(1)}, GpuRequest(2, 1)) == ("0", "1")


def test_k_jobs_share_a_gpu_and_fill_the_emptiest_first():
    half = GpuRequest(1, jobs_per_gpu=2)
    pool = GpuPool(("0", "1"))
    got = [pool.take(i, half) for i in range(5)]
    assert got == [("0",), ("1",), ("0",), ("1",), None]  # 2 per GPU, spread before doubled up
    pool.release(2)
    assert pool.take(5, half) == ("0",)  # the freed half
    assert pool.take(6, GpuRequest(1, 1)) is None  # a whole GPU: none is free


def test_the_machines_gpus_honour_an_existing_cuda_visible_devices():
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3"}) == ("2", "3")
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "GPU-1a2b,GPU-3c4d"}) == ("GPU-1a2b", "GPU-3c4d")
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == ()
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "0,-1,1"}) == ("0",)  # CUDA stops at the first invalid one
    assert visible_gpus({}) == ()  # this machine: no NVIDIA driver, no GPUs (NVML says so)


def test_a_jobs_environment_shows_its_gpus_and_caps_a_shared_jobs_jax_memory():
    assert job_environment(("1",), GpuRequest(1, 1), machine_has_gpus=True) == {"CUDA_VISIBLE_DEVICES": "1"}
    assert job_environment(("0",), GpuRequest(1, 2), True) == {
        "CUDA_VISIBLE_DEVICES": "0",
        "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.45",
    }
    assert job_environment(("0",), GpuRequest(1, 4), True)["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.22"
    assert job_environment((), GpuRequest(0, 1), True) == {"CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"}
    assert job_environment((), GpuRequest(0, 1), False) == {}  # a CPU machine: nothing to hide


def test_more_gpus_than_the_machine_has_is_refused_before_anything_starts():
    launcher = LocalLauncher(gpus=("0",))
    problems = launcher.preflight([replace(SHAPE, gpus_per_node=n) for n in (2, 1, 0)])
    assert problems == [
        "resources.gpus_per_node=2 but this machine has 1 GPU visible (0; CUDA_VISIBLE_DEVICES narrows them)"
    ]
    assert LocalLauncher(gpus=()).preflight([replace(SHAPE, gpus_per_node=1)])  # a CPU machine has none to give


# ---- the launcher, with real processes -------------------------------------------------------

# A job that records what it was given, then waits for its release file.
JOB = """
import json, os, pathlib, sys, time
d = pathlib.Path(sys.argv[1])
keys = ("CUDA_VISIBLE_DEVICES", "XLA_PYTHON_CLIENT_MEM_FRACTION", "JAX_PLATFORMS")
(d / "env.json").write_text(json.dumps({k: os.environ.get(k) for k in keys}))
while not (d / "release").exists():
    time.sleep(0.05)
"""


def _request(tmp_path: Path, index: int, **resources) -> LaunchRequest:
    job_dir = tmp_path / f"job{index}"
    argv = [sys.executable, "-c", JOB, str(job_dir)]
    return LaunchRequest(index, job_dir, argv, resources=replace(SHAPE, **resources))


def _env_of(request: LaunchRequest, timeout: float = 30) -> dict:
    path = request.job_dir / "env.json"
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"job {request.index} did not start"
        time.sleep(0.05)
    return json.loads(path.read_text())


def _release_all(launcher: LocalLauncher, requests: list[LaunchRequest], handles: list) -> None:
    """Every job may end (the waiting ones too, should they have started), and none is left running."""
    for r in requests:
        r.job_dir.mkdir(parents=True, exist_ok=True)
        (r.job_dir / "release").touch()
    for h in handles:
        launcher.cancel(h)


@pytest.mark.slow
def test_the_local_launcher_gives_each_job_its_gpus_and_starts_a_waiting_job_when_one_frees(tmp_path):
    launcher = LocalLauncher(gpus=("0", "1"))
    requests = [_request(tmp_path, i, gpus_per_node=1) for i in range(3)]
    requests.append(_request(tmp_path, 3, gpus_per_node=0))
    handles = [launcher.submit(r) for r in requests]
    try:
        assert [_env_of(r)["CUDA_VISIBLE_DEVICES"] for r in requests[:2]] == ["0", "1"]
        assert _env_of(requests[3]) == {
            "CUDA_VISIBLE_DEVICES": "",
            "XLA_PYTHON_CLIENT_MEM_FRACTION": None,
            "JAX_PLATFORMS": "cpu",
        }
        assert launcher.poll(handles[2]).state is JobState.PENDING  # both GPUs busy: it waits
        assert not (requests[2].job_dir / "job.log").exists()  # nothing of it started
        (requests[1].job_dir / "release").touch()
        while launcher.poll(handles[1]).state is not JobState.FINISHED:
            time.sleep(0.05)
        assert launcher.poll(handles[2]).state is JobState.RUNNING  # the freed GPU, at once
        assert _env_of(requests[2])["CUDA_VISIBLE_DEVICES"] == "1"
    finally:
        _release_all(launcher, requests, handles)


@pytest.mark.slow
def test_the_local_launcher_shares_a_gpu_between_k_jobs_each_with_its_memory_cap(tmp_path):
    launcher = LocalLauncher(gpus=("0",))
    requests = [_request(tmp_path, i, gpus_per_node=1, jobs_per_gpu=2) for i in range(3)]
    handles = [launcher.submit(r) for r in requests]
    try:
        for r in requests[:2]:
            assert _env_of(r) == {
                "CUDA_VISIBLE_DEVICES": "0",
                "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.45",
                "JAX_PLATFORMS": None,
            }
        assert launcher.poll(handles[2]).state is JobState.PENDING  # a third would exceed the share
    finally:
        _release_all(launcher, requests, handles)
