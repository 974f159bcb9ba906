"""SkyRL's native trainer tree, taken from the installed SkyRL and wired to the key map.

Registered in Hydra's ConfigStore as `skyrl_native/planted` (conf/backend/skyrl.yaml
includes it), so every native key exists in the composed config and can be overridden
by its full path without `+`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.config.gpu_trainer_rules import NODE_GPUS_KEYS, node_gpus
from rllm_sweeps.keymap import KEY_MAPPINGS
from rllm_sweeps.native_keys import SKYRL_NODE
from rllm_sweeps.plain_tree import leaves


@contextlib.contextmanager
def quiet_skyrl() -> Iterator[None]:
    """Silence SkyRL's loguru notices (e.g. "no vLLM" on import): noise for a config tool."""
    from loguru import logger

    logger.disable("skyrl")
    try:
        yield
    finally:
        logger.enable("skyrl")


def _cached_json(name: str, build: Callable[[], Any]) -> Any:
    """``build()``, kept in the cache directory per SkyRL version and home directory (SkyRL expands ~):
    reading SkyRL's config types imports torch, seconds for a config tool."""
    import hashlib
    import importlib.metadata
    import json
    import os

    from rllm_sweeps.cachedir import cache_dir

    key = f"{importlib.metadata.version('skyrl')}:{os.path.expanduser('~')}"
    path = cache_dir() / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    with quiet_skyrl():
        value = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(value))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache: build it each time
    return value


def _default_tree() -> Any:
    from skyrl.train.config import SkyRLTrainConfig, get_config_as_yaml_str

    return OmegaConf.to_container(OmegaConf.create(get_config_as_yaml_str(SkyRLTrainConfig())))


@functools.cache
def skyrl_train_defaults() -> dict[str, Any]:
    """SkyRLTrainConfig() as a plain dict (SkyRL's own defaults, about 420 leaves)."""
    return _cached_json("skyrl-defaults", _default_tree)


def _dict_fields() -> list[str]:
    from skyrl.train.config import SkyRLTrainConfig

    from rllm_sweeps.config.free_form import dict_field_paths

    return dict_field_paths(SkyRLTrainConfig)


@functools.cache
def skyrl_free_form() -> frozenset[str]:
    """The paths (relative to skyrl.train) of the fields SkyRL's config types as a dictionary: any key
    goes in them, as SkyRL takes it (config/free_form.py)."""
    return frozenset(_cached_json("skyrl-free-form", _dict_fields))


def planted_tree() -> DictConfig:
    """The native subtree (relative to `skyrl`) with the key map's interpolations planted."""
    tree = OmegaConf.create({"train": skyrl_train_defaults(), "jax": {}})
    for mapping in KEY_MAPPINGS:
        path = mapping.native.removeprefix(SKYRL_NODE + ".")
        OmegaConf.update(tree, path, mapping.interpolation(), merge=False, force_add=True)
    return tree


COLOCATED_ENGINES = "rllm_colocated_engines"
CPUS_PER_TASK = "rllm_cpus_per_task"
MINI_BATCH = "rllm_mini_batch"
KL_BETA = "rllm_kl_beta"
MERGE_LORA = "rllm_merge_lora"
RUN_NAME = "rllm_run_name"  # hydra.run.dir: a job by hand's directory from its overrides
DIR_NAME = "rllm_dir_name"  # hydra.run.dir: the experiment's directory from its name (a '/' allowed)
LOCAL_SLURM_CONF = "rllm_local_slurm_conf"  # conf/cluster/local.yaml: the local cluster's slurm.conf
_ENGINE = "skyrl.train.generator.inference_engine."
_POLICY = "skyrl.train.trainer.policy."
# What each of our resolvers reads (the sweep composer re-evaluates one only when these change).
RESOLVER_READS: dict[str, tuple[str, ...]] = {
    COLOCATED_ENGINES: (
        "skyrl.engine",
        "skyrl.train.trainer.placement.colocate_all",
        "resources.nodes",
        "resources.gpus_per_node",
        _ENGINE + "tensor_parallel_size",
        _ENGINE + "pipeline_parallel_size",
        _ENGINE + "data_parallel_size",
    ),
    CPUS_PER_TASK: NODE_GPUS_KEYS,
    KL_BETA: ("algorithm.use_kl_loss", "skyrl.train.trainer.algorithm.use_kl_in_reward"),
    MERGE_LORA: ("skyrl.engine",),
    MINI_BATCH: (
        "data.train_batch_size",
        "rollout.n",
        "skyrl.engine",
        "resources.nodes",
        "resources.gpus_per_node",
        _POLICY + "sequence_parallel_size",
        _POLICY + "megatron_config.tensor_model_parallel_size",
        _POLICY + "megatron_config.pipeline_model_parallel_size",
        _POLICY + "megatron_config.context_parallel_size",
        "skyrl.train.trainer.micro_train_batch_size_per_gpu",
    ),
}


