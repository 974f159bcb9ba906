"""A job's configuration, read once: the composed, validated Hydra tree becomes a frozen `JobConfig`
that every stage of the job receives. `JobConfig.of` is the one place the job reads the tree by
key (tests/test_structure_job.py); the stages read typed fields: the engine its `EngineSettings`
(engines/settings.py: resources, model, skyrl.jax's and skyrl.train's settings by SkyRL's names, from
which it builds SkyRL's own config), the loop its `LoopSettings`. The tree is handed on whole only to
what takes it whole: the task and workflow groups, config.yaml and Hydra's record, the trackers' copy
of the config."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Any, Literal

from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.config.gpu_trainer_rules import node_gpus
from rllm_sweeps.engines import Engine, engine_of
from rllm_sweeps.engines.settings import EngineSettings, JaxSettings, SkyRLTrainTree
from rllm_sweeps.jobhash import config_hash
from rllm_sweeps.training.settings import LoopSettings

ResumeMode = Literal["auto", "disable"]  # trainer.resume_mode's values (config/rules.py: RESUME_MODES)


@dataclass(frozen=True)
class JobConfig:
    """What a job reads of its config, typed; `tree` read-only."""

    tree: DictConfig  # the composed tree (a read-only copy), for what takes it whole (the module's docstring)
    config_hash: str  # jobhash.py: the job's identity in its directory's records
    resume_mode: ResumeMode  # trainer.resume_mode
    engine: Engine  # skyrl.engine (and skyrl.jax.use_ray)
    engine_settings: EngineSettings  # what the engine reads: resources, model, its SkyRL settings
    loop: LoopSettings  # the RL loop's settings (training/settings.py)
    loggers: tuple[str, ...]  # trainer.logger, a name or a list of names
    project_name: str  # trainer.project_name
    experiment_name: str  # trainer.experiment_name

    @classmethod
    def of(cls, cfg: DictConfig) -> JobConfig:
        """The job's config from a composed tree that passed validation (rllm_sweeps.config.load)."""
        tree = copy.deepcopy(cfg)  # the caller's tree stays writable; the job's cannot change under it
        OmegaConf.set_readonly(tree, True)
        trainer = tree.trainer
        return cls(
            tree=tree,
            config_hash=config_hash(tree),
            resume_mode=str(trainer.resume_mode),  # type: ignore[arg-type]  # validated: one of RESUME_MODES
            engine=engine_of(tree),
            engine_settings=_engine_settings(tree),
            loop=LoopSettings.from_config(tree),
            loggers=(trainer.logger,) if isinstance(trainer.logger, str) else tuple(trainer.logger),
            project_name=str(trainer.project_name),
            experiment_name=str(trainer.experiment_name),
        )

    @property
    def nodes(self) -> int:
        """resources.nodes"""
        return self.engine_settings.nodes

    def plain(self) -> dict[str, Any]:
        """The tree with its interpolations resolved, as plain containers: a fresh copy for each
        reader (the task and workflow groups, the trackers)."""
        return OmegaConf.to_container(self.tree, resolve=True)  # type: ignore[return-value]  # a mapping's tree

    def resolved_yaml(self) -> str:
        """config.yaml's text: the tree, resolved."""
        return OmegaConf.to_yaml(self.tree, resolve=True)


def _engine_settings(tree: DictConfig) -> EngineSettings:
    """What the engine reads of `tree`; skyrl.jax's and skyrl.train's settings only for the engines
    that read them (jax; fsdp and megatron)."""
    from rllm_sweeps.config.memory_need import job_memory_need
    from rllm_sweeps.engines.skyrl_train import tree_overrides

    engine, resources = str(tree.skyrl.engine), tree.resources

    def plain(node: DictConfig) -> dict[str, Any]:
        return OmegaConf.to_container(node, resolve=True)  # type: ignore[return-value]  # a mapping's tree

    whole = plain(tree)
    return EngineSettings(
        engine=engine,
        model_path=str(tree.model.path),
        nodes=int(resources.nodes),
        cpus_per_task=int(resources.cpus_per_task),
        gpus_per_node=int(resources.gpus_per_node),
        node_gpus=node_gpus(tree),
        jobs_per_gpu=int(resources.jobs_per_gpu),
        lora_rank=int(tree.model.lora.rank),
        jax=JaxSettings(**plain(tree.skyrl.jax)) if engine == "jax" else None,
        skyrl_train=SkyRLTrainTree(**tree_overrides(plain(tree.skyrl.train))) if engine != "jax" else None,
        memory_need=functools.cache(lambda: job_memory_need(whole)),
    )


__all__ = ["JobConfig", "ResumeMode"]
