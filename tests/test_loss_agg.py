"""algorithm.loss_agg_mode on each backend's own reduction: pure arithmetic (training/datums.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rllm_sweeps.training.datums import loss_agg_scales

LENGTHS = [3, 1, 6, 2]  # response tokens of four sequences
MAX_LEN = 8


def objective(mode_weights: list[float], backend: str) -> float:
    """The loss the backend computes for per-token losses of 1 times the scaled advantage."""
    b = len(LENGTHS)
    if backend == "token-sum":
        return sum(w * n for w, n in zip(mode_weights, LENGTHS, strict=True))
    return sum(w * n / n for w, n in zip(mode_weights, LENGTHS, strict=True)) / b  # seq-mean-token-mean


# What each mode means, for per-token losses of 1.
EXPECTED = {
    "token-mean": 1.0,  # sum of N ones / N
    "seq-mean-token-mean": 1.0,  # each sequence's mean is 1
    "seq-mean-token-sum-norm": sum(LENGTHS) / (len(LENGTHS) * MAX_LEN),  # Dr. GRPO's constant normaliser
}


@pytest.mark.parametrize("backend", ["seq-mean-token-mean", "token-sum"])
@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_scaled_advantages_give_each_mode_on_each_backends_reduction(mode, backend):
    scales = loss_agg_scales(LENGTHS, mode, backend, MAX_LEN)
    assert all(s > 0 for s in scales)
    assert np.isclose(objective(scales, backend), EXPECTED[mode])


def test_token_mean_weighs_every_token_alike_and_seq_mean_every_sequence_alike():
    # per-token weight = scale x the backend's own per-token weight
    b, n_total = len(LENGTHS), sum(LENGTHS)
    for backend, own in (("token-sum", [1.0] * b), ("seq-mean-token-mean", [1 / (b * n) for n in LENGTHS])):
        token = [s * o for s, o in zip(loss_agg_scales(LENGTHS, "token-mean", backend, MAX_LEN), own, strict=True)]
        assert np.allclose(token, 1 / n_total)
        seq = [
            s * o * n
            for s, o, n in zip(
                loss_agg_scales(LENGTHS, "seq-mean-token-mean", backend, MAX_LEN), own, LENGTHS, strict=True
            )
        ]
        assert np.allclose(seq, 1 / b)


def test_the_jax_backends_native_mode_needs_no_scaling():
    assert loss_agg_scales(LENGTHS, "seq-mean-token-mean", "seq-mean-token-mean", MAX_LEN) == [1.0] * 4


def _skyrl_token_weights(mode: str, group_size: int, micro_batch: int) -> list[float]:
    """Per-token weights SkyRL's own reduction gives (its apply_loss_reduction_to_advantages_minibatch,
    advantages of 1), one per sequence (every token of a sequence gets the same weight)."""
    import torch
    from skyrl.backends.skyrl_train.utils.ppo_utils import apply_loss_reduction_to_advantages_minibatch

    mask = torch.zeros(len(LENGTHS), max(LENGTHS))
    for i, n in enumerate(LENGTHS):
        mask[i, :n] = 1
    bounds = [(i, min(i + group_size, len(LENGTHS))) for i in range(0, len(LENGTHS), group_size)]
    scaled = apply_loss_reduction_to_advantages_minibatch(
        torch.ones_like(mask), mask, mode, micro_batch, MAX_LEN, prompt_boundaries=bounds
    )
    return [float(scaled[i, 0]) for i in range(len(LENGTHS))]


SKYRL_NAMES = {
    "token-mean": "token_mean",
    "seq-mean-token-mean": "sequence_mean",
    "seq-mean-token-sum-norm": "seq_mean_token_sum_norm",
    "prompt_mean": "prompt_mean",
    "token_mean_legacy": "token_mean_legacy",
}


@pytest.mark.parametrize("backend", ["seq-mean-token-mean", "token-sum"])
@pytest.mark.parametrize("mode", sorted(SKYRL_NAMES))
def test_each_mode_weighs_tokens_as_skyrls_own_reduction_of_that_name(mode, backend):
    group_size, micro_batch = 2, 2
    b = len(LENGTHS)
    own = [1.0] * b if backend == "token-sum" else [1 / (b * n) for n in LENGTHS]
    scales = loss_agg_scales(LENGTHS, mode, backend, MAX_LEN, group_size=group_size, micro_batch=micro_batch)
    ours = [s * o for s, o in zip(scales, own, strict=True)]
    assert np.allclose(ours, _skyrl_token_weights(SKYRL_NAMES[mode], group_size, micro_batch))


def test_seq_mean_token_sum_sums_each_sequence_and_averages_the_batch():
    scales = loss_agg_scales(LENGTHS, "seq-mean-token-sum", "token-sum", MAX_LEN)
    assert np.isclose(objective(scales, "token-sum"), sum(LENGTHS) / len(LENGTHS))
    assert np.allclose(scales, 1 / len(LENGTHS))
