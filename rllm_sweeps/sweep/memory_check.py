"""The dry run's GPU memory lines: each GPU job's estimate (config/memory_need.py) against its share.

An estimate only warns: the dry run goes on, and so would the run. The share is known where the
launcher knows the job's GPU (the local launcher on a machine with GPUs: NVML's memory of the GPU
times JAX's fraction, gpu_placement.memory_fraction); elsewhere (a machine without GPUs, a SLURM
login node) the estimate is shown alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from launchers.base import Launcher
from rllm_sweeps.records.plan import PlannedJob
from rllm_sweeps.training.gpu_memory import GIB

FIX = (
    "lower skyrl.jax.train_micro_batch_size (or set skyrl.jax.gradient_checkpointing=true), "
    "or give each job a GPU of its own (resources.jobs_per_gpu=1)"
)


def memory_lines(jobs: Iterable[PlannedJob], launcher: Launcher) -> list[str]:
    """One line per job that asks for GPUs, and a warning line where an estimate exceeds its share."""
    lines: list[str] = []
    over = []
    for job in jobs:
        if job.resources is None or not job.resources.gpus_per_node:
            continue
        if job.engine != "jax":
            lines.append(
                f"  job {job.index}: no estimate (SkyRL's GPU trainer, skyrl.engine={job.engine}, sizes itself)"
            )
            continue
        if job.gpu_memory_gib is None:
            lines.append(f"  job {job.index}: no estimate (the model's config.json is not on this machine)")
            continue
        need = f"  job {job.index}: needs about {job.gpu_memory_gib:.1f} GiB per GPU"
        share = launcher.gpu_memory_share(job.resources)
        if share is None:
            lines.append(f"{need} (no GPU here to compare with)")
            continue
        fraction, total = share
        have = fraction * total / GIB
        fits = job.gpu_memory_gib <= have
        lines.append(
            f"{need}, its share {have:.1f} GiB ({fraction:.2f} of {total / GIB:.1f} GiB)"
            + ("" if fits else ": does not fit")
        )
        if not fits:
            over.append(job.index)
    if not lines:
        return []
    head = ["GPU memory, estimated before launch (SkyRL's JAX engine; docs/JOBS.md#gpus):"]
    tail = []
    if over:
        tail = [f"warning: {len(over)} job(s) may run out of GPU memory ({', '.join(map(str, over))}): {FIX}"]
    return head + lines + tail


__all__ = ["memory_lines"]
