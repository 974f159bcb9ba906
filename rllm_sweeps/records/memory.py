"""A GPU job's memory records: its estimate by size (in plan.json, for the sweep's check before
launch) and what its sizes became (in result.json: chosen, retried at half on out-of-memory).

The estimate is made by training/gpu_memory.py; this is its record (a pydantic model, records/model.py),
so that plan.json's readers need no training stack. It is linear in each size, and the peak is the larger of
training and sampling, so each size is fitted on its own (training/memory_fit.py).
"""

from __future__ import annotations

from dataclasses import field

from pydantic.dataclasses import dataclass

GIB = 2**30


@dataclass(frozen=True)
class MemoryNeed:
    """Bytes a job of SkyRL's JAX engine needs per GPU, as a function of its micro batch (sequences
    per forward_backward) and its sampler's batch (sequences sampled at once)."""

    weights: int  # the base weights
    lora_state: int  # LoRA's adapters, their accumulated gradients and AdamW's moments
    activations_per_sequence: int  # what the layers' code keeps per trained sequence, before XLA's factor
    other_per_sequence: int  # logits (and checkpointed layer inputs) per trained sequence: not scaled
    sample_per_sequence: int  # KV cache and last logits per sampled sequence
    micro_batch: int  # the micro batch asked for (for auto: the largest it may be)
    sample_sequences: int  # the sampler's batch asked for (for auto: the largest it may be)
    activation_factor: float  # what XLA keeps at the backward's peak against the layers' count
    auto_micro_batch: bool = False  # skyrl.jax.train_micro_batch_size=auto: fitted to the job's share
    auto_sample_sequences: bool = False  # skyrl.jax.sample_max_num_sequences=auto

    @property
    def fixed(self) -> int:
        return self.weights + self.lora_state

    def training_bytes(self, micro_batch: int) -> int:
        per = self.activations_per_sequence * self.activation_factor + self.other_per_sequence
        return int(micro_batch * per)

    def sampling_bytes(self, sample_sequences: int) -> int:
        return sample_sequences * self.sample_per_sequence

    def total(self, micro_batch: int, sample_sequences: int) -> int:
        return self.fixed + max(self.training_bytes(micro_batch), self.sampling_bytes(sample_sequences))

    def total_gib(self, micro_batch: int, sample_sequences: int) -> float:
        return self.total(micro_batch, sample_sequences) / GIB


@dataclass(frozen=True)
class MemoryRetry:
    """One out-of-memory retried at half a size, within the job's attempt (the model is not rebuilt:
    SkyRL's JAX backend reads both sizes from its config at every call)."""

    size: str  # "train_micro_batch_size" or "sample_max_num_sequences"
    failed_at: int
    retried_at: int


@dataclass
class MemoryFit:
    """What a job's sizes were, how they were chosen, and each out-of-memory retry (result.json)."""

    train_micro_batch_size: int  # as the job ended (after any retry)
    sample_max_num_sequences: int
    train_chosen: str  # "auto" (fitted to the share), "set" (the user's number), "default" (no GPU share known)
    sample_chosen: str  # the same, for sample_max_num_sequences
    share_gib: float | None = None  # the GPU memory the job may use (JAX's limit); None: no GPU
    estimate_gib: float | None = None  # at the sizes chosen; None: no estimate (no config.json here)
    activation_factor: float | None = None  # the estimate's, as the job ended (raised by a retry)
    retries: list[MemoryRetry] = field(default_factory=list)


__all__ = ["GIB", "MemoryFit", "MemoryNeed", "MemoryRetry"]