def _colocated_engines(*, _root_: DictConfig) -> int:
    """vLLM engines that fill the policy's GPUs: SkyRL requires the counts to be equal when
    training and inference share them (placement.colocate_all); 1 (SkyRL's default) otherwise."""
    skyrl = _root_.skyrl
    if skyrl.engine == "jax" or not skyrl.train.trainer.placement.colocate_all:
        return 1
    engine = skyrl.train.generator.inference_engine
    gpus = int(_root_.resources.nodes) * max(1, int(_root_.resources.gpus_per_node))
    per_engine = engine.tensor_parallel_size * engine.pipeline_parallel_size * engine.data_parallel_size
    return max(1, gpus // per_engine)


def _mini_batch(preferred: int, *, _root_: DictConfig) -> int:
    """trainer.mini_batch_size when the user leaves it: ``preferred`` prompts per optimizer step,
    or the largest smaller size that the batch and the GPUs allow, so that a batch the user chose
    never fails on a mini batch they did not: it divides data.train_batch_size and, on SkyRL's GPU
    trainer, its sequences (x rollout.n) split evenly over the data-parallel ranks in whole micro
    batches (SkyRL's validate_cfg). The batch itself (one optimizer step) when nothing smaller fits."""
    batch, n = int(_root_.data.train_batch_size), int(_root_.rollout.n)
    dp, micro = 1, 1
    if _root_.skyrl.engine != "jax":
        trainer = _root_.skyrl.train.trainer
        gpus = int(_root_.resources.nodes) * max(1, int(_root_.resources.gpus_per_node))
        if _root_.skyrl.engine == "megatron":
            m = trainer.policy.megatron_config
            per_replica = m.tensor_model_parallel_size * m.pipeline_model_parallel_size * m.context_parallel_size
        else:
            per_replica = trainer.policy.sequence_parallel_size
        dp, micro = max(1, gpus // max(1, per_replica)), max(1, int(trainer.micro_train_batch_size_per_gpu))
    for size in range(min(int(preferred), batch), 0, -1):
        per_rank, rest = divmod(size * n, dp)
        if batch % size == 0 and rest == 0 and per_rank % micro == 0:
            return size
    return batch


def _cpus_per_task(preferred: int, *, _root_: DictConfig) -> int:
    """resources.cpus_per_task when the user leaves it: ``preferred``, and on SkyRL's GPU trainer at
    least one CPU per GPU of the node plus one (its placement groups take a Ray CPU beside each GPU:
    config/gpu_trainer_rules.py, which refuses fewer when the user sets them)."""
    if _root_.skyrl.engine == "jax":
        return int(preferred)
    return max(int(preferred), node_gpus(_root_) + 1)


def _merge_lora(*, _root_: DictConfig) -> bool:
    """Megatron's merge_lora when the user leaves it: SkyRL's true, except on skyrl.engine=megatron, where
    the loop trains a LoRA policy that SkyRL samples by its adapter's name, which only the adapter-only
    sync (false) serves (config/gpu_trainer_rules.py)."""
    return _root_.skyrl.engine != "megatron"


def _kl_beta(*, _root_: DictConfig) -> float:
    """algorithm.kl_beta when the user leaves it: rLLM's 0.0 (no KL), SkyRL's 0.001 once a KL term
    is turned on (algorithm.use_kl_loss or SkyRL's own name for it; SkyRL's use_kl_in_reward, whose
    initial coefficient kl_loss_coef is)."""
    in_reward = OmegaConf.select(_root_, "skyrl.train.trainer.algorithm.use_kl_in_reward", default=False)
    return 0.001 if bool(_root_.algorithm.use_kl_loss) or bool(in_reward) else 0.0


def register() -> None:
    """Make `skyrl_native/planted` and our resolvers available to Hydra (idempotent)."""
    register_resolvers()
    _store_planted_tree()


@functools.cache
def _store_planted_tree() -> None:
    """Once per process: the tree is the same every time (skyrl_train_defaults is cached), Hydra
    deep-copies what it loads from the store, and building it is a fifth of a composition."""
    ConfigStore.instance().store(group="skyrl_native", name="planted", node=planted_tree())


def _local_slurm_conf() -> str:
    from rllm_sweeps.local_slurm.current import current_conf

    return current_conf()


def register_resolvers() -> None:
    """The resolvers conf/ uses for derived defaults (idempotent; no Hydra needed)."""
    from rllm_sweeps.records.layout import dir_name, run_name

    resolvers = {
        COLOCATED_ENGINES: _colocated_engines,
        KL_BETA: _kl_beta,
        MERGE_LORA: _merge_lora,
        MINI_BATCH: _mini_batch,
        CPUS_PER_TASK: _cpus_per_task,
        RUN_NAME: run_name,
        DIR_NAME: dir_name,
        LOCAL_SLURM_CONF: _local_slurm_conf,
    }
    for name, resolver in resolvers.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, resolver)


@dataclass(frozen=True)
class SkyRLReading:
    """What SkyRL's own override handling makes of one native override it does not have as a field.

    kind: "unknown" (SkyRL: invalid field), "refused" (SkyRL raises its own message), or
    "accepted" (SkyRL remaps or drops it): then `changed` holds the leaves it set, relative to
    skyrl.train ({} = dropped).
    """

    kind: str
    message: str = ""
    changed: dict[str, Any] = field(default_factory=dict)


def skyrl_reading(path: str, value: Any) -> SkyRLReading:
    """Ask SkyRL's ``SkyRLTrainConfig.from_cli_overrides`` what ``path=value`` means (path relative
    to skyrl.train): SkyRL decides what it accepts, remaps, drops or refuses, not a copy of its rules."""
    return skyrl_reading_of({path: value})


def skyrl_reading_of(values: dict[str, Any]) -> SkyRLReading:
    """skyrl_reading for several settings read together ({path: value}, paths relative to skyrl.train)."""
    import warnings

    with quiet_skyrl(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SkyRL's DeprecationWarning for a remapped key
        from skyrl.train.config import SkyRLTrainConfig, get_config_as_yaml_str

        try:
            cfg = SkyRLTrainConfig.from_cli_overrides(dict(values))
        except ValueError as err:
            text = str(err).strip()
            if text.startswith("Invalid fields"):
                return SkyRLReading("unknown", text.splitlines()[0])
            return SkyRLReading("refused", text.splitlines()[0])
        except Exception as err:  # a type SkyRL's builder cannot take
            return SkyRLReading("refused", f"{type(err).__name__}: {str(err).strip().splitlines()[0]}")
        got = dict(leaves(OmegaConf.to_container(OmegaConf.create(get_config_as_yaml_str(cfg)))))
    defaults = dict(leaves(skyrl_train_defaults()))
    changed = {k: v for k, v in got.items() if k not in defaults or defaults[k] != v}  # a new key of a dict field too
    return SkyRLReading("accepted", changed=changed)


# Settings this project adds to SkyRL's algorithm tree, as SkyRL's DAPO example adds them to its
# AlgorithmConfig subclass (examples/train/algorithms/dapo/main_dapo.py), with the loop's defaults (null:
# no overlong buffer). The loop reads them (training/settings.py); SkyRL's own config has no such
# fields, so every tree handed to SkyRL goes without them (skyrl_own).
EXAMPLE_ADDED: dict[str, Any] = {
    "trainer.algorithm.overlong_buffer_len": None,
    "trainer.algorithm.overlong_buffer_penalty_factor": 1.0,
}


def skyrl_own(train: dict[str, Any]) -> dict[str, Any]:
    """A copy of a plain skyrl.train tree without the settings this project adds (EXAMPLE_ADDED)."""
    import copy

    tree = copy.deepcopy(train)
    for path in EXAMPLE_ADDED:
        *parents, leaf = path.split(".")
        node = tree
        for part in parents:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(leaf, None)
    return tree
