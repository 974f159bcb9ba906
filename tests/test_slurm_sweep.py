"""Sweeps on the real local SLURM cluster (slurmctld, slurmd, slurmdbd: sacct is real)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from rllm_sweeps.records.attempts import latest_scheduler_id
from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.result import JobResult

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.slurm]
QUICK = [
    "trainer.total_batches=2",
    "trainer.val_before_train=false",
    "trainer.test_freq=0",
    "task.dataset.val_size=8",
    "data.train_batch_size=8",  # 8 prompts x 4 samples a step, not the default's 32 x 8
    "rollout.n=4",
    "resources.cpus_per_task=1",  # two jobs fit on the 2-CPU node at once
    "resources.mem_gb=4",
    "resources.time_min=10",
]


def sacct_jobs(name_prefix: str, since: str) -> list[dict[str, str]]:
    """sacct's records of jobs whose name starts with `name_prefix` (the cluster's state,
    and so its job history, outlives a test: filter by `since`, a SLURM time)."""
    out = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-a", "-S", since, "-o", "JobID,JobName,State,Start,End"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [
        dict(zip(("id", "name", "state", "start", "end"), line.split("|"), strict=True)) for line in out.splitlines()
    ]
    return [r for r in rows if r["name"].startswith(name_prefix)]


def test_a_sweep_refused_by_slurm_then_fixed_runs_three_jobs_as_throttled_arrays_never_more_than_two_at_once(
    slurm_env, tmp_path
):
    args = [
        "trainer.lr=1e-3,2e-3,3e-3",
        "hydra/launcher=slurm",
        "hydra.sweeper.parallel=2",
        "hydra.launcher.max_array_size=2",  # 3 jobs: an array of 2, then the 3rd after it
    ]
    # Refused before anything is submitted (the partition does not exist); the same command with
    # the partition fixed then runs in the same sweep directory.
    refused = run_sweep(tmp_path, *args, "hydra.launcher.partition=nope")
    assert refused.returncode == 2, refused.stdout[-2000:] + refused.stderr[-2000:]
    assert not (tmp_path / "jobs").exists()
    since = datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    proc = run_sweep(tmp_path, *args, "hydra.launcher.partition=debug")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = [JobResult.read(p.parent) for p in tmp_path.glob("jobs/*/result.json")]
    assert len(results) == 3 and all(r.status == "completed" for r in results)
    assert "val_reward_mean" in proc.stdout  # the table
    # They ran as SLURM jobs: an array of 2 tasks split off at max_array_size, and one more job.
    ids = sorted(latest_scheduler_id(p) for p in tmp_path.glob("jobs/*"))
    arrays: dict[str, int] = {}
    for job_id in ids:
        arrays[job_id.split("_")[0]] = arrays.get(job_id.split("_")[0], 0) + 1
    assert sorted(arrays.values()) == [1, 2], ids
    # sacct knows them, completed, and never more than 2 ran at once.
    jobs = [j for j in sacct_jobs("rllm-", since) if j["id"] in ids]
    assert len(jobs) == 3 and {j["state"] for j in jobs} == {"COMPLETED"}, jobs
    spans = [(datetime.fromisoformat(j["start"]), datetime.fromisoformat(j["end"])) for j in jobs]
    for t, _ in spans:
        assert sum(1 for s, e in spans if s <= t < e) <= 2
    # `rllm-sweeps status` shows each job's SLURM id and state, node, last metric, restarts.
    status = subprocess.run(
        [sys.executable, "-m", "rllm_sweeps.cli", "status", str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert status[0].split()[:5] == ["job", "scheduler_id", "state", "result", "nodes"]
    rows = status[1 : status.index("")] if "" in status else status[1:]  # the job rows (then the best model)
    assert sorted(line.split()[1] for line in rows) == ids
    assert all("COMPLETED" in line and "val_reward_mean=" in line for line in rows)


def run_sweep(sweep_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "train.py"), "-m", *QUICK, *args, "cluster=local", f"hydra.sweep.dir={sweep_dir}"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_a_submitit_slurm_sweep_with_hydra_submitit_launchers_field_names_runs_through_sbatch_as_asked(
    slurm_env, tmp_path
):
    # hydra-submitit-launcher's vocabulary, no cluster profile: SLURM_CONF comes from the environment.
    submitit = [
        "hydra/launcher=submitit_slurm",
        "hydra.launcher.partition=debug",
        "hydra.launcher.timeout_min=7",
        "hydra.launcher.cpus_per_task=1",
        "hydra.launcher.mem_gb=3",
        "hydra.launcher.max_num_timeout=1",
        "hydra.launcher.signal_delay_s=30",
    ]
    quick = [a for a in QUICK if not a.startswith("resources.")]
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "train.py"),
            "-m",
            *quick,
            "trainer.lr=1e-3",
            *submitit,
            f"hydra.sweep.dir={tmp_path}",
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (job_dir,) = [p.parent for p in tmp_path.glob("jobs/*/result.json")]
    assert JobResult.read(job_dir).status == "completed"
    job_id = latest_scheduler_id(job_dir)
    fields = "JobID,State,Timelimit,Partition,AllocCPUS,ReqMem"
    out = (
        subprocess.run(
            ["sacct", "-n", "-X", "-P", "-j", job_id, "-o", fields], capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .splitlines()
    )
    assert out[-1].split("|")[1:] == ["COMPLETED", "00:07:00", "debug", "1", "3G"], out


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("hydra.launcher.partition=nope", "Invalid partition name specified"),
        ("resources.gpus_per_node=5", "Requested node configuration is not available"),
        ("resources.time_min=10 hydra.launcher.partition=short", "above the partition's time limit of 5 minutes"),
    ],
    ids=["unknown-partition", "too-many-gpus", "time-above-partition-max"],
)
def test_what_slurm_would_refuse_is_rejected_before_anything_is_submitted(slurm_env, tmp_path, bad, reason):
    since = datetime.now().strftime("%Y-%m-%dT%H:%M:%S")  # fixed, so no older job leaves the window
    before = {j["id"] for j in sacct_jobs("rllm-", since)}
    proc = run_sweep(tmp_path, "trainer.lr=1e-3,2e-3", *bad.split())
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert reason in proc.stderr and "nothing was submitted" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "jobs").exists() and {j["id"] for j in sacct_jobs("rllm-", since)} == before


def test_a_job_asking_two_gpus_per_node_gets_two_devices_and_its_ray_head_advertises_two(slurm_env, tmp_path):
    probe = tmp_path / "probe.json"
    os.environ["RAY_PROBE_OUT"] = str(probe)  # sbatch passes the environment on to the job
    try:
        proc = run_sweep(
            tmp_path / "sweep",
            "resources.gpus_per_node=2",
            "skyrl.jax.use_ray=true",  # RayJaxBackend: the backend that runs on the job's Ray head
            "task.reward=tests.probes.ray_probe:probe_reward",
        )
    finally:
        del os.environ["RAY_PROBE_OUT"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    seen = json.loads(probe.read_text())
    assert seen["returncode"] == 0, seen["stderr"]
    assert len(seen["CUDA_VISIBLE_DEVICES"].split(",")) == 2
    assert seen["resources"]["GPU"] == 2
    # The job records the GPUs it ran with, and `rllm-sweeps status` shows them.
    from rllm_sweeps.status import status_rows

    (job_dir,) = (tmp_path / "sweep").glob("jobs/*")
    assert JobResult.read(job_dir).gpus == seen["CUDA_VISIBLE_DEVICES"]
    assert [row["gpus"] for row in status_rows(tmp_path / "sweep")] == [seen["CUDA_VISIBLE_DEVICES"]]


def test_scontrol_requeue_after_a_checkpoint_resumes_with_continuous_metrics_and_one_restart(slurm_env, tmp_path):
    since = datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    # 12 steps of >= 1.6 s (32 reward calls sleeping 50 ms each: time, not CPU), so the job still
    # trains when its first checkpoint (step 2) is seen and it is requeued.
    slow = ["task.reward=tests.probes.slow_reward:slow_reward", "trainer.total_batches=12", "trainer.save_freq=2"]
    args = [*QUICK, *slow, "trainer.lr=1e-3"]
    sweeper = subprocess.Popen(
        [sys.executable, str(REPO / "train.py"), "-m", *args, "cluster=local", f"hydra.sweep.dir={tmp_path}"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "SLOW_REWARD_S": "0.05"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 300
    while not list(tmp_path.glob("jobs/*/checkpoints/latest")):
        assert sweeper.poll() is None and time.monotonic() < deadline, sweeper.stdout.read()[-3000:]
        time.sleep(0.2)
    job_dir = next(tmp_path.glob("jobs/*"))
    job_id = latest_scheduler_id(job_dir)
    assert [j["state"] for j in sacct_jobs("rllm-", since) if j["id"] == job_id] == ["RUNNING"]
    subprocess.run(["scontrol", "requeue", job_id], check=True)
    out, _ = sweeper.communicate(timeout=600)
    assert sweeper.returncode == 0, out[-3000:]
    result = JobResult.read(job_dir)
    assert result.status == "completed" and result.steps == 12 and result.restarts == 1
    steps = [r["step"] for r in read_metrics(job_dir) if r["kind"] == "train"]
    assert steps == list(range(1, 13))
