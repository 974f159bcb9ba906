"""Why a job failed, from what it raised: the user's to fix, the infrastructure's (worth a retry
elsewhere), the accelerator's memory (already retried at half size down to 1 by the engine,
training/memory_retry.py; not retried by the sweep: the same job on the same share fails again;
out_of_memory_fix says what to change, leaving out what is in effect), or training that diverged
(DIVERGED_FIX)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rllm_sweeps.records.memory import MemoryFit
from rllm_sweeps.records.status import FailureKind
from rllm_sweeps.training.memory_fit import is_out_of_device_memory

if TYPE_CHECKING:
    from rllm_sweeps.engines.settings import EngineSettings


def failure_kind(err: BaseException) -> FailureKind:
    """DIVERGED (a non-finite loss, gradient or metric: training/divergence.py), INFRASTRUCTURE (host
    memory, disk, Ray/node loss), OUT_OF_MEMORY (the accelerator's: XLA's RESOURCE_EXHAUSTED, torch's
    CUDA out of memory) or USER (config, code)."""
    from rllm_sweeps.training.divergence import Diverged

    if isinstance(err, Diverged):
        return FailureKind.DIVERGED
    if is_out_of_device_memory(err):
        return FailureKind.OUT_OF_MEMORY
    infrastructure: tuple[type[BaseException], ...] = (MemoryError, OSError)
    try:
        import ray.exceptions

        from rllm_sweeps.runtime.errors import RayClusterError

        infrastructure += (ray.exceptions.RaySystemError, ray.exceptions.RayActorError, RayClusterError)
    except ImportError:
        pass
    return FailureKind.INFRASTRUCTURE if isinstance(err, infrastructure) else FailureKind.USER


def out_of_memory_fix(settings: EngineSettings, fit: MemoryFit | None) -> str:
    """What to change after an out-of-memory, leaving out what is already in effect (a micro batch
    already retried down to 1, a GPU already the job's own). ``settings``: the job's engine settings."""
    fixes = []
    for size, ended in (
        ("train_micro_batch_size", None if fit is None else fit.train_micro_batch_size),
        ("sample_max_num_sequences", None if fit is None else fit.sample_max_num_sequences),
    ):
        if ended is None or ended > 1:
            fixes.append(f"lower skyrl.jax.{size}" + ("" if ended is None else f" (it was {ended})"))
    if settings.jax is not None and not settings.jax.gradient_checkpointing:  # skyrl.engine=jax
        fixes.append("set skyrl.jax.gradient_checkpointing=true")
    if settings.jobs_per_gpu > 1:
        fixes.append("give each job a GPU of its own (resources.jobs_per_gpu=1)")
    rank, gpus = settings.lora_rank, settings.gpus_per_node
    fixes.append("fewer tokens a sequence (data.max_prompt_length, data.max_response_length)")
    if rank > 1:
        fixes.append(f"a lower LoRA rank (model.lora.rank={rank // 2})")
    fixes.append("a smaller model")
    if gpus:
        fixes.append(f"more GPUs (resources.gpus_per_node={2 * gpus})")
    return ", or ".join([", ".join(fixes[:-1]), fixes[-1]]) if len(fixes) > 1 else fixes[0]


__all__ = ["failure_kind", "out_of_memory_fix"]
