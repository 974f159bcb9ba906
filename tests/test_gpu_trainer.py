"""SkyRL's GPU trainer (skyrl.engine=fsdp) end to end: two steps of the default loop on FSDP + vLLM.

The proof for a machine with CUDA, vLLM and flash-attn (`pip install -e '.[fsdp]'`, then
`make test-gpu`); skipped elsewhere. It has never run: no machine this project has used had vLLM
(docs/BENCHMARKS.md). What runs on CPU of the same path is in tests/test_gpu_trainer_on_cpu.py.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.result import JobResult

REPO = Path(__file__).resolve().parents[1]


def _vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None


def _gpu_trainer_available() -> bool:
    if any(importlib.util.find_spec(m) is None for m in ("vllm", "flash_attn")):
        return False
    import torch

    return torch.cuda.is_available()


pytestmark = pytest.mark.gpu
NEEDS_GPU_TRAINER = pytest.mark.skipif(
    not _gpu_trainer_available(), reason="needs CUDA, vllm and flash_attn (pip install '.[fsdp]')"
)


def train_two_steps(job: Path, *overrides: str) -> None:
    """train.py with `overrides` into `job`, on the GPU; it must succeed."""
    cmd = [sys.executable, str(REPO / "train.py"), *overrides, f"hydra.run.dir={job}"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


@pytest.mark.skipif(not _vllm_installed(), reason="needs vllm (pip install '.[fsdp]')")
def test_the_lora_ranks_validation_accepts_are_vllms():
    from typing import get_args

    from vllm.config.lora import MaxLoRARanks

    from rllm_sweeps.config.gpu_trainer_rules import VLLM_LORA_RANKS

    assert VLLM_LORA_RANKS == tuple(sorted(get_args(MaxLoRARanks)))


@NEEDS_GPU_TRAINER
def test_two_training_steps_of_the_default_loop_on_skyrls_fsdp_trainer(tmp_path):
    job = tmp_path / "job"
    train_two_steps(
        job,
        "skyrl.engine=fsdp",
        "resources.gpus_per_node=1",
        "trainer.total_batches=2",
        "trainer.test_freq=2",
        "trainer.save_freq=1",
        "skyrl.train.trainer.max_ckpts_to_keep=1",
        "task.dataset.val_size=8",
    )
    result = JobResult.read(job)
    assert result.status == "completed" and result.steps == 2
    assert result.backend == "SkyRLTrainBackend" and result.engine == "fsdp"
    steps = [r for r in read_metrics(job) if r["kind"] == "train"]
    assert [r["step"] for r in steps] == [1, 2]
    assert all(r["tokens_trained"] > 0 for r in steps)
    assert sorted(p.name for p in (job / "checkpoints").glob("step_*")) == ["step_2"]  # the newest 1 kept
    assert (job / "skyrl" / "logs").is_dir()  # SkyRL's own files stay in the job's directory
    # The trained policy exported as a PEFT adapter through SkyRL's trainer's own writer (issue 55).
    final = result.exports.final
    assert final is not None and final.step == 2
    assert {"adapter_config.json", "adapter_model.safetensors"} <= {p.name for p in (job / final.path).iterdir()}


# Each KL term alone (SkyRL's validate_cfg: use_kl_in_reward and use_kl_loss are mutually exclusive).
KL_TERMS = {
    "loss": ("algorithm.use_kl_loss=true", "algorithm.kl_beta=0.1"),
    "reward": ("skyrl.train.trainer.algorithm.use_kl_in_reward=true",),
}
TWO_STEPS = ("trainer.total_batches=2", "trainer.test_freq=2", "trainer.save_freq=-1", "task.dataset.val_size=8")
KL_ENGINES = {
    "fsdp": ("skyrl.engine=fsdp", "resources.gpus_per_node=1"),
    "megatron": (
        "skyrl.engine=megatron",
        "skyrl.train.trainer.policy.megatron_config.lora_config.merge_lora=false",
        "resources.gpus_per_node=1",
    ),
}


def kl_job(engine: str, term: str) -> list[str]:
    return [*KL_ENGINES[engine], *KL_TERMS[term], *TWO_STEPS]


@pytest.mark.parametrize("engine", sorted(KL_ENGINES))
@pytest.mark.parametrize("term", sorted(KL_TERMS))
def test_the_gpu_trainers_kl_jobs_validate(engine, term):
    """What the KL tests below run is a valid job (checked here, where they cannot run)."""
    from rllm_sweeps.config.load import load_config

    load_config(kl_job(engine, term), notify=lambda _: None)


# The step's KL to the reference, per term: the KL loss's (metrics.py "kl"), the reward's ("avg_kl").
KL_METRIC = {"loss": "kl", "reward": "avg_kl"}


def assert_kl_against_the_base_model(job: Path, term: str) -> None:
    steps = [r for r in read_metrics(job) if r["kind"] == "train"]
    assert [r["step"] for r in steps] == [1, 2]
    assert abs(steps[0][KL_METRIC[term]]) < 1e-2  # step 1 samples the base model, i.e. the reference
    assert all(r["time_ref_forward_s"] > 0 for r in steps)


@NEEDS_GPU_TRAINER
@pytest.mark.parametrize("term", sorted(KL_TERMS))
def test_each_kl_term_trains_against_skyrls_fsdp_reference_worker_group(tmp_path, term):
    """The KL's reference on fsdp is SkyRL's own FSDP reference worker group, a frozen copy of the base model
    colocated with the policy (engines/skyrl_reference.py); the KL loss is the loop's custom loss term. Never
    run here (no vLLM, flash-attn); tests/test_gpu_trainer_on_cpu.py runs its route on CPU."""
    train_two_steps(tmp_path / "job", *kl_job("fsdp", term))
    assert_kl_against_the_base_model(tmp_path / "job", term)


def _megatron_bridge_installed() -> bool:
    try:
        return importlib.util.find_spec("megatron.bridge") is not None
    except ModuleNotFoundError:  # no megatron package at all
        return False


NEEDS_MEGATRON = pytest.mark.skipif(
    not _gpu_trainer_available() or not _megatron_bridge_installed(),
    reason="needs CUDA, vllm, flash_attn and Megatron-Bridge (SkyRL's megatron extra)",
)


@NEEDS_MEGATRON
@pytest.mark.parametrize("term", sorted(KL_TERMS))
def test_each_kl_term_trains_against_the_reference_adapter_on_skyrls_megatron_trainer(tmp_path, term):
    """The KL's reference is a second, untrained adapter registered through SkyRLTrainBackend.create_model's
    multi-LoRA path (Megatron's AdapterStore); the KL loss is the loop's custom loss term. Never run here."""
    train_two_steps(tmp_path / "job", *kl_job("megatron", term))
    assert_kl_against_the_base_model(tmp_path / "job", term)
