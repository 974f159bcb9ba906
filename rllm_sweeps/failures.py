"""Why a job failed, from what it raised: the user's to fix, the infrastructure's (worth a retry
elsewhere), the accelerator's memory (not retried: the same job on the same share fails again;
records/status.py's OUT_OF_MEMORY_FIX says what to change), or training that diverged (DIVERGED_FIX)."""

from __future__ import annotations

from rllm_sweeps.records.status import FailureKind


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


def is_out_of_device_memory(err: BaseException) -> bool:
    """Whether `err` (or what it was raised from) is an accelerator allocation that failed: XLA says
    RESOURCE_EXHAUSTED (JAX on a GPU; on the CPU for an allocation past what the host has), torch
    raises its OutOfMemoryError ("CUDA out of memory")."""
    seen: BaseException | None = err
    while seen is not None:
        text = str(seen)
        if ("RESOURCE_EXHAUSTED" in text and "memory" in text.lower()) or type(seen).__name__ == "OutOfMemoryError":
            return True
        seen = seen.__cause__ or seen.__context__
    return False


__all__ = ["failure_kind", "is_out_of_device_memory"]
