"""A planned job's GPU memory estimate, from its resolved config (training/gpu_memory.py estimates).

Only SkyRL's JAX engine is estimated: SkyRL's GPU trainer (fsdp/megatron) sizes its vLLM engines and
FSDP workers itself (``gpu_memory_utilization``), so its jobs have no estimate. The model's sizes
come from its config.json: a built-in model's recipe, a local directory, or a hub model already in
the Hugging Face cache (nothing is downloaded for a dry run).
"""

from __future__ import annotations

import functools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from rllm_sweeps.plain_tree import plain_get_or_none
from rllm_sweeps.records.memory import MemoryNeed
from rllm_sweeps.training.gpu_memory import ModelShape, RunShape, memory_need
from rllm_sweeps.training.memory_fit import AUTO


def job_memory_need(plain: dict[str, Any]) -> MemoryNeed | None:
    """The estimate of a job of SkyRL's JAX engine by size, with the factor a job on this machine
    learned from an out-of-memory (training/memory_fit.py); None: another engine, or no config.json here."""
    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.training.memory_fit import learned_factor, with_factor

    if plain_get_or_none(plain, "skyrl.engine") != "jax":
        return None
    model = model_shape(str(plain_get_or_none(plain, "model.path")))
    if model is None:
        return None
    need = memory_need(model, run_shape(plain))
    need = replace(
        need,
        auto_micro_batch=is_auto(plain_get_or_none(plain, "skyrl.jax.train_micro_batch_size")),
        auto_sample_sequences=is_auto(plain_get_or_none(plain, "skyrl.jax.sample_max_num_sequences")),
    )
    return with_factor(need, learned_factor(cache_dir()))


def is_auto(size: Any) -> bool:
    """skyrl.jax.train_micro_batch_size / sample_max_num_sequences left to fit the job's share."""
    return size is None or str(size) == AUTO


def asked_size(size: Any) -> int:
    """The number a user set for a size; 0 for auto (and SkyRL's 0, "not set")."""
    return 0 if is_auto(size) else int(size)


def run_shape(plain: dict[str, Any]) -> RunShape:
    """The sizes the job's JaxBackend is built with (training/jax_backend.py's defaults for 0)."""
    from skyrl.tx.utils.models import round_up_seq_len  # SkyRL's padding of a batch's length

    from rllm_sweeps.config.generator_rules import MAX_INPUT_LENGTH
    from rllm_sweeps.training.jax_backend import micro_batch_for, sample_sequences_for
    from rllm_sweeps.workflows.generator import longest_sequence

    def get(key: str) -> Any:
        return plain_get_or_none(plain, key)

    max_input = get(MAX_INPUT_LENGTH)
    tokens = longest_sequence(
        int(get("data.max_prompt_length")),
        None if max_input is None else int(max_input),
        int(get("data.max_response_length")),
    )
    n = int(get("rollout.n"))
    parallel_calls = int(get("workflow.n_solutions") or 1)  # solver-judge's solvers sample at once
    micro = asked_size(get("skyrl.jax.train_micro_batch_size")) or micro_batch_for(
        int(get("trainer.mini_batch_size")) * n, tokens
    )
    sample = asked_size(get("skyrl.jax.sample_max_num_sequences")) or sample_sequences_for(
        int(get("data.train_batch_size")) * n,
        int(get("data.val_batch_size")) * int(get("rollout.n_val")),
        parallel_calls,
    )
    return RunShape(
        micro_batch=micro,
        train_tokens=round_up_seq_len(tokens),
        sample_sequences=sample,
        sample_tokens=round_up_seq_len(tokens),
        lora_rank=int(get("model.lora.rank")),
        lora_adapters=int(get("skyrl.jax.max_lora_adapters") or 2),
        gradient_checkpointing=bool(get("skyrl.jax.gradient_checkpointing")),
    )


@functools.lru_cache(maxsize=64)
def model_shape(path: str) -> ModelShape | None:
    """The model's sizes, once per path; None: its config.json is not on this machine."""
    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models.tiny import BUILTIN_MODELS, builtin_dir, is_hub_id

    if path.startswith("builtin:"):
        name = path.removeprefix("builtin:")
        recipe = BUILTIN_MODELS.get(name)
        if recipe is None:
            return None
        if "model" in recipe:  # a tiny model's config, in the dtype it is saved in
            saved = {"dtype": recipe["save_dtype"]} if "save_dtype" in recipe else {}
            return ModelShape.from_hf_config({**recipe["model"], **saved})
        config = builtin_dir(name, cache_dir()) / "config.json"  # a converted model: once built
    else:
        config = Path(path).expanduser() / "config.json"
    if not config.is_file() and is_hub_id(path):
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(path, "config.json")
        config = Path(cached) if isinstance(cached, str) else config
    try:
        return ModelShape.from_hf_config(json.loads(config.read_text()))
    except (OSError, ValueError, KeyError):
        return None


__all__ = [
    "asked_size",
    "is_auto",
    "job_memory_need",
    "model_shape",
    "run_shape",
]
