"""What SkyRL's GPU trainer (``skyrl.engine=fsdp|megatron``) needs of a job's config, checked before
anything is submitted: SkyRL itself finds these out only when its placement group, workers or vLLM
servers start, minutes into a job on GPUs (read in SkyRL 0.4.0's ``skyrl/backends/``):

- CPUs: the colocated placement group asks Ray for ``{"GPU": 1, "CPU": 1}`` per GPU
  (``SkyRLTrainBackend._create_colocate_pg``), on the job's Ray head of ``resources.cpus_per_task``
  CPUs; one more is the headroom for the driver, vLLM's router and Ray's own processes. Short of it the
  placement group never becomes ready and SkyRL raises after ``SKYRL_RAY_PG_TIMEOUT_IN_S`` (180 s).
- LoRA ranks: the rank becomes vLLM's ``max_lora_rank`` (``build_vllm_cli_args``), which accepts only
  vLLM's ``MaxLoRARanks``.
- ``placement.colocate_all=false`` puts the vLLM engines on GPUs of their own beside the policy's
  (``resources.gpus_per_node`` is the policy's): the job asks for both (:func:`node_gpus`: its SLURM
  request and its Ray head's ``--num-gpus``), and the CPU rule counts both.
- Megatron's ``merge_lora=true`` starts vLLM without LoRA (``_uses_lora_weight_sync``), while SkyRL's
  ``sample`` names the policy's adapter in every request once a LoRA policy exists
  (``_sample_with_remote_client_async``): vLLM would answer that no such model exists.
- The KL's reference on fsdp is SkyRL's own FSDP reference worker group (engines/skyrl_reference.py), placed
  as SkyRL's trainer places it with ``colocate_all`` (``RayPPOTrainer.build_models``): one worker on each of
  the policy's GPUs, so as many as the policy has (SkyRL asserts it there). Without ``colocate_all`` SkyRL's
  Tinker-mode backend gives the policy whole GPUs of its own (``SkyRLTrainBackend._build_policy``), which the
  reference cannot share as SkyRL's ``colocate_policy_ref`` would have it.
- Log-probabilities: the loop trains with the sampler's log-probabilities as the old policy's, and
  SkyRL's trainer computes the new ones at its algorithm's temperature (the sampling temperature's
  twin in keymap.py) over the whole vocabulary. vLLM returns the raw logits' log-probabilities unless
  ``logprobs_mode=processed_logprobs`` (conf/backend/skyrl.yaml sets it through SkyRL's
  ``engine_init_kwargs``); processed ones are renormalized over what top-p / top-k keep, which the
  trainer's are not: SkyRL runs that so, and so does the loop, with a note (:func:`gpu_trainer_notes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from rllm_sweeps.config.cross_rule import CrossRule
from rllm_sweeps.config.engine_names import GPU_TRAINER, REFERENCE_WORKER_ENGINES
from rllm_sweeps.native_keys import SKYRL_TRAIN_PREFIX

# vLLM 0.30's MaxLoRARanks (vllm/config/lora.py), SkyRL 0.4.0's pin; vLLM is not installed with the JAX
# engine, so the values are copied here and tests/test_gpu_trainer.py checks them against vLLM's where it is.
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)

# The one logprobs_mode whose values SkyRL's trainer reproduces (with top-p 1 and no top-k).
PROCESSED_LOGPROBS = "processed_logprobs"

_T = SKYRL_TRAIN_PREFIX
COLOCATE_ALL = _T + "trainer.placement.colocate_all"
_ENGINE = _T + "generator.inference_engine."
ENGINE_SIZE = tuple(
    _ENGINE + k for k in ("num_engines", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")
)
MERGE_LORA = _T + "trainer.policy.megatron_config.lora_config.merge_lora"
LOGPROBS_MODE = _T + "generator.inference_engine.engine_init_kwargs.logprobs_mode"
TRAIN_TOP_K = _T + "generator.sampling_params.top_k"
USE_KL_IN_REWARD = _T + "trainer.algorithm.use_kl_in_reward"
REF_GPUS = (_T + "trainer.placement.ref_num_gpus_per_node", _T + "trainer.placement.ref_num_nodes")


def nearest_lora_ranks(rank: Any) -> tuple[int, ...]:
    """vLLM's accepted ranks next to `rank` (the one below and the one above, where they exist)."""
    if not isinstance(rank, int):
        return VLLM_LORA_RANKS
    below = [r for r in VLLM_LORA_RANKS if r < rank][-1:]
    above = [r for r in VLLM_LORA_RANKS if r > rank][:1]
    return tuple(below + above)


