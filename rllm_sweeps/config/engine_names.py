"""The values ``skyrl.engine`` takes, and the groups of them config's rules judge by.

Defined here, below everything that reads them: config validates ``skyrl.engine`` and judges settings
per engine (setting_effect.py, engine_settings.py, gpu_trainer_rules.py), and config sits below the
engine classes (rllm_sweeps/engines/), which are keyed by these names (tests/test_engines.py checks
that every name has its class and every class its name).
"""

from __future__ import annotations

ENGINES = ("jax", "fsdp", "megatron")
# SkyRL's SkyRLTrainBackend: FSDP or Megatron workers + vLLM servers, on Ray.
GPU_TRAINER = ("fsdp", "megatron")
# Engines whose backend holds the KL's reference, an untrained second LoRA adapter beside the
# policy's (training/policy.py; docs/CONFIG.md#the-kl-reference): SkyRL's JaxBackend (up to
# max_lora_adapters slots) and its Megatron workers (the AdapterStore of SkyRLTrainBackend.create_model's
# multi-LoRA path). SkyRL 0.4.0's FSDP workers hold one adapter: their register_adapter raises.
REFERENCE_ENGINES = ("jax", "megatron")
NO_REFERENCE = (
    "SkyRL's Tinker-mode trainer builds no reference model, and the KL's reference here is a second, untrained "
    "LoRA adapter, which SkyRL 0.4.0's FSDP workers cannot hold (worker.py register_adapter: multi-LoRA is "
    "Megatron-only); use skyrl.engine=megatron or skyrl.engine=jax"
)

__all__ = ["ENGINES", "GPU_TRAINER", "NO_REFERENCE", "REFERENCE_ENGINES"]
