"""algorithm.loss_agg_mode on each backend's own reduction: pure arithmetic (training/loop.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rllm_sweeps.training.loop import loss_agg_scales

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
