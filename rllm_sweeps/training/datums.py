"""From a mini batch's trajectories to what ``forward_backward`` takes: datums, with their advantages
scaled to ``algorithm.loss_agg_mode`` and, with a KL penalty, penalized per token.

    mini batch of ScoredTrajectory (episodes.py)
      -> mini_batch_datums: one Datum per sequence (next-token examples, loss on the policy's tokens)
      -> apply_kl_penalty (algorithm.use_kl_loss, kl_beta > 0): advantage_t -= kl_beta * log-ratio_t
      -> apply_loss_agg: advantages scaled so that the backend's own reduction gives loss_agg_mode

Loss aggregation. The backends reduce per-token losses their own way: SkyRL's JAX
backend averages each sequence over its tokens, then the sequences
(``seq-mean-token-mean``); SkyRL's GPU trainer in Tinker mode sums the tokens (its own
``loss_reduction`` lives in its PPO loop, which this loop replaces). ``algorithm.loss_agg_mode``
is obtained by scaling each response's per-token advantages by a positive factor
(:func:`loss_agg_scales`), exact because the losses are linear in the advantage up to a
positive factor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rllm_sweeps.training.episodes import ScoredTrajectory, TrainSequence, trajectory_sequences
from rllm_sweeps.training.settings import LoopSettings


@dataclass
class Datum:
    """A next-token training example: position t predicts ``targets[t]`` (token t+1) with its weight."""

    inputs: list[int]
    targets: list[int]
    weights: list[float]  # 1.0 where the target is a token the policy sampled, else 0.0
    logprobs: list[float]  # the sampler's log-prob of each target (0 where not sampled)
    advantages: list[float]  # per target token; 0 where not sampled
    trained_tokens: int  # the policy's tokens in the sequence
    group: int  # index of its (task, role) group in the step

    @classmethod
    def from_sequence(cls, seq: TrainSequence) -> Datum:
        return cls(
            inputs=seq.tokens[:-1],
            targets=seq.tokens[1:],
            weights=[float(m) for m in seq.mask[1:]],
            logprobs=seq.logprobs[1:],
            advantages=[seq.advantage * m for m in seq.mask[1:]],
            trained_tokens=seq.trained_tokens,
            group=seq.group,
        )

    def trained_positions(self) -> np.ndarray:
        """Positions that carry loss (the policy's tokens)."""
        return np.flatnonzero(np.asarray(self.weights) > 0)


def mini_batch_datums(mini_batch: Sequence[ScoredTrajectory]) -> list[Datum]:
    """Every sequence of the mini batch's trajectories, each with its trajectory's advantage."""
    return [
        Datum.from_sequence(seq) for t in mini_batch for seq in trajectory_sequences(t.trajectory, t.advantage, t.group)
    ]


def apply_kl_penalty(datums: Sequence[Datum], ref_logprobs: Sequence[Sequence[float]], kl_beta: float) -> float:
    """advantage_t -= kl_beta * (log pi_sample - log pi_base)_t (a per-token KL-in-reward penalty, as
    Tinker does); returns the mean log-ratio over the trained tokens."""
    for d, ref in zip(datums, ref_logprobs, strict=True):
        for t in d.trained_positions():
            d.advantages[t] -= kl_beta * (d.logprobs[t] - ref[t])
    return mean_log_ratio(datums, ref_logprobs)


def mean_log_ratio(datums: Sequence[Datum], ref_logprobs: Sequence[Sequence[float]]) -> float:
    """The mean over the trained tokens of log pi_sample - log pi_ref (the metric ``kl``)."""
    kls = [d.logprobs[t] - ref[t] for d, ref in zip(datums, ref_logprobs, strict=True) for t in d.trained_positions()]
    return float(np.mean(kls)) if kls else 0.0


def apply_loss_agg(datums: Sequence[Datum], settings: LoopSettings, backend_reduction: str) -> None:
    """Scale each datum's advantages so that the backend's own reduction (``backend_reduction``,
    its engine's EngineTraits, training/engine_traits.py) weighs its tokens as ``algorithm.loss_agg_mode`` asks."""
    s = settings
    scales = loss_agg_scales(
        [d.trained_tokens for d in datums],
        s.loss_agg_mode,
        backend_reduction,
        s.loss_norm_length or s.max_response_length,
        group_size=s.n,
        micro_batch=s.legacy_micro_batch,
        groups=[d.group for d in datums],
    )
    for d, scale in zip(datums, scales, strict=True):
        if scale != 1.0:
            d.advantages = [a * scale for a in d.advantages]


def loss_agg_scales(
    n_resp: Sequence[int],
    mode: str,
    backend_reduction: str,
    max_len: int,
    group_size: int = 1,
    micro_batch: int = 1,
    groups: Sequence[int] | None = None,
) -> list[float]:
    """Per-response factors on the advantages that turn the backend's own reduction into ``mode``.

    Both losses are linear in the advantage up to a positive factor, so scaling response i's
    advantages by ``want_i / has_i`` gives each of its tokens the weight ``mode`` asks for, with B
    sequences and N tokens in the mini batch and n_i tokens in sequence i (SkyRL's
    ``apply_loss_reduction_to_advantages_minibatch`` for its names):

    - token-mean (``token_mean``): 1/N;
    - seq-mean-token-mean (``sequence_mean``): 1/(B n_i);
    - seq-mean-token-sum-norm (``seq_mean_token_sum_norm``, Dr. GRPO): 1/(B max_len);
    - seq-mean-token-sum (rLLM/verl): 1/B;
    - ``prompt_mean``: 1/(G T_g), G groups, T_g the tokens of i's group: ``groups`` gives each
      sequence's group (a workflow's (task, role) groups), else groups of ``group_size``
      consecutive sequences;
    - ``token_mean_legacy``: 1/(K T_k), K micro batches of ``micro_batch`` consecutive sequences,
      T_k the tokens of i's micro batch.

    ``has_i`` = 1/(B n_i) for a backend that averages each sequence then the batch (SkyRL's JAX
    backend), 1 for one that sums the tokens (SkyRL's GPU trainer in Tinker mode).
    """
    if not n_resp:
        return []
    lengths = [max(n, 1) for n in n_resp]
    b, total = len(lengths), sum(lengths)

    def chunk_tokens(size: int) -> tuple[int, list[int]]:
        """(number of chunks, tokens of each sequence's chunk) for consecutive chunks of `size`."""
        size = max(size, 1)
        sums = [sum(lengths[i : i + size]) for i in range(0, b, size)]
        return len(sums), [sums[i // size] for i in range(b)]

    if mode == "prompt_mean" and groups is not None:
        sums: dict[int, int] = {}
        for g, n in zip(groups, lengths, strict=True):
            sums[g] = sums.get(g, 0) + n
        count, tokens = len(sums), [sums[g] for g in groups]
    elif mode == "prompt_mean":
        count, tokens = chunk_tokens(group_size)
    elif mode == "token_mean_legacy":
        count, tokens = chunk_tokens(micro_batch)
    scales = []
    for i, n in enumerate(lengths):
        if mode == "token-mean":
            want = 1 / total
        elif mode == "seq-mean-token-mean":
            want = 1 / (b * n)
        elif mode == "seq-mean-token-sum-norm":
            want = 1 / (b * max_len)
        elif mode == "seq-mean-token-sum":
            want = 1 / b
        elif mode in ("prompt_mean", "token_mean_legacy"):
            want = 1 / (count * tokens[i])
        else:
            raise ValueError(f"unknown loss_agg_mode {mode!r}")
        has = 1.0 if backend_reduction == "token-sum" else 1 / (b * n)
        scales.append(want / has)
    return scales


__all__ = ["Datum", "apply_kl_penalty", "apply_loss_agg", "loss_agg_scales", "mean_log_ratio", "mini_batch_datums"]
