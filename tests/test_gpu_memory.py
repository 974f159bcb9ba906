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
from rllm_sweeps.sweep.memory_check import memory_lines
from rllm_sweeps.training.gpu_memory import GIB, ModelShape, RunShape, estimate_jax_memory

REPO = Path(__file__).resolve().parents[1]
H200 = 140.4 * GIB  # NVML's total of the H200 the figures were measured on (143,771 MiB)
# bench/gpu_placement.py's runs: 32 prompts x 8 samples, 64 + 128 tokens (SkyRL pads to 192), LoRA r32,
# skyrl.jax.max_lora_adapters 4 (conf/backend/skyrl.yaml)
QWEN = model_shape("builtin:qwen3-0.5b-random")


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
    lines = memory_lines([job(0), job(1, gpu_memory_gib=20.6), job(2, engine="fsdp", gpu_memory_gib=None)], launcher)
    assert lines[1] == "  job 0: needs about 78.5 GiB per GPU, its share 63.2 GiB (0.45 of 140.4 GiB): does not fit"
    assert lines[2].endswith("(0.45 of 140.4 GiB)")
    assert "no estimate (SkyRL's GPU trainer, skyrl.engine=fsdp" in lines[3]
    assert lines[-1].startswith(
        "warning: 1 job(s) may run out of GPU memory (0): lower skyrl.jax.train_micro_batch_size"
    )
    cpu = replace(job(0).resources, gpus_per_node=0)
    assert memory_lines([job(0, resources=cpu)], launcher) == []  # a CPU job: nothing to say


@pytest.mark.slow
def test_the_dry_run_prints_each_gpu_jobs_estimate(tmp_path):
    """The real dry run, on a machine that shows one GPU (CUDA_VISIBLE_DEVICES) but has no NVML to
    measure it: the estimate, and that there is nothing here to compare it with."""
    args = [
        "-m",
        "skyrl.jax.train_micro_batch_size=16,64",
        "model.path=builtin:qwen3-0.5b-random",
        "resources.gpus_per_node=1",
        "data.train_batch_size=32",
        "rollout.n=8",
        "trainer.mini_batch_size=32",
        "data.max_response_length=128",
        "data.max_prompt_length=64",
        "model.lora.rank=32",
        "model.lora.alpha=32",
        "hydra.sweeper.dry_run=true",
    ]
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
