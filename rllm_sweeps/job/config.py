"""A job's configuration, read once: the composed, validated Hydra tree becomes a frozen `JobConfig`
that every stage of the job receives. `JobConfig.of` is the one place the job reads the tree by
key (tests/test_structure_job.py); the stages read typed fields, and hand the tree on whole only to
what takes it whole (the engine builds SkyRL's own config from it; the task and workflow groups;
config.yaml and Hydra's record; the trackers' copy of the config)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Literal

from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.engines import Engine, engine_of
from rllm_sweeps.jobhash import config_hash
from rllm_sweeps.training.settings import LoopSettings

ResumeMode = Literal["auto", "disable"]  # trainer.resume_mode's values (config/rules.py: RESUME_MODES)


@dataclass(frozen=True)
class JobConfig:
    """What a job reads of its config, typed; `tree` read-only."""

    tree: DictConfig  # the composed tree (a read-only copy), for what takes it whole (the module's docstring)
    config_hash: str  # jobhash.py: the job's identity in its directory's records
    resume_mode: ResumeMode  # trainer.resume_mode
    nodes: int  # resources.nodes
    engine: Engine  # skyrl.engine (and skyrl.jax.use_ray)
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
            nodes=int(tree.resources.nodes),
            engine=engine_of(tree),
            loop=LoopSettings.from_config(tree),
            loggers=(trainer.logger,) if isinstance(trainer.logger, str) else tuple(trainer.logger),
            project_name=str(trainer.project_name),
            experiment_name=str(trainer.experiment_name),
        )

    def plain(self) -> dict[str, Any]:
        """The tree with its interpolations resolved, as plain containers: a fresh copy for each
        reader (the task and workflow groups, the trackers)."""
        return OmegaConf.to_container(self.tree, resolve=True)  # type: ignore[return-value]  # a mapping's tree

    def resolved_yaml(self) -> str:
        """config.yaml's text: the tree, resolved."""
        return OmegaConf.to_yaml(self.tree, resolve=True)


__all__ = ["JobConfig", "ResumeMode"]
