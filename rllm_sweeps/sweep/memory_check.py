"""Each GPU job's memory estimate (config/memory_need.py) against its share, before launch: shown by
the dry run and the real sweep alike.

Where the launcher knows the job's GPU (the local launcher on a machine with GPUs: NVML's memory of
the GPU times JAX's fraction, gpu_placement.memory_fraction), a size left to ``auto`` is shown as
the job will fit it (training/memory_fit.py), a number set that does not fit is warned about, and a
job that fits at no size (one sequence a micro batch, one sampled at once) is refused: nothing would
make it run. Elsewhere (a machine without GPUs, a SLURM login node) the estimate is shown alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from launchers.base import Launcher
from rllm_sweeps.records.memory import GIB, MemoryNeed
from rllm_sweeps.records.plan import PlannedJob
from rllm_sweeps.training.memory_fit import fit_micro_batch, fit_sample_sequences, fits_at_all

FIX = (
    "lower skyrl.jax.train_micro_batch_size (or set skyrl.jax.gradient_checkpointing=true), "
    "or give each job a GPU of its own (resources.jobs_per_gpu=1)"
)
NOTHING_FITS_FIX = (
    "a smaller model, fewer tokens a sequence (data.max_prompt_length, data.max_response_length), "
    "a lower LoRA rank (model.lora.rank) or fewer adapter slots (skyrl.jax.max_lora_adapters), "
    "or more GPUs per job (resources.gpus_per_node)"
)


@dataclass(frozen=True)
class MemoryCheck:
    """What the sweep prints before launch, and the jobs it refuses (they fit at no size)."""

    lines: list[str]
    refused: list[str]  # one error line per job that cannot fit its share at any size


def memory_check(jobs: Iterable[PlannedJob], launcher: Launcher) -> MemoryCheck:
    """One line per job that asks for GPUs, a warning where a size set does not fit its share, and
    the jobs that fit at no size."""
    lines: list[str] = []
    over: list[int] = []
    refused: list[str] = []
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
            sized = job.gpu_memory_need
            if sized is not None and sized.auto_micro_batch:  # the most auto may take
                need += f" at most (micro batch {sized.micro_batch}; auto: the job fits it to its GPU)"
            lines.append(f"{need} (no GPU here to compare with)")
            continue
        fraction, total = share
        have = fraction * total
        of = f"its share {have / GIB:.1f} GiB ({fraction:.2f} of {total / GIB:.1f} GiB)"
        if job.gpu_memory_need is None:  # a plan of before the estimate by size: its total alone
            fits = job.gpu_memory_gib * GIB <= have
            lines.append(f"{need}, {of}" + ("" if fits else ": does not fit"))
            over += [] if fits else [job.index]
            continue
        line, fits = _sized_line(job.index, job.gpu_memory_need, int(have), of)
        lines.append(line)
        if not fits_at_all(job.gpu_memory_need, int(have)):
            least = job.gpu_memory_need.total_gib(1, 1)
            refused.append(
                f"job {job.index} cannot fit its GPU share at any size: about {least:.1f} GiB at one sequence "
                f"a micro batch and one sampled at once, {of}; use {NOTHING_FITS_FIX}"
            )
        elif not fits:
            over.append(job.index)
    if not lines:
        return MemoryCheck([], [])
    head = ["GPU memory, estimated before launch (SkyRL's JAX engine; docs/JOBS.md#gpus):"]
    tail = []
    if over:
        tail = [f"warning: {len(over)} job(s) may run out of GPU memory ({', '.join(map(str, over))}): {FIX}"]
    return MemoryCheck(head + lines + tail, refused)


def _sized_line(index: int, need: MemoryNeed, have: int, of: str) -> tuple[str, bool]:
    """A job's line at the sizes it will run with (auto: fitted), and whether they fit."""
    micro = (fit_micro_batch(need, have) or 1) if need.auto_micro_batch else need.micro_batch
    sample = (fit_sample_sequences(need, have) or 1) if need.auto_sample_sequences else need.sample_sequences
    gib = need.total_gib(micro, sample)
    how = ("auto" if need.auto_micro_batch else "set", "auto" if need.auto_sample_sequences else "set")
    fits = gib * GIB <= have
    sizes = f"micro batch {micro} ({how[0]}), {sample} sampled at once ({how[1]})"
    line = f"  job {index}: needs about {gib:.1f} GiB per GPU at {sizes}, {of}"
    return line + ("" if fits else ": does not fit"), fits


__all__ = ["MemoryCheck", "memory_check"]
