"""Construct SkyRL's JAX backend for the loop, and the persistent JAX compile cache."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from rllm_sweeps.training.settings import LoopSettings

log = logging.getLogger(__name__)


def enable_jax_compilation_cache(cache_dir: str | os.PathLike) -> Path:
    """Turn on JAX's persistent compilation cache (call before the first compile).

    Every compiled program is cached, however fast it compiled (JAX's defaults skip
    programs that compile in under 1 s, which is most of them for a tiny model).
    Jobs of a sweep that share ``cache_dir`` and run the same shapes reuse the
    compiled XLA executables; tracing still happens in every process.
    """
    import jax

    path = Path(cache_dir).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


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
    ``train_micro_batch_size`` sequences (default: one optimizer mini batch).
    Adapter slot 0 is the base model, 1 the policy, 2 the KL reference (only
    with ``use_kl_loss`` and ``kl_beta > 0``).

    Not supported by this backend: gradient clipping (``trainer.max_grad_norm``
    is ignored; the loop still reports ``grad_norm``).
    """
    from skyrl.backends.jax import JaxBackend, JaxBackendConfig

    if max_lora_adapters is None:
        max_lora_adapters = 3 if settings.kl_active else 2
    if train_micro_batch_size is None:
        train_micro_batch_size = settings.mini_batch_size * settings.n
    if sample_max_num_sequences is None:
        episodes = max(settings.train_batch_size * settings.n, settings.val_batch_size * settings.n_val)
        sample_max_num_sequences = episodes * parallel_calls
    if settings.max_grad_norm is not None:
        log.info("JaxBackend has no gradient clipping: trainer.max_grad_norm=%s is ignored", settings.max_grad_norm)
    config = JaxBackendConfig(
        max_lora_adapters=max_lora_adapters,
        max_lora_rank=settings.lora_rank,
        train_micro_batch_size=train_micro_batch_size,
        sample_max_num_sequences=sample_max_num_sequences,
        **backend_config,
    )
    if config.use_ray:
        from skyrl.backends.ray_jax import RayJaxBackend

        return RayJaxBackend(str(model_dir), config)
    return JaxBackend(str(model_dir), config)
