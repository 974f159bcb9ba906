"""SkyRL's policy losses that the JAX engine does not compute itself, as custom losses.

SkyRL's JAX backend computes ``ppo``, ``cispo`` and ``importance_sampling``; every other policy
loss SkyRL registers (``dual_clip`` for DAPO, ``gspo``, ``sapo``, ``clip_cov``, ``kl_cov``,
``dppo``, ``rollout_is``) runs the way Tinker's ``forward_backward_custom`` does it:

1. ``backend.forward``: the current log-probabilities of the mini batch's tokens;
2. the loss and its gradient with respect to those log-probabilities, by SkyRL's own loss
   function (``PolicyLossRegistry``, torch autograd), with the advantages scaled for its
   token-sum reduction (datums.apply_loss_agg) and its parameters from the job's
   ``skyrl.train.trainer.algorithm`` (SkyRL's ``AlgorithmConfig``);
3. ``backend.forward_backward`` with a loss whose parameter gradient is that gradient times
   the log-probabilities' own: ``importance_sampling`` at ratio 1 (the sampling log-probs set to
   step 1's), ``-exp(logp - sg(logp)) x A`` per token with ``A = -dL/dlogp x B x n_i``, which
   undoes the backend's reduction (each sequence's token sum over its n_i loss tokens, then
   the mean over the B sequences). Not ``cross_entropy`` weighted by the gradient: the JAX backend
   divides each sequence by the sum of its token weights, which a signed gradient makes ~0.

With ``algorithm.use_kl_loss`` on an engine whose backend has no KL loss (SkyRL's Tinker-mode
trainer: its builder turns ``use_kl_loss`` off, skyrl_train_backend.py), step 2 adds SkyRL's KL
loss term as its workers compute it (worker.py, ``_forward_backward_micro``: ``compute_approx_kl``
of the current and the reference log-probs with ``kl_estimator_type``, ``masked_mean`` per
sequence, the mean over sequences, times ``kl_loss_coef``), the reference being the untrained
adapter (policy.py): its gradient joins the policy loss's in ``A``.

Cost: one extra forward per mini batch (and the reference's, with a KL term). SkyRL's off-policy
corrections inside these losses see the sampler's log-probs as both old and rollout log-probs (the
loop's old policy is the sampler).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rllm_sweeps.keymap import NATIVE_LOSS_NAMES
from rllm_sweeps.training.datums import Datum
from rllm_sweeps.training.settings import LoopSettings


@dataclass(frozen=True)
class CustomLossStep:
    """Datums for the backend's ``importance_sampling`` pass, and SkyRL's loss and metrics."""

    datums: list[Datum]
    loss: float
    metrics: dict[str, float]


def skyrl_loss_function(name: str) -> Any:
    """SkyRL's policy loss function registered as ``name`` (the loop's spelling or SkyRL's)."""
    from skyrl.backends.skyrl_train.utils.ppo_utils import PolicyLossRegistry

    return PolicyLossRegistry.get(NATIVE_LOSS_NAMES.get(name, name))


def algorithm_config(settings: LoopSettings) -> Any:
    """SkyRL's ``AlgorithmConfig`` of the job (``skyrl.train.trainer.algorithm``), with the loss and
    the clip range the loop's settings say (a schedule may change them between steps)."""
    from dataclasses import fields

    from skyrl.train.config.config import AlgorithmConfig, build_nested_dataclass

    s = settings
    known = {f.name for f in fields(AlgorithmConfig)}
    # The tree also holds keys SkyRL's examples add to it (DAPO's overlong_buffer_*): not its fields.
    raw = {k: v for k, v in (s.skyrl_algorithm or {}).items() if k in known}
    raw["policy_loss_type"] = NATIVE_LOSS_NAMES.get(s.loss_fn, s.loss_fn)
    raw["eps_clip_low"] = s.eps_clip
    raw["eps_clip_high"] = s.eps_clip if s.eps_clip_high is None else s.eps_clip_high
    raw["use_kl_loss"], raw["kl_loss_coef"] = s.use_kl_loss, s.kl_beta
    raw["kl_estimator_type"] = s.kl_estimator_type
    return build_nested_dataclass(AlgorithmConfig, raw)


def skyrl_kl_loss(logprobs: Any, reference: Any, mask: Any, algorithm: Any) -> Any:
    """SkyRL's KL loss of a mini batch, as its policy worker computes it (worker.py,
    ``_forward_backward_micro``): the per-token estimate, its mean over each sequence's tokens, the
    mean over sequences (the coefficient is the caller's)."""
    from skyrl.backends.skyrl_train.utils.ppo_utils import compute_approx_kl
    from skyrl.backends.skyrl_train.utils.torch_utils import masked_mean

    kl = compute_approx_kl(logprobs, reference, loss_mask=mask, kl_estimator_type=algorithm.kl_estimator_type)
    return masked_mean(kl, mask, dim=-1).mean()


def custom_loss_step(
    datums: Sequence[Datum],
    current: Sequence[Sequence[float]],
    algorithm: Any,
    loss_fn: Any,
    backend_reduction: str = "seq-mean-token-mean",
    reference: Sequence[Sequence[float]] | None = None,
) -> CustomLossStep:
    """Steps 2-3 above for ``datums`` (advantages already scaled for a token-sum reduction) whose
    targets have the log-probabilities ``current`` under the policy being trained.
    ``backend_reduction``: how the backend reduces the returned datums' token losses
    (training/engine_traits.py). ``reference``: the reference's log-probs, for SkyRL's KL loss term
    (``algorithm.use_kl_loss``); its value is in the returned metrics as ``kl_loss``."""
    import torch

    b = len(datums)
    width = max(len(d.targets) for d in datums)

    def padded(rows: Sequence[Sequence[float]]) -> torch.Tensor:
        out = np.zeros((b, width), dtype=np.float64)
        for i, row in enumerate(rows):
            out[i, : len(row)] = row
        return torch.from_numpy(out)

    logprobs = padded(current).requires_grad_(True)
    old = padded([d.logprobs for d in datums])
    mask = padded([d.weights for d in datums])
    loss, metrics = loss_fn(
        logprobs, old, padded([d.advantages for d in datums]), algorithm, mask, rollout_logprobs=old
    )
    if reference is not None and algorithm.use_kl_loss:
        kl_loss = skyrl_kl_loss(logprobs, padded(reference), mask, algorithm)
        loss = loss + kl_loss * algorithm.kl_loss_coef
        metrics = {**metrics, "kl_loss": kl_loss.detach()}
    loss.backward()
    grad = logprobs.grad.numpy()
    out = []
    for i, d in enumerate(datums):
        n = max(float(sum(d.weights)), 1.0)
        undo = 1.0 if backend_reduction == "token-sum" else b * n
        advantages = [float(-grad[i, t] * undo) if d.weights[t] > 0 else 0.0 for t in range(len(d.targets))]
        out.append(replace(d, logprobs=[float(x) for x in current[i]], advantages=advantages))
    return CustomLossStep(out, float(loss.detach()), {k: float(v) for k, v in metrics.items()})


__all__ = ["CustomLossStep", "algorithm_config", "custom_loss_step", "skyrl_kl_loss", "skyrl_loss_function"]
