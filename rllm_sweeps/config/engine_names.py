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
# Engines that can give the reference model's log-probabilities: jax takes the base model (the
# policy without its adapter); SkyRL's Tinker-mode builder (fsdp/megatron) builds no reference model.
REFERENCE_ENGINES = ("jax",)

__all__ = ["ENGINES", "GPU_TRAINER", "REFERENCE_ENGINES"]
