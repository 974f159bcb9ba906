"""rLLM's advantage estimators as pure numpy functions over groups of rewards.

Input: ``rewards`` of shape ``(num_groups, group_size)``: one row per prompt,
one column per sampled response (``rollout.n``). Output: one scalar advantage
per response, same shape, ``float64``, never NaN. Every token of a response gets
its response's advantage (outcome rewards only).

Conventions (rLLM inherits these estimators from verl; deviations are marked):

* ``grpo``: ``A = r - mean(group)``, divided by ``std(group) + eps`` (unbiased
  std, ``ddof=1``, as ``torch.std``; eps 1e-6) when ``norm_by_std``.
* ``rloo``: leave-one-out baseline ``A_i = r_i - mean_{j != i} r_j``
  (= ``n/(n-1) * (r_i - mean)``).
* ``reinforce``: the return itself, ``A = r`` (no baseline): rLLM's plain
  REINFORCE. Equal-reward groups are NOT zeroed by design (there is no baseline).
* ``reinforce_plus_plus_baseline``: ``A = r - mean(group)``, then divided by the
  standard deviation over the whole batch (+1e-8 inside the sqrt as verl).
  Deviation from verl: verl's ``masked_whiten`` also re-centres by the
  token-weighted batch mean, which gives equal-reward groups a small non-zero
  advantage when response lengths differ; here the batch is only scaled, so
  those groups stay exactly 0 (identical to verl when all lengths are equal).

SkyRL's estimators that rLLM does not have, by SkyRL's names (skyrl/backends/skyrl_train/
utils/ppo_utils.py):

* ``reinforce++``: the return whitened over the whole batch's tokens, ``(r - mean) /
  sqrt(var + 1e-8)`` with each response weighted by its length and Bessel's correction over the
  token count, as SkyRL's ``masked_whiten`` (no group baseline).
* ``maxrl``: ``(r - mean(group)) / (mean(group) + 1e-6)``; a group of size 1 gets ``r``.

All group-baselined estimators give exactly 0 to a group whose rewards are all equal.
A group of size 1 has no baseline: as in verl, its mean is taken as 0 and its
std as 1, so ``grpo``/``rloo`` return the raw reward there (REINFORCE).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

GRPO_EPS = 1e-6
WHITEN_EPS = 1e-8


def _as_groups(rewards) -> np.ndarray:
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"rewards must have shape (num_groups, group_size), got {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError("rewards contain NaN or inf")
    return r


def _constant_groups(r: np.ndarray) -> np.ndarray:
    """(num_groups, 1) bool: rows whose rewards are all equal (exact compare)."""
    return (r.max(axis=1) == r.min(axis=1))[:, None]


def grpo(rewards, norm_by_std: bool = True, eps: float = GRPO_EPS) -> np.ndarray:
    """Group-relative advantage: ``(r - mean) / (std + eps)`` per group (or ``r - mean``)."""
    r = _as_groups(rewards)
    n = r.shape[1]
    if n == 1:
        return r.copy()
    adv = r - r.mean(axis=1, keepdims=True)
    if norm_by_std:
        adv = adv / (r.std(axis=1, ddof=1, keepdims=True) + eps)
    return np.where(_constant_groups(r), 0.0, adv)


def rloo(rewards) -> np.ndarray:
    """Leave-one-out: ``r_i - mean of the other n-1 rewards of the group``."""
    r = _as_groups(rewards)
    n = r.shape[1]
    if n == 1:
        return r.copy()
    loo_mean = (r.sum(axis=1, keepdims=True) - r) / (n - 1)
    return np.where(_constant_groups(r), 0.0, r - loo_mean)


def reinforce(rewards) -> np.ndarray:
    """Plain REINFORCE: the (outcome) return is the advantage, no baseline."""
    return _as_groups(rewards).copy()


def _centred(r: np.ndarray) -> np.ndarray:
    """r - mean(group), 0 for equal-reward groups; a group of size 1 keeps its reward."""
    if r.shape[1] == 1:
        return r.copy()
    return np.where(_constant_groups(r), 0.0, r - r.mean(axis=1, keepdims=True))


def _scaled_by_batch_std(centred: np.ndarray, eps: float = WHITEN_EPS) -> np.ndarray:
    if centred.size < 2:
        return centred
    std = centred.std(ddof=1)
    if std == 0.0:
        return np.zeros_like(centred)
    return centred / np.sqrt(std**2 + eps)


def reinforce_plus_plus_baseline(rewards, eps: float = WHITEN_EPS) -> np.ndarray:
    """Group-mean baseline, then scaled by the std over the whole batch."""
    return _scaled_by_batch_std(_centred(_as_groups(rewards)), eps)


def reinforce_pp(rewards, lengths=None, eps: float = WHITEN_EPS) -> np.ndarray:
    """SkyRL's REINFORCE++: the returns whitened over the whole batch's tokens (``lengths``:
    response tokens, same shape as ``rewards``; None = one token each)."""
    r = _as_groups(rewards)
    w = np.ones_like(r) if lengths is None else np.maximum(np.asarray(lengths, dtype=np.float64).reshape(r.shape), 1)
    tokens = w.sum()
    if tokens < 2:
        return np.zeros_like(r)
    mean = (w * r).sum() / tokens
    var = (w * (r - mean) ** 2).sum() / tokens * tokens / (tokens - 1)
    return (r - mean) / np.sqrt(var + eps)


def maxrl(rewards, eps: float = GRPO_EPS) -> np.ndarray:
    """SkyRL's MaxRL: the group-relative reward divided by the group mean."""
    r = _as_groups(rewards)
    if r.shape[1] == 1:
        return r.copy()
    mean = r.mean(axis=1, keepdims=True)
    return np.where(_constant_groups(r), 0.0, (r - mean) / (mean + eps))


