"""SkyRL's KL penalty in the reward (``trainer.algorithm.use_kl_in_reward``).

Each response token's KL estimate between the sampler and the reference model (the base model:
an untrained LoRA adapter, as the loop's KL loss uses) is SkyRL's ``compute_approx_kl`` with
``kl_estimator_type`` (k1, k2, k3, abs); the reward loses ``coef x`` its tokens' sum, which is
what SkyRL's outcome estimators (grpo, rloo, ...) see of its per-token penalty (they sum the
token rewards). ``coef`` is SkyRL's KL controller's value (``kl_ctrl.type`` fixed or adaptive,
starting at ``kl_loss_coef`` = ``algorithm.kl_beta``), updated after each step with the batch's
mean KL, as SkyRL does; its value is part of the trainer state (checkpoints.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rllm_sweeps.training.datums import Datum
from rllm_sweeps.training.settings import LoopSettings


@dataclass(frozen=True)
class RewardKL:
    """One step's KL penalty per trajectory, and SkyRL's metrics of it."""

    penalties: dict[int, float]  # by the trajectory's key: coef x the summed KL of its tokens
    avg_kl: float  # mean over trajectories of their mean token KL
    avg_kl_max: float  # mean over trajectories of their largest |token KL|
    coef: float  # the coefficient used


def kl_controller(settings: LoopSettings, value: float | None = None):
    """SkyRL's controller for ``kl_ctrl`` (``value``: the adaptive one's coefficient so far)."""
    from skyrl.backends.skyrl_train.utils.ppo_utils import AdaptiveKLController, FixedKLController

    s = settings
    if s.kl_ctrl_type != "adaptive":
        return FixedKLController(s.kl_beta)
    controller = AdaptiveKLController(s.kl_beta, s.kl_ctrl_target, s.kl_ctrl_horizon)
    if value is not None:  # where it got to (the trainer state keeps it across steps and resumes)
        controller.value = value
    return controller


def reward_kl(
    keys: Sequence[int],
    datums_per_trajectory: Sequence[Sequence[Datum]],
    ref_logprobs_per_trajectory: Sequence[Sequence[Sequence[float]]],
    estimator: str,
    coef: float,
) -> RewardKL:
    """The penalty of each trajectory (``keys[i]``: the i-th one's key, the loop uses its ``id()``),
    from its datums' sampler log-probs and the reference's."""
    import torch
    from skyrl.backends.skyrl_train.utils.ppo_utils import compute_approx_kl

    penalties, means, maxima = [], [], []
    for datums, refs in zip(datums_per_trajectory, ref_logprobs_per_trajectory, strict=True):
        token_kl = []
        for d, ref in zip(datums, refs, strict=True):
            sl = d.trained_positions()
            kl = compute_approx_kl(
                torch.tensor(np.asarray(d.logprobs)[sl], dtype=torch.float64),
                torch.tensor(np.asarray(ref, dtype=np.float64)[sl], dtype=torch.float64),
                kl_estimator_type=estimator,
            )
            token_kl.append(kl.numpy())
        kl_all = np.concatenate(token_kl) if token_kl else np.zeros(0)
        penalties.append(float(kl_all.sum()) * max(0.0, coef))
        means.append(float(kl_all.mean()) if kl_all.size else 0.0)
        maxima.append(float(np.abs(kl_all).max()) if kl_all.size else 0.0)
    return RewardKL(
        dict(zip(keys, penalties, strict=True)),
        float(np.mean(means)) if means else 0.0,
        float(np.mean(maxima)) if maxima else 0.0,
        coef,
    )


__all__ = ["RewardKL", "kl_controller", "reward_kl"]
