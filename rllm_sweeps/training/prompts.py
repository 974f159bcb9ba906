"""Which prompts a phase rolls out, and how: a step's training batch, validation's chunks.

A :class:`PromptBatch` is everything ``run_episodes`` needs besides the workflow: the examples,
episodes per example, the sampling settings, the seeds, and where the batch sits in its phase
(task ids and seed indices of its episodes).

Every choice is a pure function of ``trainer.seed`` and the step (no hidden RNG state): a step's
prompts are a slice of a fixed shuffle per epoch; seeds come from streams of (seed, stream, step).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rllm_sweeps.tasks.base import Example
from rllm_sweeps.training.settings import LoopSettings
from rllm_sweeps.workflows.client import Sampling, SeedPlan

# Streams of randomness, each derived from (trainer.seed, stream, step).
SEED_TRAIN_SAMPLING, SEED_VAL_SAMPLING, SEED_DATA_ORDER = 1, 2, 3


@dataclass(frozen=True)
class PromptBatch:
    """Prompts to roll out: ``n`` episodes per example, in (example, rollout) order."""

    examples: Sequence[Example]
    n: int
    sampling: Sampling
    seeds: SeedPlan
    first_index: int = 0  # the first example's index in its split (the episodes' task ids)
    first_episode: int = 0  # the first episode's index in the phase (its seeds)
    epoch: int = 0


def train_batch(train: Sequence[Example], settings: LoopSettings, index: int) -> PromptBatch:
    """The 0-based ``index``-th prompt batch: batches of a per-epoch permutation (last partial
    dropped). Step k's is batch k, plus the batches dynamic sampling drew before it."""
    s = settings
    bs = s.train_batch_size
    epoch, pos = divmod(index, len(train) // bs)
    order = np.random.default_rng([s.seed, SEED_DATA_ORDER, epoch]).permutation(len(train))
    examples = [train[int(i)] for i in order[pos * bs : (pos + 1) * bs]]
    return PromptBatch(
        examples,
        s.n,
        Sampling(s.temperature, s.top_p, s.top_k, s.max_response_length, s.stop),
        SeedPlan(s.seed, SEED_TRAIN_SAMPLING, index, len(examples) * s.n),
        first_index=index * bs,
        epoch=epoch,
    )


def val_batches(val: Sequence[Example], settings: LoopSettings) -> list[PromptBatch]:
    """The val set (its first ``trainer.val_max_samples`` examples, as rLLM's SkyRL backend) in chunks of
    ``data.val_batch_size``; episode e of the set has the same seed at every validation."""
    s = settings
    if s.val_max_samples is not None and s.val_max_samples >= 0:
        val = val[: s.val_max_samples]
    length = s.max_response_length if s.val_max_response_length is None else s.val_max_response_length
    sampling = Sampling(s.val_temperature, s.val_top_p, s.val_top_k, length, s.val_stop)
    seeds = SeedPlan(s.seed, SEED_VAL_SAMPLING, 0, len(val) * s.n_val)
    return [
        PromptBatch(val[start : start + s.val_batch_size], s.n_val, sampling, seeds, start, start * s.n_val)
        for start in range(0, len(val), s.val_batch_size)
    ]


__all__ = ["SEED_DATA_ORDER", "SEED_TRAIN_SAMPLING", "SEED_VAL_SAMPLING", "PromptBatch", "train_batch", "val_batches"]
