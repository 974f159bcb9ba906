"""Sizes that fit a GPU job's share, and out-of-memory retried at half size.

- Fitting (pure): ``skyrl.jax.train_micro_batch_size=auto`` is the largest size up to the one the
  job would use anyway (the mini batch in micro batches of MICRO_BATCH_TOKENS) that the estimate
  (records/memory.MemoryNeed) fits into MARGIN of the share: that size itself, else the largest power
  of two below it. ``sample_max_num_sequences=auto`` the same way. The optimizer step does not depend
  on the micro batch (SkyRL accumulates each micro batch's gradients and steps once).
- Retrying (pure policy): accelerate's ``find_executable_batch_size`` pattern (halve, call again,
  down to 1). accelerate itself is not used: its test of an out-of-memory error knows torch's and
  cuDNN's messages, not XLA's RESOURCE_EXHAUSTED, and it imports torch.
- Learning: a training size that ran out of memory below what the estimate allowed says XLA keeps
  more than ACTIVATION_FACTOR; the factor that would have refused it is kept on this machine
  (factor_file) so the next job is sized with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from rllm_sweeps.records.memory import GIB, MemoryNeed

MARGIN = 0.9  # of the share an estimate may fill: it is an estimate
AUTO = "auto"


def fit_size(largest: int, bytes_at: Callable[[int], int], budget: float) -> int | None:
    """``largest`` if its bytes fit ``budget``, else the largest power of two below it that fits;
    None: not even 1 fits."""
    size = largest
    if bytes_at(size) <= budget:
        return size
    size = 1 << (max(1, largest).bit_length() - 1)  # the largest power of two <= largest
    if size == largest:
        size //= 2
    while size >= 1:
        if bytes_at(size) <= budget:
            return size
        size //= 2
    return None


def fit_micro_batch(need: MemoryNeed, share_bytes: int, margin: float = MARGIN) -> int | None:
    """The micro batch the estimate fits into ``margin`` of the share (None: not even 1)."""
    return fit_size(need.micro_batch, lambda m: need.fixed + need.training_bytes(m), margin * share_bytes)


def fit_sample_sequences(need: MemoryNeed, share_bytes: int, margin: float = MARGIN) -> int | None:
    """The sampler's batch the estimate fits into ``margin`` of the share (None: not even 1)."""
    return fit_size(need.sample_sequences, lambda s: need.fixed + need.sampling_bytes(s), margin * share_bytes)


def fits_at_all(need: MemoryNeed, share_bytes: int) -> bool:
    """Whether the job fits its share at the smallest sizes (one sequence each): else nothing will."""
    return need.total(1, 1) <= share_bytes


@dataclass(frozen=True)
class SizeChoice:
    """A job's two sizes as fitted (None: make_jax_backend's default), and what it prints of them."""

    micro_batch: int | None
    sample_sequences: int | None
    train_chosen: str  # "auto", "set" or "default" (records/memory.MemoryFit)
    sample_chosen: str
    lines: tuple[str, ...] = ()  # stated once in the job's output (a GPU job's)
    estimate_gib: float | None = None


