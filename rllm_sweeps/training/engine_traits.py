"""What the loop needs to know of the engine it drives: the record each engine class
(rllm_sweeps/engines/) gives, so that the loop never asks which engine it is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineTraits:
    losses: tuple[str, ...] | None  # policy losses it computes itself; None = every SkyRL policy loss
    # How the backend reduces per-token losses (the loop scales advantages to get loss_agg_mode):
    # "seq-mean-token-mean" (SkyRL's JAX backend) or "token-sum" (SkyRL's GPU trainer: its PPO
    # loop, not the backend, applies its loss_reduction setting).
    backend_reduction: str
    loss_config_for: tuple[str, ...]  # losses whose clip range the loop passes in the request
    # True: the sampler samples from the adapter slot optim_step updates in place (SkyRL's JAX
    # backends: load_sampler_weights reloads from disk only when the checkpoint id changes), so the
    # weights are published once, not after every step. False: they move after every update
    # (SkyRL's GPU trainer pushes them to its vLLM engines in save_sampler_checkpoint).
    sampler_shares_trained_weights: bool = False
    # How algorithm.use_kl_loss reaches the gradient. True: kl_beta x the per-token log-ratio of the
    # sampler to the reference is folded into the advantages (Tinker's way; datums.apply_kl_penalty).
    # False: SkyRL's KL loss term joins the policy loss as a custom loss (custom_loss.py), for a
    # backend that has no KL loss of its own (SkyRL's Tinker-mode builder turns use_kl_loss off).
    kl_loss_in_advantages: bool = True
    # Where the KL's reference (the base model) lives. False: a second LoRA adapter beside the policy's,
    # created and never trained (its B is zero). True: SkyRL's own reference worker group, a frozen copy
    # of the base model, created with create_model(..., model_role="ref") (engines/skyrl_reference.py).
    reference_worker: bool = False

    def computes(self, loss: str) -> bool:
        """True: the backend computes ``loss`` itself; False: the loop computes it as a custom loss
        (training/custom_loss.py: one extra forward per mini batch)."""
        return self.losses is None or loss in self.losses


__all__ = ["EngineTraits"]