ESTIMATORS: dict[str, Callable[..., np.ndarray]] = {
    "grpo": grpo,
    "rloo": rloo,
    "reinforce": reinforce,
    "reinforce_plus_plus_baseline": reinforce_plus_plus_baseline,
    "reinforce++": reinforce_pp,
    "maxrl": maxrl,
}


def compute_advantages(rewards, estimator: str, *, norm_adv_by_std_in_grpo: bool = True, lengths=None) -> np.ndarray:
    """Dispatch on ``algorithm.adv_estimator`` (``lengths``: response tokens, for reinforce++)."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown adv_estimator {estimator!r}; expected one of {sorted(ESTIMATORS)}")
    if estimator == "grpo":
        return grpo(rewards, norm_by_std=norm_adv_by_std_in_grpo)
    if estimator == "reinforce++":
        return reinforce_pp(rewards, lengths)
    return ESTIMATORS[estimator](rewards)


# Estimators whose value for a response depends only on its own group (the others, the two
# REINFORCE++ variants, scale by statistics of the whole batch).
GROUP_LOCAL = ("grpo", "rloo", "reinforce", "maxrl")


def compute_group_advantages(
    groups: Sequence[Sequence[float]],
    estimator: str,
    *,
    norm_adv_by_std_in_grpo: bool = True,
    lengths: Sequence[Sequence[int]] | None = None,
) -> list[np.ndarray]:
    """Advantages of groups of any sizes (a workflow's trajectories per (task, role) vary).

    Groups of one size are stacked and go through :func:`compute_advantages` as one batch (the
    single-turn loop's exact numbers). Groups of several sizes: a group-local estimator runs per
    group; ``reinforce++`` whitens over all rewards; ``reinforce_plus_plus_baseline`` centres per
    group, then scales by the std over all of them. ``lengths``: response tokens (reinforce++).
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown adv_estimator {estimator!r}; expected one of {sorted(ESTIMATORS)}")
    if not groups:
        return []
    sizes = [len(g) for g in groups]
    if len(set(sizes)) == 1:
        lens = None if lengths is None else np.asarray(lengths)
        adv = compute_advantages(
            np.asarray(groups, dtype=np.float64),
            estimator,
            norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo,
            lengths=lens,
        )
        return list(adv)
    if estimator in GROUP_LOCAL:
        return [
            compute_advantages(
                np.asarray([g], dtype=np.float64), estimator, norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo
            )[0]
            for g in groups
        ]
    flat = np.concatenate([np.asarray(g, dtype=np.float64) for g in groups])[None, :]
    if estimator == "reinforce++":
        flat_lengths = None if lengths is None else np.concatenate([np.asarray(x) for x in lengths])[None, :]
        out = reinforce_pp(flat, flat_lengths)[0]
    else:  # reinforce_plus_plus_baseline
        centred = np.concatenate([_centred(_as_groups([g]))[0] for g in groups])[None, :]
        out = _scaled_by_batch_std(centred)[0]
    bounds = np.cumsum([0, *sizes])
    return [out[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def batch_normalize(advantages: Sequence[float], lengths: Sequence[int]) -> np.ndarray:
    """SkyRL's ``advantage_batch_normalize``: the advantages z-scored over the batch's response tokens
    (each response's advantage counted once per token; ``rstd`` clamped as SkyRL's ``1e-8``).
    SkyRL's mean runs over its padded tensor; here over the tokens only, the padding-free meaning."""
    a = np.asarray(advantages, dtype=np.float64)
    w = np.maximum(np.asarray(lengths, dtype=np.float64), 1.0)
    if a.size == 0:
        return a
    mean = (w * a).sum() / w.sum()
    var = (w * (a - mean) ** 2).sum() / w.sum()
    return (a - mean) / np.sqrt(max(var, 1e-8))
