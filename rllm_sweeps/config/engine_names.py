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
# Where the KL's reference (the base model) comes from, per engine (docs/CONFIG.md#the-kl-reference):
# an untrained second LoRA adapter beside the policy's (training/policy.py) on SkyRL's JaxBackend (up to
# max_lora_adapters slots) and its Megatron workers (the AdapterStore of SkyRLTrainBackend.create_model's
# multi-LoRA path); on fsdp, whose SkyRL 0.4.0 workers hold one adapter (their register_adapter raises),
# SkyRL's own FSDP reference worker group, a frozen copy of the base model (engines/skyrl_reference.py).
REFERENCE_WORKER_ENGINES = ("fsdp",)

__all__ = ["ENGINES", "GPU_TRAINER", "REFERENCE_WORKER_ENGINES"]
