"""Construct SkyRL's JAX backend for the loop, and the persistent JAX compile cache."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from rllm_sweeps.training.settings import LoopSettings
from rllm_sweeps.workflows.generator import longest_sequence

log = logging.getLogger(__name__)


def jax_cache_settings(cache_dir: str | os.PathLike) -> dict[str, object]:
    """JAX's persistent compilation cache in ``cache_dir``, every program cached: JAX's defaults skip
    programs that compile in under 1 s, which is most of them for a tiny model. Jobs of a machine
    that share ``cache_dir`` and run the same shapes reuse the compiled XLA executables; tracing
    still happens in every process."""
    return {
        "jax_compilation_cache_dir": str(Path(cache_dir).expanduser()),
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
    }


def enable_jax_compilation_cache(cache_dir: str | os.PathLike) -> Path:
    """Turn on the cache of :func:`jax_cache_settings` in this process (call before the first compile)."""
    import jax

    settings = jax_cache_settings(cache_dir)
    path = Path(str(settings["jax_compilation_cache_dir"]))
    path.mkdir(parents=True, exist_ok=True)
    for name, value in settings.items():
        jax.config.update(name, value)
    return path


def with_jax_cache_env(actor_options: dict, cache_dir: str | os.PathLike) -> dict:
    """Ray actor options whose process uses the same cache: RayJaxBackend's JAX processes are Ray
    actors, which this process's jax.config does not reach; JAX reads each setting's default from
    the environment variable of its upper-cased name. A variable the user set in the options'
    runtime_env wins."""
    runtime_env = dict(actor_options.get("runtime_env") or {})
    ours = {name.upper(): str(value) for name, value in jax_cache_settings(cache_dir).items()}
    runtime_env["env_vars"] = {**ours, **(runtime_env.get("env_vars") or {})}
    return {**actor_options, "runtime_env": runtime_env}


# forward_backward's default micro batch, as a token budget: the best measured on one H200 (0.44 B
# Qwen3, LoRA r32, 64 + 128 tokens a sequence): 64 sequences (0.40 steps/s; 32: 0.38, 16: 0.37; 128 ran
# out of the GPU's memory). Longer sequences get fewer; docs/BENCHMARKS.md.
MICRO_BATCH_TOKENS = 64 * (64 + 128)


def default_micro_batch(settings: LoopSettings) -> int:
    """Sequences per forward_backward call: the whole optimizer mini batch, or the largest divisor
    of it within MICRO_BATCH_TOKENS (equal micro batches: one compiled shape)."""
    tokens = longest_sequence(settings.max_prompt_length, settings.max_input_length, settings.max_response_length)
    return micro_batch_for(settings.mini_batch_size * settings.n, tokens)


def micro_batch_for(whole: int, tokens: int) -> int:
    """default_micro_batch of a mini batch of ``whole`` sequences of at most ``tokens`` tokens."""
    cap = max(1, MICRO_BATCH_TOKENS // max(1, tokens))
    return max(d for d in range(1, min(whole, cap) + 1) if whole % d == 0)


def sample_sequences_for(train_episodes: int, val_episodes: int, parallel_calls: int = 1) -> int:
    """The sampler's batch: the larger of a training rollout and a validation chunk, times the
    workflow's most calls one episode has waiting at once (one compiled shape for every call)."""
    return max(train_episodes, val_episodes) * parallel_calls


def make_jax_backend(
    model_dir: str | os.PathLike,
    settings: LoopSettings,
    *,
    max_lora_adapters: int | None = None,
    train_micro_batch_size: int | None = None,
    sample_max_num_sequences: int | None = None,
    parallel_calls: int = 1,
    **backend_config,
):
    """A ``skyrl.backends.jax.JaxBackend`` sized for ``settings``.

    Sizes are chosen so that every call of a run has the same batch shape, hence
    one JIT compile per kind of call: sampling batches are padded to
    ``sample_max_num_sequences`` (default: the larger of a training rollout and a
    validation chunk, times ``parallel_calls``, the workflow's most calls one episode has
    waiting at once: solver-judge's solvers), forward_backward runs in micro batches of
    ``train_micro_batch_size`` sequences (default: one optimizer mini batch, split into equal
    micro batches of at most MICRO_BATCH_TOKENS tokens).
    Adapter slot 0 is the base model, 1 the policy, 2 the KL reference (only
    with ``use_kl_loss`` and ``kl_beta > 0``).

    Its policies train with optimizer.py's AdamW (in the job's process, or in each of RayJaxBackend's
    JAX processes): SkyRL's, in float32 (bf16 checkpoints otherwise diverge at the first step), with
    ``trainer.max_grad_norm``'s global-norm clip before AdamW, as SkyRL's trainer does (``grad_norm``
    reports the norm before clipping, as SkyRL's).
    """
    from skyrl.backends.jax import JaxBackendConfig

    from rllm_sweeps.training.memory_retry import memory_retrying
    from rllm_sweeps.training.optimizer import policy_jax_backend, policy_ray_jax_backend

    if max_lora_adapters is None:
        max_lora_adapters = 3 if settings.needs_reference else 2
    if train_micro_batch_size is None:
        train_micro_batch_size = default_micro_batch(settings)
    if sample_max_num_sequences is None:
        sample_max_num_sequences = sample_sequences_for(
            settings.train_batch_size * settings.n, settings.val_batch_size * settings.n_val, parallel_calls
        )
    backend_config.setdefault("max_lora_rank", settings.lora_rank)  # skyrl.jax.max_lora_rank (default: the rank)
    config = JaxBackendConfig(
        max_lora_adapters=max_lora_adapters,
        train_micro_batch_size=train_micro_batch_size,
        sample_max_num_sequences=sample_max_num_sequences,
        **backend_config,
    )
    if config.use_ray:  # the same AdamW, installed in each of its JAX processes (optimizer.py)
        return policy_ray_jax_backend(settings.max_grad_norm)(str(model_dir), config)
    # Out-of-memory retried at half size in this process (memory_retry.py); RayJaxBackend's workers
    # are SkyRL's own: theirs fails the job.
    return memory_retrying(policy_jax_backend(settings.max_grad_norm))(str(model_dir), config)


def device_share_bytes() -> int | None:
    """The bytes JAX may use on this job's (first) GPU: its allocator's limit, which the launcher's
    XLA_PYTHON_CLIENT_MEM_FRACTION sets; None: no GPU (the CPU's has no such limit)."""
    import jax

    if jax.default_backend() != "gpu":
        return None
    stats = jax.local_devices()[0].memory_stats() or {}
    limit = stats.get("bytes_limit")
    return int(limit) if limit else None
