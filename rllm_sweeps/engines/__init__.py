"""One class per SkyRL backend the loop trains through (rLLM's BackendProtocol, Optuna's base class
with optional capabilities as methods with defaults):

- ``JaxEngine``: SkyRL's ``JaxBackend`` in the job's process (``skyrl.engine=jax``);
- ``RayJaxEngine``: SkyRL's ``RayJaxBackend`` on the job's Ray cluster (with ``skyrl.jax.use_ray``);
- ``SkyRLTrainEngine``: SkyRL's ``SkyRLTrainBackend``, FSDP or Megatron workers + vLLM
  (``skyrl.engine=fsdp|megatron``); on fsdp with SkyRL's own reference worker group for the KL
  (skyrl_reference.py).

Each says which keys it reads, what the loop must know of it (``traits``), whether it uses Ray and
with what of the node, how its backend is built and whether it can run here; what it reads of a job's
config it takes typed, as ``EngineSettings`` (settings.py), never the composed tree. Which set settings an
engine cannot honour is judged at validation, in config (config/engine_settings.py), which sits below
the engines; ``skyrl.engine``'s values are config's (config/engine_names.py).
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from rllm_sweeps.config.engine_names import ENGINES
from rllm_sweeps.engines.base import BuiltBackend, Engine, EngineUnavailable
from rllm_sweeps.engines.jax import JaxEngine, RayJaxEngine
from rllm_sweeps.engines.skyrl_train import SkyRLTrainEngine

ALL_ENGINES: tuple[Engine, ...] = (JaxEngine(), RayJaxEngine(), SkyRLTrainEngine("fsdp"), SkyRLTrainEngine("megatron"))


def engine_of(cfg: DictConfig | dict[str, Any]) -> Engine:
    """The engine a (validated) config chooses: skyrl.engine, and skyrl.jax.use_ray for the JAX one."""
    skyrl = cfg["skyrl"]
    name = str(skyrl["engine"])
    use_ray = name == "jax" and bool(skyrl["jax"]["use_ray"])
    return next(e for e in ALL_ENGINES if e.name == name and (e.name != "jax" or e.uses_ray == use_ray))


def named(name: str) -> Engine:
    """skyrl.engine=`name`'s engine in its default setting (jax: in the job's process)."""
    return next(e for e in ALL_ENGINES if e.name == name)


def readers(key: str) -> tuple[str, ...]:
    """The skyrl.engine values whose engine reads `key` in some setting (a common key, or a native
    key by its full path)."""
    return tuple(name for name in ENGINES if any(e.reads(key) for e in ALL_ENGINES if e.name == name))


__all__ = [
    "ALL_ENGINES",
    "BuiltBackend",
    "Engine",
    "EngineUnavailable",
    "JaxEngine",
    "RayJaxEngine",
    "SkyRLTrainEngine",
    "engine_of",
    "named",
    "readers",
]
