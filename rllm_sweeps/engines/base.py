"""The engine base class: one subclass per SkyRL backend the loop trains through.

An engine is chosen by the config (``skyrl.engine``, and ``skyrl.jax.use_ray`` for the JAX one) and
answers every question the job and the key listings ask of it: which keys it reads, what the loop must
know of it (``traits``), whether it runs on Ray and with what of the node, how its SkyRL backend is
built, and whether it can run here at all. Optional capabilities are methods with defaults (the
engine without Ray, the engine that needs nothing installed beyond the JAX one), so callers never
probe for them. Heavy libraries (JAX, torch, SkyRL's trainers, Ray) are imported inside the methods
that use them: listing keys stays fast.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rllm_sweeps.config.engine_settings import NOT_READ
from rllm_sweeps.config.setting_effect import loop_native_keys
from rllm_sweeps.engines.settings import EngineSettings
from rllm_sweeps.keymap import BY_NATIVE
from rllm_sweeps.native_keys import SKYRL_JAX_PREFIX, SKYRL_TRAIN_PREFIX
from rllm_sweeps.records.memory import MemoryFit
from rllm_sweeps.training.engine_traits import EngineTraits
from rllm_sweeps.training.settings import LoopSettings

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


class EngineUnavailable(RuntimeError):
    """The engine cannot run on this machine; the message says what it needs and what to do."""


@dataclass(frozen=True)
class BuiltBackend:
    """A SkyRL backend ready for the loop, with what the job records of it."""

    backend: Any  # a skyrl.backends.backend.AbstractBackend
    tokenizer: Any  # the model's Hugging Face tokenizer
    processes: int = 1  # the backend's processes (RayJaxBackend: one JAX process per bundle)
    placement_group: Any = None  # the Ray placement group its processes run in, if any
    memory_fit: MemoryFit | None = None  # its sizes, how they were chosen, its out-of-memory retries

    @property
    def name(self) -> str:
        """SkyRL's backend class (JaxBackend, RayJaxBackend, SkyRLTrainBackend), also under a subclass
        of this project's (training/optimizer.py's)."""
        ours = __name__.split(".")[0]
        return next(c.__name__ for c in type(self.backend).__mro__ if c.__module__.split(".")[0] != ours)


class Engine:
    """One SkyRL backend: what it reads, what the loop must know of it, and how it runs."""

    name: str  # skyrl.engine's value
    uses_ray: ClassVar[bool] = False  # its backend runs on the job's Ray cluster
    # Why a one-node job of this engine starts no Ray (recorded in the job's ray.json).
    no_ray_reason: ClassVar[str] = ""

    def selected_by(self) -> dict[str, Any]:
        """The settings that choose this engine, as a plain config tree."""
        return {"skyrl": {"engine": self.name}}

    # ---- which keys it reads ----

    def reads(self, key: str) -> bool:
        """Whether this engine reads `key` (a common key, or a native key by its full path)."""
        if key.startswith(SKYRL_JAX_PREFIX):
            return self.reads_jax_settings()
        if key.startswith(SKYRL_TRAIN_PREFIX):
            mapping = BY_NATIVE.get(key)
            if mapping is not None:
                return self.reads(mapping.common)  # the loop reads it through its common key
            return key in loop_native_keys() or self.reads_train_setting(key.removeprefix(SKYRL_TRAIN_PREFIX))
        return key not in NOT_READ or not NOT_READ[key].refuses(self.selected_by())

    def reads_jax_settings(self) -> bool:
        """Whether it reads skyrl.jax.* (SkyRL's JaxBackendConfig)."""
        return False

    def reads_train_setting(self, rel: str) -> bool:
        """Whether its backend reads skyrl.train.`rel`, a native key the loop does not read itself."""
        return False

    # ---- what the loop needs to know ----

    @property
    def traits(self) -> EngineTraits:
        raise NotImplementedError

    # ---- where and how it runs ----

    def check_available(self) -> None:
        """Raises EngineUnavailable, before Ray or a model starts, when this machine cannot run it."""

    def node_resources(self, settings: EngineSettings) -> tuple[int, int]:
        """(CPUs, GPUs) Ray may use: SLURM's allocation inside a SLURM job (Ray hangs when it
        assumes more CPUs than the allocation has), else the job's resources.* (the GPUs of SkyRL's
        vLLM engines too when they are not colocated: gpu_trainer_rules.node_gpus)."""
        from rllm_sweeps.runtime.slurm_env import slurm_node_resources

        if "SLURM_JOB_ID" in os.environ:
            return slurm_node_resources()
        return settings.cpus_per_task, settings.node_gpus

    def build_backend(
        self, settings: EngineSettings, loop: LoopSettings, job_dir: Path, parallel_calls: int = 1
    ) -> BuiltBackend:
        """The SkyRL backend for the job's settings and the model's tokenizer, its own files in
        `job_dir`. `parallel_calls`: the workflow's most model calls per episode at once (sampler batch size)."""
        from transformers import AutoTokenizer

        from rllm_sweeps.cachedir import cache_dir
        from rllm_sweeps.models import resolve_model_path

        model_dir = resolve_model_path(settings.model_path, cache_dir())
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        return self._build(settings, loop, model_dir, tokenizer, job_dir, parallel_calls)

    def _build(
        self,
        settings: EngineSettings,
        loop: LoopSettings,
        model_dir: Path,
        tokenizer: PreTrainedTokenizerBase,
        job_dir: Path,
        parallel_calls: int,
    ) -> BuiltBackend:
        raise NotImplementedError


__all__ = ["BuiltBackend", "Engine", "EngineUnavailable"]
