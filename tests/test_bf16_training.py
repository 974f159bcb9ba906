"""Published checkpoints are bf16: SkyRL's JAX engine computes in the dtype config.json names, and
SkyRL's own AdamW then holds its hyperparameters in bfloat16, where b2 = 0.999 is 1.0 and the first
optimizer step writes NaN (training/optimizer.py). These tests show the cause on SkyRL's own
optimizer, and that a bf16 checkpoint trains as a job (real SkyRL, JAX on the CPU)."""

from __future__ import annotations

import inspect
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from rllm_sweeps.cachedir import cache_dir
from rllm_sweeps.models import resolve_model_path
from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.result import JobResult

REPO = Path(__file__).resolve().parents[1]


def train_job(tmp_path: Path, *overrides: str) -> Path:
    """A real job by train.py (4 samples a prompt, no checkpoints), which must succeed; its directory."""
    job = tmp_path / "job"
    args = [sys.executable, str(REPO / "train.py"), "rollout.n=4", "trainer.save_freq=-1", *overrides]
    proc = subprocess.run([*args, f"hydra.run.dir={job}"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return job


def bf16_lora_step(tx) -> dict:
    """One AdamW step of ``tx`` on a bf16 LoRA pair as SkyRL starts it (A random, B zero: A's
    gradient is exactly 0), through nnx's apply as SkyRL's optimizer does."""
    import jax.numpy as jnp
    import optax

    params = {"lora_A": jnp.full((4, 2), 0.5, jnp.bfloat16), "lora_B": jnp.zeros((2, 4), jnp.bfloat16)}
    grads = {"lora_A": jnp.zeros((4, 2), jnp.bfloat16), "lora_B": jnp.full((2, 4), 0.25, jnp.bfloat16)}
    state = tx.init(params)
    for name, value in {"learning_rate": 1e-3, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "weight_decay": 0.0}.items():
        state.hyperparams[name] = jnp.asarray(value, state.hyperparams[name].dtype)  # as optim_step sets them
    updates, _ = tx.update(grads, state, params)
    return optax.apply_updates(params, updates)


def all_finite(tree: dict) -> bool:
    import jax.numpy as jnp

    return all(bool(jnp.isfinite(v.astype(jnp.float32)).all()) for v in tree.values())


def test_skyrls_own_adamw_writes_nan_into_a_bf16_adapter_at_its_first_step_and_ours_does_not():
    import jax.numpy as jnp
    import optax
    from skyrl.backends.jax import JaxBackendImpl

    from rllm_sweeps.training.optimizer import policy_adamw

    # SkyRL 0.4.0 builds its optimizer so (if this changes, the workaround may have become unneeded)
    assert "optax.inject_hyperparams(optax.adamw)(learning_rate=0.0)" in inspect.getsource(JaxBackendImpl.create_model)
    skyrls = optax.inject_hyperparams(optax.adamw)(learning_rate=0.0)
    assert skyrls.init({"w": jnp.zeros(1, jnp.bfloat16)}).hyperparams["b2"].dtype == jnp.bfloat16
    assert not all_finite(bf16_lora_step(skyrls))  # b2 rounds to 1.0: bias correction 0, A's 0/0 = NaN
    for clip in (1.0, None):
        stepped = bf16_lora_step(policy_adamw(clip))
        assert all_finite(stepped) and stepped["lora_B"].dtype == "bfloat16"
        assert float(abs(stepped["lora_B"].astype("float32")).max()) > 0  # it moved


@pytest.mark.slow
def test_the_tiny_model_saved_as_bf16_trains_three_steps_with_finite_loss_and_grad_norm_and_real_responses(tmp_path):
    model = resolve_model_path("builtin:tiny-qwen3-bf16", cache_dir())
    assert json.loads((model / "config.json").read_text())["dtype"] == "bfloat16"  # as published checkpoints
    job = train_job(
        tmp_path,
        "model.path=builtin:tiny-qwen3-bf16",
        "trainer.total_batches=3",
        "trainer.test_freq=0",
        "data.train_batch_size=8",
        "task.dataset.val_size=8",
    )
    result = JobResult.read(job)
    assert result.status == "completed" and result.backend == "JaxBackend"  # SkyRL's class, under optimizer.py's
    steps = [r for r in read_metrics(job) if r["kind"] == "train"]
    assert [r["step"] for r in steps] == [1, 2, 3]
    for r in steps:  # before the fix: loss and grad_norm NaN from step 1, then 1-token responses
        assert math.isfinite(r["loss"]) and math.isfinite(r["grad_norm"]), r
        assert r["response_length_mean"] > 1, r


@pytest.mark.slow
def test_smollm2_135m_instruct_is_built_from_its_packages_gguf_as_published_and_trains_two_steps(tmp_path):
    from transformers import AutoTokenizer

    model = resolve_model_path("builtin:smollm2-135m-instruct", cache_dir())  # about 30 s the first time
    config = json.loads((model / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["dtype"] == "bfloat16"
    assert (config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]) == (576, 30, 49152)
    tokenizer = AutoTokenizer.from_pretrained(model)
    assert (tokenizer.eos_token, tokenizer.pad_token, tokenizer.bos_token) == ("<|im_end|>",) * 2 + ("<|im_start|>",)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert prompt.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert prompt.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    job = train_job(
        tmp_path,
        "model.path=builtin:smollm2-135m-instruct",
        "trainer.total_batches=2",
        "trainer.val_before_train=false",
        "data.train_batch_size=4",
        "data.val_batch_size=4",
        "task.dataset.val_size=4",
    )
    steps = [r for r in read_metrics(job) if r["kind"] == "train"]
    assert [r["step"] for r in steps] == [1, 2]
    assert all(math.isfinite(r["loss"]) and math.isfinite(r["grad_norm"]) for r in steps), steps
    assert all(r["response_length_mean"] > 1 for r in steps), steps
