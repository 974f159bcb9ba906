"""A job's GPU memory estimate before launch (training/gpu_memory.py, config/memory_need.py), held
to what one H200 measured (docs/BENCHMARKS.md, "Sweeps on a GPU machine"), and shown by the dry run
against each job's share (sweep/memory_check.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from launchers.gpu_placement import GpuRequest, memory_fraction
from launchers.local import LocalLauncher
from rllm_sweeps.config.memory_need import model_shape
from rllm_sweeps.records.plan import PlannedJob
from rllm_sweeps.records.resources import Resources
from rllm_sweeps.sweep.memory_check import memory_check
from rllm_sweeps.training.gpu_memory import GIB, ModelShape, RunShape, estimate_jax_memory

REPO = Path(__file__).resolve().parents[1]
H200 = 140.4 * GIB  # NVML's total of the H200 the figures were measured on (143,771 MiB)
# bench/gpu_placement.py's runs: 32 prompts x 8 samples, 64 + 128 tokens (SkyRL pads to 192), LoRA r32,
# skyrl.jax.max_lora_adapters 4 (conf/backend/skyrl.yaml)
QWEN = model_shape("builtin:qwen3-0.5b-random")
BENCH_ARGS = [
    "model.path=builtin:qwen3-0.5b-random",
    "resources.gpus_per_node=1",
    "data.train_batch_size=32",
    "rollout.n=8",
    "trainer.mini_batch_size=32",
    "data.max_response_length=128",
    "data.max_prompt_length=64",
    "model.lora.rank=32",
    "model.lora.alpha=32",
]


def bench_run(micro_batch: int) -> RunShape:
    return RunShape(micro_batch, 192, 256, 192, lora_rank=32, lora_adapters=4)


def fits(micro_batch: int, fraction: float) -> bool:
    return estimate_jax_memory(QWEN, bench_run(micro_batch)).total <= fraction * H200


def test_the_builtin_half_billion_model_has_its_measured_parameter_count():
    assert QWEN is not None and round(QWEN.parameters() / 1e6) == 441  # docs/BENCHMARKS.md: 441 M


def test_the_estimate_agrees_with_every_h200_run():
    shared, whole = memory_fraction(GpuRequest(1, 2), {}), memory_fraction(GpuRequest(1, 1), {})
    assert (shared, whole) == (0.45, 0.75)
    assert not fits(64, shared)  # two sharing one GPU at micro batch 64: both out of memory
    assert fits(16, shared)  # at 16: both completed
    assert fits(64, whole) and fits(32, whole)  # one job per GPU: completed
    assert not fits(128, whole)  # 128: out of memory


def test_activations_grow_with_the_micro_batch_and_checkpointing_shrinks_them():
    small, large = (estimate_jax_memory(QWEN, bench_run(m)) for m in (16, 64))
    assert large.training == pytest.approx(4 * small.training, rel=0.01)
    checkpointed = estimate_jax_memory(QWEN, RunShape(64, 192, 256, 192, 32, 4, gradient_checkpointing=True))
    assert checkpointed.training < large.training / 5


def test_a_real_vocabulary_makes_the_logits_count():
    real = ModelShape(151936, 1024, 3072, 28, 16, 8, 128, True, 2)  # Qwen3-0.6B's config
    est = estimate_jax_memory(real, bench_run(64))
    logits = 64 * 192 * 151936 * (2 + 4)
    assert est.training > logits and logits / GIB > 10


def job(index: int, **kwargs) -> PlannedJob:
    resources = Resources(nodes=1, gpus_per_node=1, cpus_per_task=2, jobs_per_gpu=2, mem_gb=8, time_min=60)
    fields = {"resources": resources, "engine": "jax", "gpu_memory_gib": 78.5, **kwargs}
    return PlannedJob(index, [], {}, "p", 0, None, "h", **fields)


def test_the_dry_run_lines_warn_where_an_estimate_exceeds_its_share(monkeypatch):
    monkeypatch.setattr("launchers.local.gpu_memory_bytes", lambda gpu: int(H200))
    launcher = LocalLauncher(gpus=("0",))
    jobs = [job(0), job(1, gpu_memory_gib=20.6), job(2, engine="fsdp", gpu_memory_gib=None)]
    lines = memory_check(jobs, launcher).lines
    assert lines[1] == "  job 0: needs about 78.5 GiB per GPU, its share 63.2 GiB (0.45 of 140.4 GiB): does not fit"
    assert lines[2].endswith("(0.45 of 140.4 GiB)")
    assert "no estimate (SkyRL's GPU trainer, skyrl.engine=fsdp" in lines[3]
    assert lines[-1].startswith(
        "warning: 1 job(s) may run out of GPU memory (0): lower skyrl.jax.train_micro_batch_size"
    )
    cpu = replace(job(0).resources, gpus_per_node=0)
    assert memory_check([job(0, resources=cpu)], launcher).lines == []  # a CPU job: nothing to say


@pytest.mark.slow
def test_the_dry_run_prints_each_gpu_jobs_estimate(tmp_path):
    """The real dry run, on a machine that shows one GPU (CUDA_VISIBLE_DEVICES) but has no NVML to
    measure it: the estimate, and that there is nothing here to compare it with."""
    args = ["-m", "skyrl.jax.train_micro_batch_size=16,64", *BENCH_ARGS, "hydra.sweeper.dry_run=true"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "RLLM_SWEEPS_WARM_SERVER": "off", "CUDA_VISIBLE_DEVICES": "0"}
    proc = subprocess.run(
        [sys.executable, str(REPO / "train.py"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "GPU memory, estimated before launch" in proc.stdout
    assert "job 0: needs about 20.9 GiB per GPU" in proc.stdout  # AdamW's moments in float32 (optimizer.py)
    assert "job 1: needs about 78.7 GiB per GPU" in proc.stdout


def sized_job(index: int, share_jobs: int = 1) -> PlannedJob:
    """bench/gpu_placement.py's job (issue 48's "Why"), both sizes left to auto."""
    from rllm_sweeps.training.gpu_memory import memory_need

    need = replace(memory_need(QWEN, bench_run(64)), auto_micro_batch=True, auto_sample_sequences=True)
    resources = Resources(nodes=1, gpus_per_node=1, cpus_per_task=2, jobs_per_gpu=share_jobs, mem_gb=8, time_min=60)
    gib = round(need.total_gib(64, 256), 1)
    return PlannedJob(index, [], {}, "p", 0, None, "h", resources, "jax", gib, need)


def test_before_launch_auto_is_shown_at_the_micro_batch_that_fits_the_share(monkeypatch):
    monkeypatch.setattr("launchers.local.gpu_memory_bytes", lambda gpu: int(79.6 * GIB))  # an 80 GB H100
    check = memory_check([sized_job(0), sized_job(1)], LocalLauncher(gpus=("0",)))
    assert check.refused == []
    assert check.lines[1].startswith("  job 0: needs about 40.2 GiB per GPU")  # 78.7 at 64: out of memory there
    assert (
        "at micro batch 32 (auto), 256 sampled at once (auto), its share 59.7 GiB (0.75 of 79.6 GiB)" in check.lines[1]
    )
    assert not any(line.startswith("warning") for line in check.lines)


def test_a_job_that_fits_at_no_size_is_refused_with_the_fix(monkeypatch):
    monkeypatch.setattr("launchers.local.gpu_memory_bytes", lambda gpu: 2 * GIB)
    check = memory_check([sized_job(0)], LocalLauncher(gpus=("0",)))
    assert len(check.refused) == 1
    assert check.refused[0].startswith("job 0 cannot fit its GPU share at any size")
    assert "a smaller model" in check.refused[0] and "resources.gpus_per_node" in check.refused[0]


FAKE_NVML = '''"""NVML of a machine with one GPU of 2 GiB (the sweeper's view only: no job starts)."""
class NVMLError(Exception):
    pass
def nvmlInit(): pass
def nvmlShutdown(): pass
def nvmlDeviceGetCount(): return 1
def nvmlDeviceGetHandleByIndex(i): return i
def nvmlDeviceGetHandleByUUID(u): raise NVMLError(u)
class _Memory:
    total = 2 * 2**30
def nvmlDeviceGetMemoryInfo(handle): return _Memory()
'''


@pytest.mark.slow
def test_the_real_sweep_refuses_a_job_that_fits_at_no_size_before_writing_anything(tmp_path):
    """The real sweep (not a dry run) on a machine whose NVML shows one GPU of 2 GiB (a stand-in
    pynvml on the sweeper's path: this machine has no GPU): the 0.44 B model fits at no size, so the
    sweep says so with the fix, exits 2, and launches and writes nothing."""
    fake = tmp_path / "nvml"
    fake.mkdir()
    (fake / "pynvml.py").write_text(FAKE_NVML)
    sweep_dir = tmp_path / "sweep"
    args = ["-m", "trainer.lr=1e-4,3e-4", *BENCH_ARGS, f"hydra.sweep.dir={sweep_dir}"]
    env = {**os.environ, "PYTHONPATH": f"{fake}:{REPO}", "RLLM_SWEEPS_WARM_SERVER": "off"}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.run(
        [sys.executable, str(REPO / "train.py"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "GPU memory, estimated before launch" in proc.stdout
    assert "job 0 cannot fit its GPU share at any size" in proc.stderr and "a smaller model" in proc.stderr
    assert not sweep_dir.exists() or not any(sweep_dir.iterdir())
