"""A JAX job's two engine sizes, fitted to its GPU share (training/memory_fit.py's rule) from its config."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rllm_sweeps.engines.settings import AskedSize
from rllm_sweeps.records.memory import GIB, MemoryFit, MemoryNeed
from rllm_sweeps.training.memory_fit import SizeChoice, choose_sizes


@dataclass(frozen=True)
class FittedSizes:
    """What the job builds its engine with, and what it knows to retry and record with."""

    choice: SizeChoice
    need: MemoryNeed | None  # None: no estimate (the model's config.json is not readable here)
    share: int | None  # bytes JAX may use on the job's GPU; None: no GPU

    def record(self, config: Any) -> MemoryFit:
        """result.json's record of the sizes the engine was built with (SkyRL's JaxBackendConfig)."""
        return MemoryFit(
            train_micro_batch_size=int(config.train_micro_batch_size),
            sample_max_num_sequences=int(config.sample_max_num_sequences),
            train_chosen=self.choice.train_chosen,
            sample_chosen=self.choice.sample_chosen,
            share_gib=None if self.share is None else round(self.share / GIB, 1),
            estimate_gib=self.choice.estimate_gib,
            activation_factor=None if self.need is None else self.need.activation_factor,
        )


def fit_to_share(
    memory_need: Callable[[], MemoryNeed | None], asked: dict[str, AskedSize], share: int | None
) -> FittedSizes:
    """``asked``: skyrl.jax.train_micro_batch_size and sample_max_num_sequences as set (auto or a
    number); ``memory_need``: the job's estimate, asked for on a GPU only. A GPU job states its sizes
    once here; a CPU job prints nothing (its sizes are the defaults)."""
    from rllm_sweeps.config.memory_need import asked_size, is_auto

    def wanted(key: str) -> int | None:
        return None if is_auto(asked[key]) else asked_size(asked[key])

    need = memory_need() if share is not None else None
    choice = choose_sizes(need, wanted("train_micro_batch_size"), wanted("sample_max_num_sequences"), share)
    for line in choice.lines:
        print(line, flush=True)
    return FittedSizes(choice, need, share)


__all__ = ["FittedSizes", "fit_to_share"]
