"""What an engine reads of its job's config, typed: `EngineSettings`, built once from the composed tree by
`JobConfig.of` (job/config.py) and handed to the engine's methods (`node_resources`, `build_backend`) and
to `failures.out_of_memory_fix`. No engine method takes the tree (tests/test_structure_job.py).

SkyRL's own settings travel as SkyRL's names and values: `JaxSettings` (skyrl.jax.*, which SkyRL's
``JaxBackendConfig`` validates when the backend is built) declares only the fields this project reads
itself; `SkyRLTrainTree` holds the skyrl.train overrides the GPU trainer's backend is built with. Both
are light to build: SkyRL's config classes import JAX, torch and Ray (tens of seconds), which the job
leaves to the engine's build.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, JsonValue

from rllm_sweeps.records.memory import MemoryNeed

# skyrl.jax.train_micro_batch_size / sample_max_num_sequences as set: "auto", a number (0: SkyRL's
# "not set") or null (config/memory_need.py's is_auto, asked_size read them).
AskedSize = int | str | None


class JaxSettings(BaseModel):
    """skyrl.jax.* as the job set it, by SkyRL's JaxBackendConfig names; the fields below are those this
    project reads (sizes, mesh, processes), every other passes through to SkyRL (`skyrl_fields`)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    __pydantic_extra__: dict[str, JsonValue]

    train_micro_batch_size: AskedSize
    sample_max_num_sequences: AskedSize
    fully_sharded_data_parallel_size: int
    expert_parallel_size: int
    tensor_parallel_size: int
    num_processes: int | None
    ray_actor_options: dict[str, JsonValue]
    gradient_checkpointing: bool

    def skyrl_fields(self) -> dict[str, JsonValue]:
        """Every setting but the two sizes (fitted to the job's share first: engines/memory_sizes.py),
        as JaxBackendConfig's keyword arguments: a fresh copy the engine completes."""
        sizes = {"train_micro_batch_size", "sample_max_num_sequences"}
        return {k: v for k, v in self.model_dump().items() if k not in sizes}


class SkyRLTrainTree(BaseModel):
    """The skyrl.train overrides of SkyRL's GPU trainer, {dotted path relative to skyrl.train: value}, as
    engines/skyrl_train.py's `tree_overrides` makes them, before the job's paths (its model directory,
    SkyRL's working paths in the job's directory) are added."""

    model_config = ConfigDict(extra="allow", frozen=True)
    __pydantic_extra__: dict[str, JsonValue]

    def overrides(self) -> dict[str, JsonValue]:
        return dict(self.__pydantic_extra__ or {})


@dataclass(frozen=True)
class EngineSettings:
    """What the engine reads of the job's config: resources, model, its SkyRL settings."""

    engine: str  # skyrl.engine
    model_path: str  # model.path (a built-in name, a directory or a hub id; resolved at build)
    nodes: int  # resources.nodes
    cpus_per_task: int  # resources.cpus_per_task
    gpus_per_node: int  # resources.gpus_per_node: the policy's
    node_gpus: int  # GPUs asked for on each node, vLLM's too where not colocated (gpu_trainer_rules.node_gpus)
    jobs_per_gpu: int  # resources.jobs_per_gpu
    lora_rank: int  # model.lora.rank
    jax: JaxSettings | None  # skyrl.jax.*: the JAX engine's (None on fsdp/megatron)
    skyrl_train: SkyRLTrainTree | None  # skyrl.train's overrides: the GPU trainer's (None on jax)
    # The JAX engine's GPU memory estimate (config/memory_need.py), computed on first use: only a GPU
    # job asks, and it imports the model stack.
    memory_need: Callable[[], MemoryNeed | None]


__all__ = ["AskedSize", "EngineSettings", "JaxSettings", "SkyRLTrainTree"]
