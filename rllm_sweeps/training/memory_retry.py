"""SkyRL's JaxBackend, its out-of-memory retried at half size within the job's attempt.

SkyRL's JAX backend reads ``train_micro_batch_size`` (``_micro_batch_size``, at every
forward/forward_backward) and ``sample_max_num_sequences`` (at every ``sample``) from its config:
changing them there changes the next call's shape (one more compile), nothing is rebuilt. A
forward_backward that failed may have added some micro batches' gradients (and its accumulated
gradients were donated to the failed call), so they are rebuilt as zeros: the loop calls
forward_backward once per optimizer step, after the previous step reset them (loop.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rllm_sweeps.records.memory import GIB, MemoryFit, MemoryNeed, MemoryRetry
from rllm_sweeps.training.memory_fit import call_halving, factor_seen, is_out_of_device_memory, learn_factor

TRAIN_SIZE, SAMPLE_SIZE = "train_micro_batch_size", "sample_max_num_sequences"


class MemoryExhausted(RuntimeError):
    """Out of GPU memory at size 1 after every retry: the job is out-of-memory (its record attached)."""

    def __init__(self, size: str, fit: MemoryFit) -> None:
        super().__init__(f"out of GPU memory at skyrl.jax.{size}=1, after {len(fit.retries)} retries at half size")
        self.fit = fit


def memory_retrying(base: type) -> type:
    """``base`` (a JaxBackend class) whose calls are retried at half size on out-of-memory. Set
    ``memory_fit`` (and, for a GPU job with an estimate, ``memory_need`` and ``memory_share``) after
    building it: each retry is appended to ``memory_fit``."""

    class MemoryRetrying(base):
        memory_fit: MemoryFit | None = None
        memory_need: MemoryNeed | None = None
        memory_share: int | None = None  # bytes JAX may use on the job's GPU
        memory_cache: Any = None  # the machine's cache directory, where a learned factor is kept

        def forward_backward(self, prepared_batch):
            return self._halving(TRAIN_SIZE, lambda: super(MemoryRetrying, self).forward_backward(prepared_batch))

        def forward(self, prepared_batch):
            return self._halving(TRAIN_SIZE, lambda: super(MemoryRetrying, self).forward(prepared_batch))

        def sample(self, prepared_batch):
            return self._halving(SAMPLE_SIZE, lambda: super(MemoryRetrying, self).sample(prepared_batch))

        def _halving(self, size: str, call: Callable[[], Any]) -> Any:
            current = int(getattr(self.config, size))
            if current <= 0 or self.memory_fit is None:  # SkyRL's "whole batch": nothing to halve
                return call()
            try:
                return call_halving(call, current, lambda smaller: self._resize(size, smaller), is_out_of_device_memory)
            except Exception as err:
                if is_out_of_device_memory(err) and int(getattr(self.config, size)) == 1:
                    raise MemoryExhausted(size, self.memory_fit) from err
                raise

        def _resize(self, size: str, smaller: int) -> None:
            fit = self.memory_fit
            failed = int(getattr(self.config, size))
            fit.retries.append(MemoryRetry(size, failed, smaller))
            setattr(self.config, size, smaller)  # read by SkyRL at its next call
            setattr(fit, size, smaller)
            print(f"out of GPU memory at skyrl.jax.{size}={failed}: retrying at {smaller}", flush=True)
            if size == TRAIN_SIZE:
                self._reset_accumulated_gradients()
                self._learn(failed)

        def _reset_accumulated_gradients(self) -> None:
            import jax
            from flax import nnx
            from skyrl.backends.jax import AccumulatedGradients

            with jax.set_mesh(self.mesh), nnx.use_eager_sharding(True):
                self.accumulated_grads = AccumulatedGradients.create(self.lora_params, self.config.max_lora_adapters)

        def _learn(self, failed_micro_batch: int) -> None:
            """The factor that would have kept ``failed_micro_batch`` out, for this job's record and
            the next job on this machine."""
            need, share = self.memory_need, self.memory_share
            if need is None or share is None:
                return
            factor = factor_seen(need, failed_micro_batch, share)
            self.memory_fit.activation_factor = round(factor, 3)
            if factor > need.activation_factor:
                print(
                    f"GPU memory estimate: activation factor {need.activation_factor:g} -> {factor:.2f} "
                    f"(micro batch {failed_micro_batch} did not fit {share / GIB:.1f} GiB)",
                    flush=True,
                )
                if self.memory_cache is not None:
                    learn_factor(self.memory_cache, factor)

    return MemoryRetrying


__all__ = ["SAMPLE_SIZE", "TRAIN_SIZE", "MemoryExhausted", "memory_retrying"]
