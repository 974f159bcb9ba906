"""Where the backend's native tree sits in the composed config: the one definition of its prefixes.

The backend group (conf/backend/skyrl.yaml) puts SkyRL's own tree under `skyrl`: SkyRL's trainer
config under `skyrl.train.` (SkyRLTrainConfig, read by skyrl.engine=fsdp|megatron and, for the keys
the loop implements, by every engine) and the JAX backend's under `skyrl.jax.` (JaxBackendConfig).
Defined here, below the key map, config and the engines, which all spell native keys with them.
"""

from __future__ import annotations

SKYRL_NODE = "skyrl"  # the backend group's node in the composed config
SKYRL_TRAIN = f"{SKYRL_NODE}.train"  # SkyRL's trainer config (SkyRLTrainConfig)
SKYRL_JAX = f"{SKYRL_NODE}.jax"  # SkyRL's JAX backend config (JaxBackendConfig)
SKYRL_TRAIN_PREFIX = SKYRL_TRAIN + "."
SKYRL_JAX_PREFIX = SKYRL_JAX + "."

__all__ = ["SKYRL_JAX", "SKYRL_JAX_PREFIX", "SKYRL_NODE", "SKYRL_TRAIN", "SKYRL_TRAIN_PREFIX"]
