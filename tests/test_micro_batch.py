"""forward_backward's default micro batch: the mini batch, in equal micro batches within a token budget."""

from __future__ import annotations

from types import SimpleNamespace

from rllm_sweeps.training.jax_backend import MICRO_BATCH_TOKENS, default_micro_batch


def settings(mini_batch_size: int, n: int, prompt: int, response: int) -> SimpleNamespace:
    return SimpleNamespace(
        mini_batch_size=mini_batch_size,
        n=n,
        max_prompt_length=prompt,
        max_input_length=None,  # SkyRL's default: the prompt's limit
        max_response_length=response,
    )


def test_the_default_cpu_job_trains_its_whole_mini_batch_in_one_call():
    assert default_micro_batch(settings(4, 8, 32, 8)) == 32


def test_one_gpus_default_is_the_best_measured_micro_batch_of_64_sequences_for_192_tokens():
    assert MICRO_BATCH_TOKENS == 64 * 192
    assert default_micro_batch(settings(32, 8, 64, 128)) == 64  # 256 sequences: 4 calls of 64 (128: out of memory)


def test_longer_sequences_get_fewer_and_every_micro_batch_has_the_same_size():
    size = default_micro_batch(settings(6, 5, 512, 1024))  # 30 sequences of 1,536 tokens: at most 8 fit
    assert size == 6 and 30 % size == 0
