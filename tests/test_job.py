"""One training job: real SkyRL (JAX on CPU), real Ray, real files. Few steps each."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ray_auth_checks import (
    assert_listens_in_its_block,
    assert_strangers_refused,
    assert_token_only_in_its_file,
    job_token,
)

from rllm_sweeps.records.layout import JobPaths, run_name
from rllm_sweeps.records.metrics import VALIDATION_METRICS, read_metrics
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.runtime.processes import pid_alive

REPO = Path(__file__).resolve().parents[1]
TRAIN = str(REPO / "train.py")
# Short runs: 4 steps of 8 prompts x 4 samples, validation on 8 prompts.
QUICK = ["trainer.total_batches=4", "trainer.test_freq=2", "trainer.save_freq=2", "task.dataset.val_size=8"]
QUICK += ["data.train_batch_size=8", "rollout.n=4"]

pytestmark = pytest.mark.slow


def job_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def start_job(job_dir: Path, *overrides: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, TRAIN, *QUICK, *overrides, f"hydra.run.dir={job_dir}"],
        cwd=REPO,
        env=job_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run_job(job_dir: Path, *overrides: str, timeout: float = 400, **env: str) -> subprocess.CompletedProcess:
    proc = start_job(job_dir, *overrides, **env)
    out, _ = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def train_steps(job_dir: Path) -> list[int]:
    return [r["step"] for r in read_metrics(job_dir) if r["kind"] == "train"]


def test_a_job_writes_its_records_and_a_rerun_after_sigterm_resumes_continuously_counting_two_process_starts(tmp_path):
    # One job proves both: what a job writes (checked on the completed run), and that a SIGTERM
    # after a checkpoint, then a rerun, resumes it with continuous metrics.
    job_dir = tmp_path / "job"
    overrides = [
        "trainer.total_batches=6",
        "trainer.save_freq=2",
        "trainer.test_freq=3",
        "trainer.logger=[console,tensorboard]",
    ]
    proc = start_job(job_dir, *overrides)
    deadline = time.monotonic() + 300
    while not (job_dir / "checkpoints" / "latest").exists():
        assert proc.poll() is None, proc.stdout.read()[-3000:]
        assert time.monotonic() < deadline
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 143, out[-3000:]
    stopped = JobResult.read(job_dir)
    assert stopped.status == "preempted" and 2 <= stopped.steps < 6
    # A stopped job exports what it had: its policy at the step it stopped at (issue 55).
    assert stopped.exports.final is not None and stopped.exports.final.step == stopped.steps
    assert (job_dir / stopped.exports.final.path / "adapter_model.safetensors").is_file()

    again = run_job(job_dir, *overrides)
    assert again.returncode == 0, again.stdout[-3000:]
    assert "resuming from step_" in again.stdout
    result = JobResult.read(job_dir)
    assert result.status == "completed" and result.steps == 6 and result.restarts == 1
    assert result.exports.final.step == 6 and result.exports.best.step in (3, 6)  # validated at 0, 3, 6
    assert result.attempts == 2  # two process starts: the interrupted one and the resumed one
    assert train_steps(job_dir) == [1, 2, 3, 4, 5, 6]
    # The validation history (and so the best) spans both attempts, not only the resumed one.
    assert [v["step"] for v in result.validations] == [0, 3, 6]
    assert result.best["val_reward_mean"] == max(v["val_reward_mean"] for v in result.validations)
    # What the completed job wrote.
    assert 0.0 <= result.final["val_reward_mean"] <= 1.0
    assert set(result.final) == set(VALIDATION_METRICS)  # what a sweep's metric is checked against
    assert set(result.phase_time_s) == {"sample", "forward_backward", "optim", "other"}
    assert result.versions["skyrl"] == "0.4.0" and result.config_hash
    assert "final val_reward_mean" in again.stdout
    assert (job_dir / "config.yaml").exists()
    assert list((job_dir / "tensorboard").glob("events.out.tfevents.*"))
    # A single-process JaxBackend starts no Ray: the record says so, with no process to tear down.
    ray = json.loads((job_dir / "ray.json").read_text())
    assert ray["ray"] is False and ray["address"] is None and ray["pids"] == []
    assert "RAY_ADDRESS" not in out and "RAY_ADDRESS" not in again.stdout


def test_a_sigterm_during_the_last_step_stops_nothing_and_the_job_completes_with_its_final_metrics(tmp_path):
    # A time limit or preemption that lands in the last step: the step, its validation and its
    # checkpoint finish, and the job is completed, not preempted (a rerun would train nothing).
    job_dir = tmp_path / "job"
    slow = ["task.reward=tests.probes.slow_reward:slow_reward", "trainer.total_batches=3", "trainer.test_freq=0"]
    proc = start_job(job_dir, *slow, SLOW_REWARD_S="0.1")  # a step takes >= 3.2 s
    latest = job_dir / "checkpoints" / "latest"
    deadline = time.monotonic() + 300
    while not (latest.is_file() and latest.read_text().strip() == "step_2"):  # saved after step 2
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()[-3000:]
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)  # during step 3, the last (its 32 reward calls alone take 3.2 s)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-3000:]
    result = JobResult.read(job_dir)
    assert result.status == "completed" and result.steps == 3, out[-3000:]
    assert "val_reward_mean" in result.final and result.best
    assert [v["step"] for v in result.validations] == [0, 3]  # the history result.json keeps (val_before_train)


def test_two_concurrent_use_ray_jobs_one_of_two_processes_get_their_own_ray_clusters_and_leave_no_ray_process(
    tmp_path,
):
    # Job b also proves that skyrl.jax.use_ray trains through RayJaxBackend with two JAX processes,
    # and both that a bf16 checkpoint trains there, clipped: each worker's AdamW is ours (optimizer.py),
    # not SkyRL's, which writes NaN into a bf16 adapter at the first step (test_bf16_training.py).
    # While they train, each job's probe tries its cluster as strangers would: without a token,
    # with the other job's token, and with its own (tests/probes/ray_probe.py).
    jobs = {}
    for name, other, cpus, processes in (("a", "b", 1, 1), ("b", "a", 2, 2)):
        jobs[name] = start_job(
            tmp_path / name,
            "trainer.total_batches=2",
            "skyrl.jax.use_ray=true",  # RayJaxBackend: the backend that runs on the job's Ray cluster
            f"skyrl.jax.num_processes={processes}",
            "model.path=builtin:tiny-qwen3-bf16",
            "trainer.max_grad_norm=0.5",
            "task.reward=tests.probes.ray_probe:auth_probe_reward",
            f"resources.cpus_per_task={cpus}",
            RAY_PROBE_OUT=str(tmp_path / f"probe-{name}.json"),
            RAY_PROBE_OTHER_TOKEN=str(JobPaths(tmp_path / other).ray_auth_token),
        )
    for proc in jobs.values():
        out, _ = proc.communicate(timeout=400)
        assert proc.returncode == 0, out[-3000:]
    probes = {n: json.loads((tmp_path / f"probe-{n}.json").read_text()) for n in jobs}
    rays = {n: json.loads((tmp_path / n / "ray.json").read_text()) for n in jobs}
    for name, cpus, processes in (("a", 1, 1), ("b", 2, 2)):
        result = JobResult.read(tmp_path / name)
        assert result.status == "completed" and result.steps == 2
        assert result.backend == "RayJaxBackend" and result.processes == processes
        probe = probes[name]
        assert probe["returncode"] == 0, probe["stderr"]
        # While the job trained, RAY_ADDRESS named its own cluster, and a plain ray.init() reached it.
        assert probe["RAY_ADDRESS"] == rays[name]["address"] == probe["gcs_address"]
        assert probe["resources"]["CPU"] == cpus and probe["nodes"] == 1
        # Only the job's token let a client in; the other job's did not; the token was on no command line.
        assert rays[name]["auth"] == "token"
        assert_strangers_refused(probe)
        # The token is in its 0600 file only: not in ray.json, result.json, the logs or anything else.
        assert_token_only_in_its_file(tmp_path / name, tmp_path, job_token(tmp_path / name))
        # One node: every socket its processes opened is on loopback, in its port block.
        assert rays[name]["address"].startswith("127.0.0.1:")
        assert_listens_in_its_block(rays[name], loopback=True)
        # After the job, none of its Ray processes remain.
        assert rays[name]["pids"] and not [p for p in rays[name]["pids"] if pid_alive(p)]
    assert probes["a"]["RAY_ADDRESS"] != probes["b"]["RAY_ADDRESS"]
    assert job_token(tmp_path / "a") != job_token(tmp_path / "b")
    for name in jobs:  # SkyRL's own AdamW in a worker: loss and grad_norm NaN from step 1, 1-token replies
        for r in [r for r in read_metrics(tmp_path / name) if r["kind"] == "train"]:
            assert math.isfinite(r["loss"]) and math.isfinite(r["grad_norm"]) and r["response_length_mean"] > 1, r


def test_gpu_trainer_engine_on_a_cpu_machine_fails_before_ray_with_a_clear_message(tmp_path):
    start = time.monotonic()
    proc = run_job(tmp_path / "job", "skyrl.engine=fsdp", "resources.gpus_per_node=1", timeout=120)
    assert proc.returncode != 0
    assert "skyrl.engine=fsdp" in proc.stdout and "vllm" in proc.stdout and "CUDA" in proc.stdout
    assert not (tmp_path / "job" / "ray.json").exists()
    assert time.monotonic() - start < 60
    assert JobResult.read(tmp_path / "job").failure_kind == "user"


def test_a_reward_function_that_raises_is_recorded_as_a_failed_job(tmp_path):
    proc = run_job(tmp_path / "job", "task.reward=tests.probes.failing_reward:broken_reward")
    assert proc.returncode == 1
    result = JobResult.read(tmp_path / "job")
    assert result.status == "failed" and result.failure_kind == "user"
    assert "bug in the user's reward function" in result.error
    rays = json.loads((tmp_path / "job" / "ray.json").read_text())
    assert not [p for p in rays["pids"] if pid_alive(p)]


def test_a_job_given_two_devices_trains_data_parallel_over_both(tmp_path):
    """What a job given two GPUs does (resources.gpus_per_node=2 on SLURM, or two placed by the local
    launcher): the JAX engine's mesh covers every device it sees. Two host devices stand in for them."""
    proc = run_job(
        tmp_path / "job",
        "trainer.total_batches=1",
        "trainer.val_before_train=false",
        "trainer.save_freq=-1",
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        RLLM_SWEEPS_WARM_SERVER="off",
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "JAX trains data-parallel over 2 cpu devices" in proc.stdout
    assert JobResult.read(tmp_path / "job").steps == 1


def directory_bytes(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and directory (None) under `root`, by relative path."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


def test_a_run_refused_on_a_completed_job_directory_changes_no_byte_there_and_the_job_still_reads_completed(tmp_path):
    job_dir = tmp_path / "job"
    short = ("trainer.total_batches=1", "trainer.val_before_train=false", "trainer.save_freq=0")
    first = run_job(job_dir, *short)
    assert first.returncode == 0, first.stdout[-3000:]
    before = directory_bytes(job_dir)
    assert {"result.json", ".lock", ".hydra/overrides.yaml", "checkpoints/latest"} <= set(before)

    refused = run_job(job_dir, *short, "trainer.lr=3e-3", timeout=200)
    assert refused.returncode == 2, refused.stdout[-3000:]
    assert "Traceback" not in refused.stdout
    errors = [line for line in refused.stdout.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "another configuration" in errors[0] and "trainer.resume_mode=disable" in errors[0]
    assert directory_bytes(job_dir) == before  # byte for byte, every file

    again = run_job(job_dir, *short, timeout=200)  # the original command: still its completed job
    assert again.returncode == 0 and "already completed" in again.stdout, again.stdout[-3000:]
    assert directory_bytes(job_dir) == before
    assert JobResult.read(job_dir).status == "completed"


def test_two_commands_by_hand_both_run_each_in_its_own_directory_and_a_rerun_finds_its_own(tmp_path):
    # README's order: `train.py`, then `train.py trainer.lr=3e-3 ...`: no clash over one shared directory.
    short = ["trainer.total_batches=1", "trainer.val_before_train=false", "trainer.save_freq=0"]

    def by_hand(*overrides: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, TRAIN, *overrides],
            cwd=tmp_path,
            env=job_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )

    commands = (short, [*short, "trainer.lr=3e-3"])
    for command in commands:
        proc = by_hand(*command)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        # A default run says nothing about what it does not use (TensorFlow, gradient clipping).
        assert "Tensorflow library not found" not in proc.stderr and "max_grad_norm" not in proc.stderr
    runs = sorted(p.name for p in (tmp_path / "outputs" / "rllm-sweeps" / "default").iterdir())
    assert runs == sorted(run_name(",".join(sorted(c))) for c in commands)  # Hydra's override_dirname
    again = by_hand(*reversed(short))  # the same command: its own directory, its job completed there
    assert again.returncode == 0 and "already completed" in again.stdout, again.stdout[-2000:]