def _on_gpu_trainer(engine: Any) -> bool:
    return engine in GPU_TRAINER


def _reference_worker(engine: Any, kl_loss: Any, kl_in_reward: Any) -> bool:
    """SkyRL's reference worker group runs: a KL term on an engine whose reference it is."""
    return engine in REFERENCE_WORKER_ENGINES and bool(kl_loss or kl_in_reward)


REFERENCE_WORKER_KEYS = ("skyrl.engine", "algorithm.use_kl_loss", USE_KL_IN_REWARD)


def _node_gpus(gpus: int, nodes: int, engine: Any, colocate: Any, *engine_size: int) -> int:
    if not _on_gpu_trainer(engine) or colocate is not False:
        return gpus
    inference = math.prod(engine_size)  # SkyRL's vLLM engines x their tensor/pipeline/data parallel size
    return gpus + -(-inference // max(1, nodes))  # spread over the job's nodes


# What node_gpus reads, in its argument order (config/native.py's resolver lists them too).
NODE_GPUS_KEYS = ("resources.gpus_per_node", "resources.nodes", "skyrl.engine", COLOCATE_ALL, *ENGINE_SIZE)


def node_gpus(tree: Mapping[str, Any]) -> int:
    """GPUs a job asks for on each node: the policy's (``resources.gpus_per_node``), plus, when SkyRL's
    GPU trainer does not colocate, its vLLM engines' share of the node. ``tree``: the plain config or
    its DictConfig root."""

    def read(key: str) -> Any:
        node: Any = tree
        for part in key.split("."):
            node = node[part]
        return node

    return node_gpus_of(read)


def node_gpus_of(read: Callable[[str], Any]) -> int:
    """node_gpus over a reader of dotted keys (KeyError: a key it cannot read)."""
    return _node_gpus(*(read(k) for k in NODE_GPUS_KEYS))


GPU_TRAINER_RULES: tuple[CrossRule, ...] = (
    CrossRule(
        ("resources.cpus_per_task", *NODE_GPUS_KEYS),
        lambda cpus, *gpus: not _on_gpu_trainer(gpus[2]) or cpus >= _node_gpus(*gpus) + 1,
        "skyrl.engine=fsdp/megatron: SkyRL's placement groups take one Ray CPU beside each GPU, and the "
        "driver one more; set resources.cpus_per_task >= the GPUs per node + 1",
        explain=lambda _cpus, *gpus: f" ({_node_gpus(*gpus)} GPUs per node)",
    ),
    CrossRule(
        ("model.lora.rank", "skyrl.engine"),
        lambda rank, engine: not _on_gpu_trainer(engine) or rank in VLLM_LORA_RANKS,
        "skyrl.engine=fsdp/megatron: the LoRA rank is vLLM's max_lora_rank, which accepts only "
        + ", ".join(map(str, VLLM_LORA_RANKS)),
        explain=lambda rank, engine: (
            f"; the nearest: model.lora.rank={' or '.join(map(str, nearest_lora_ranks(rank)))}"
        ),
    ),
    CrossRule(
        ("resources.jobs_per_gpu", "skyrl.engine"),
        lambda share, engine: not _on_gpu_trainer(engine) or share == 1,
        "resources.jobs_per_gpu > 1 shares a GPU by capping each job's JAX memory; SkyRL's GPU trainer "
        "(skyrl.engine=fsdp/megatron) has no such cap for its FSDP/Megatron workers: keep resources.jobs_per_gpu=1",
    ),
    CrossRule(
        (MERGE_LORA, "skyrl.engine", "model.lora.rank"),
        # Only with LoRA on: without it (rank 0, refused on its own) there is no adapter to merge.
        lambda merge, engine, rank: engine != "megatron" or merge is False or not (isinstance(rank, int) and rank > 0),
        f"skyrl.engine=megatron with {MERGE_LORA}=true and LoRA on (model.lora.rank > 0) merges the adapter into "
        f"vLLM's weights and starts vLLM without LoRA, while SkyRL samples the loop's LoRA policy by its "
        f"adapter's name; leave {MERGE_LORA} out (false on megatron) or set it false",
    ),
    CrossRule(
        (COLOCATE_ALL, *REFERENCE_WORKER_KEYS),
        lambda colocate, *kl: not _reference_worker(*kl) or colocate is not False,
        f"skyrl.engine=fsdp with a KL term (algorithm.use_kl_loss or {USE_KL_IN_REWARD}) runs SkyRL's reference "
        f"worker on the policy's GPUs, and with {COLOCATE_ALL}=false SkyRL's Tinker-mode backend gives the policy "
        "whole GPUs of its own (SkyRLTrainBackend._build_policy), which the reference cannot share as "
        f"colocate_policy_ref has it: leave {COLOCATE_ALL} out (true, SkyRL's default), or use skyrl.engine=megatron",
    ),
    CrossRule(
        (*REF_GPUS, "resources.gpus_per_node", "resources.nodes", COLOCATE_ALL, *REFERENCE_WORKER_KEYS),
        lambda ref_gpus, ref_nodes, gpus, nodes, colocate, *kl: (
            not _reference_worker(*kl) or colocate is False or ref_gpus * ref_nodes == gpus * nodes
        ),
        f"skyrl.engine=fsdp with a KL term puts one of SkyRL's reference workers on each of the policy's GPUs, "
        f"as SkyRL's trainer does with {COLOCATE_ALL} (it asserts that num_policy_gpus == num_ref_gpus): set "
        f"{REF_GPUS[0]} and {REF_GPUS[1]} to resources.gpus_per_node and resources.nodes",
        explain=lambda ref_gpus, ref_nodes, gpus, nodes, *_: (
            f" ({ref_gpus} x {ref_nodes} for the policy's {gpus} x {nodes})"
        ),
    ),
    CrossRule(
        (LOGPROBS_MODE, "skyrl.engine"),
        lambda mode, engine: not _on_gpu_trainer(engine) or mode == PROCESSED_LOGPROBS,
        f"skyrl.engine=fsdp/megatron trains on vLLM's log-probabilities as the old policy's: {LOGPROBS_MODE} "
        f"must be {PROCESSED_LOGPROBS} (after temperature, as SkyRL's trainer computes them)",
    ),
)


def gpu_trainer_notes(plain: Mapping[str, Any]) -> list[str]:
    """What a valid config's job on SkyRL's GPU trainer says once: top-p / top-k in training sampling are
    accepted, as SkyRL's own trainer runs them, with what they do to the log-probabilities."""
    engine = plain.get("skyrl", {}).get("engine")
    if not _on_gpu_trainer(engine):
        return []
    top_p = plain.get("rollout", {}).get("train", {}).get("top_p", 1)
    top_k = plain["skyrl"]["train"]["generator"]["sampling_params"].get("top_k", -1)
    if top_p == 1 and top_k in (-1, 0):
        return []
    return [
        f"note: rollout.train.top_p={top_p!r}, {TRAIN_TOP_K}={top_k!r} on skyrl.engine={engine}: vLLM's "
        "log-probabilities (the old policy's here) are renormalized over the tokens top-p / top-k keep, SkyRL's "
        "trainer's over the whole vocabulary; SkyRL's own trainer runs it so, and so does this one (the PPO ratio "
        "starts slightly above 1 on such tokens)"
    ]


__all__ = [
    "GPU_TRAINER_RULES",
    "NODE_GPUS_KEYS",
    "PROCESSED_LOGPROBS",
    "VLLM_LORA_RANKS",
    "gpu_trainer_notes",
    "nearest_lora_ranks",
    "node_gpus",
    "node_gpus_of",
]