def choose_sizes(
    need: MemoryNeed | None, micro_asked: int | None, sample_asked: int | None, share: int | None
) -> SizeChoice:
    """The sizes a job builds its engine with. ``*_asked``: the user's number (0: the project's
    default), None: auto. Without a GPU share or an estimate, auto is the default (a CPU job is
    unchanged); on a GPU, auto is fitted (1 where nothing fits: the sweep refused that before launch)
    and a number that does not fit is kept, with a warning."""
    if need is None or share is None:
        return SizeChoice(
            micro_asked or None,
            sample_asked or None,
            "default" if not micro_asked else "set",
            "default" if not sample_asked else "set",
        )
    micro = (fit_micro_batch(need, share) or 1) if micro_asked is None else (micro_asked or need.micro_batch)
    sample = (
        (fit_sample_sequences(need, share) or 1) if sample_asked is None else (sample_asked or need.sample_sequences)
    )
    how = ("auto" if micro_asked is None else "set", "auto" if sample_asked is None else "set")
    gib, share_gib = need.total_gib(micro, sample), share / GIB
    lines = [
        f"GPU memory: skyrl.jax.train_micro_batch_size={micro} ({how[0]}), skyrl.jax.sample_max_num_sequences="
        f"{sample} ({how[1]}): about {gib:.1f} GiB of the job's {share_gib:.1f} GiB (estimate, docs/JOBS.md#gpus)"
    ]
    for name, asked, bytes_at, fitted in (
        ("train_micro_batch_size", micro_asked, need.fixed + need.training_bytes(micro), fit_micro_batch(need, share)),
        (
            "sample_max_num_sequences",
            sample_asked,
            need.fixed + need.sampling_bytes(sample),
            fit_sample_sequences(need, share),
        ),
    ):
        if asked is not None and bytes_at > share:
            lines.append(
                f"warning: skyrl.jax.{name}={micro if name.startswith('train') else sample} is estimated at "
                f"{bytes_at / GIB:.1f} GiB, more than the job's {share_gib:.1f} GiB: kept as set "
                f"(auto would be {fitted or 1}); an out-of-memory is retried at half size"
            )
    return SizeChoice(micro, sample, how[0], how[1], tuple(lines), round(gib, 1))


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


def half(size: int) -> int | None:
    """The size to retry at after an out-of-memory: half, down to 1; None: 1 failed."""
    return size // 2 if size > 1 else None


def call_halving[T](
    call: Callable[[], T],
    size: int,
    resize: Callable[[int], None],
    is_out_of_memory: Callable[[BaseException], bool],
) -> T:
    """``call()``; on an out-of-memory error, ``resize(half)`` and call again, down to size 1, whose
    failure is raised. ``resize`` records the retry and prepares the engine for the call again."""
    while True:
        try:
            return call()
        except Exception as err:
            smaller = half(size)
            if smaller is None or not is_out_of_memory(err):
                raise
            resize(smaller)
            size = smaller


def factor_seen(need: MemoryNeed, failed_micro_batch: int, share_bytes: int) -> float:
    """The activation factor at which the estimate of ``failed_micro_batch`` (which ran out of
    memory) fills the share: at least the factor the estimate had."""
    room = share_bytes - need.fixed - failed_micro_batch * need.other_per_sequence
    activations = failed_micro_batch * need.activations_per_sequence
    if activations <= 0:
        return need.activation_factor
    return max(need.activation_factor, room / activations)


def with_factor(need: MemoryNeed, factor: float | None) -> MemoryNeed:
    """The estimate with a factor learned on this machine, where it is larger."""
    if factor is None or factor <= need.activation_factor:
        return need
    return replace(need, activation_factor=factor)


def factor_file(cache: Path) -> Path:
    """Where this machine keeps the learned factor (beside the JAX compilation cache)."""
    return cache / "gpu_memory_factor.json"


def learned_factor(cache: Path) -> float | None:
    """The factor a job on this machine learned from an out-of-memory; None: none yet."""
    try:
        return float(json.loads(factor_file(cache).read_text())["activation_factor"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def learn_factor(cache: Path, factor: float) -> None:
    """Keep ``factor`` for the next job, where it is larger than what is kept."""
    from rllm_sweeps.records.atomic import write_json_atomic

    kept = learned_factor(cache)
    if kept is None or factor > kept:
        cache.mkdir(parents=True, exist_ok=True)
        write_json_atomic(factor_file(cache), {"activation_factor": round(factor, 3)})


__all__ = [
    "AUTO",
    "MARGIN",
    "SizeChoice",
    "call_halving",
    "choose_sizes",
    "factor_seen",
    "fit_micro_batch",
    "fit_sample_sequences",
    "fit_size",
    "fits_at_all",
    "half",
    "is_out_of_device_memory",
    "learn_factor",
    "learned_factor",
    "with_factor",
]
