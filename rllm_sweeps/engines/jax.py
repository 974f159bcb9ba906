"""SkyRL's JAX backends: ``JaxBackend`` in the job's own process (``JaxEngine``) and
``RayJaxBackend``, one JAX process per bundle of the job's Ray cluster (``RayJaxEngine``,
``skyrl.jax.use_ray``). Both read the common keys, the native keys mapped to them (keymap.py), the
few native keys the loop reads directly (sampling ``top_k``, CISPO's clip range) and ``skyrl.jax.*``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import JsonValue

from rllm_sweeps.config.engine_settings import jax_losses
from rllm_sweeps.engines.base import BuiltBackend, Engine
from rllm_sweeps.engines.settings import EngineSettings
from rllm_sweeps.training.engine_traits import EngineTraits
from rllm_sweeps.training.settings import LoopSettings

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

# skyrl.jax.*'s mesh: all 1 = the engine decides (data-parallel over what the job was given).
MESH = ("fully_sharded_data_parallel_size", "expert_parallel_size", "tensor_parallel_size")
JAX_CACHE_ENV = "RLLM_SWEEPS_JAX_CACHE"  # "off": no shared compilation cache


class JaxEngine(Engine):
    """SkyRL's JaxBackend, in the job's process: no Ray on one node."""

    name = "jax"
    no_ray_reason: ClassVar[str] = "SkyRL's JaxBackend runs in this process: no Ray"

    def selected_by(self) -> dict[str, Any]:
        return {"skyrl": {"engine": self.name, "jax": {"use_ray": self.uses_ray}}}

    def reads_jax_settings(self) -> bool:
        return True

    @property
    def traits(self) -> EngineTraits:
        return EngineTraits(
            losses=jax_losses(),
            backend_reduction="seq-mean-token-mean",
            loss_config_for=jax_losses(),
            sampler_shares_trained_weights=True,
        )

    def _build(
        self,
        settings: EngineSettings,
        loop: LoopSettings,
        model_dir: Path,
        tokenizer: PreTrainedTokenizerBase,
        job_dir: Path,
        parallel_calls: int,
    ) -> BuiltBackend:
        from rllm_sweeps.cachedir import cache_dir
        from rllm_sweeps.engines.memory_sizes import fit_to_share
        from rllm_sweeps.training.jax_backend import device_share_bytes, enable_jax_compilation_cache, make_jax_backend
        from rllm_sweeps.training.memory_retry import SAMPLE_SIZE, TRAIN_SIZE

        jax_cache = None
        if os.environ.get(JAX_CACHE_ENV, "on") != "off":
            # Jobs of a machine share compiled programs: later jobs skip most of the JIT time.
            jax_cache = enable_jax_compilation_cache(cache_dir() / "jax")
        assert settings.jax is not None  # JobConfig.of builds it for skyrl.engine=jax
        jax_settings = settings.jax.skyrl_fields()
        asked = {TRAIN_SIZE: settings.jax.train_micro_batch_size, SAMPLE_SIZE: settings.jax.sample_max_num_sequences}
        self._place(settings, jax_settings, jax_cache)
        fitted = fit_to_share(settings.memory_need, asked, None if self.uses_ray else device_share_bytes())
        # None (auto on the CPU, 0) is sized by make_jax_backend so every call keeps one shape.
        sizes = {TRAIN_SIZE: fitted.choice.micro_batch, SAMPLE_SIZE: fitted.choice.sample_sequences}
        backend = make_jax_backend(model_dir, loop, **sizes, parallel_calls=parallel_calls, **jax_settings)
        memory_fit = fitted.record(backend.config)
        if not self.uses_ray:  # memory_retry.py's retries append to the job's record
            backend.memory_fit, backend.memory_need, backend.memory_share = memory_fit, fitted.need, fitted.share
            backend.memory_cache = cache_dir()
        return BuiltBackend(
            backend,
            tokenizer,
            processes=int(backend.config.num_processes or 1),
            placement_group=self._pg(backend),
            memory_fit=memory_fit,
        )

    def _place(self, settings: EngineSettings, jax_settings: dict[str, JsonValue], jax_cache: Path | None) -> None:
        """Sets the mesh (and, on Ray, the processes) in `jax_settings`."""
        if all(jax_settings[k] == 1 for k in MESH):
            import jax

            # Every device the job was given (its CUDA_VISIBLE_DEVICES): data-parallel over them, as
            # skyrl.jax.* leaves it (SkyRL's weight loading needs a mesh that covers the devices).
            jax_settings["fully_sharded_data_parallel_size"] = devices = jax.local_device_count()
            if devices > 1:
                print(f"JAX trains data-parallel over {devices} {jax.default_backend()} devices", flush=True)

    def _pg(self, backend: Any) -> Any:
        return None


class RayJaxEngine(JaxEngine):
    """SkyRL's RayJaxBackend: one JAX process per bundle of the job's Ray cluster (default: one per node)."""

    uses_ray: ClassVar[bool] = True

    def _place(self, settings: EngineSettings, jax_settings: dict[str, JsonValue], jax_cache: Path | None) -> None:
        import ray

        from rllm_sweeps.training.jax_backend import with_jax_cache_env

        jax_settings["num_processes"] = jax_settings["num_processes"] or settings.nodes
        jax_settings["ray_actor_options"] = jax_settings["ray_actor_options"] or {"num_cpus": 1}
        if jax_cache is not None and jax_settings["num_processes"] == 1:
            # One JAX process (a Ray actor) compiles into the machine's cache. Several do not use it: a
            # two-process job whose processes found programs in a warm cache hung in its first sample
            # (5 times on 2026-12-06; never with an empty one): JAX's processes must all compile or all
            # load a program, and a shared cache does not guarantee it.
            jax_settings["ray_actor_options"] = with_jax_cache_env(jax_settings["ray_actor_options"], jax_cache)
        # The mesh must cover every process's devices (SkyRL's weight loading fails on a mesh
        # smaller than the global device set): shard data-parallel across the processes.
        if all(jax_settings[k] == 1 for k in MESH):
            jax_settings["fully_sharded_data_parallel_size"] = jax_settings["num_processes"]
        ray.init(address=os.environ["RAY_ADDRESS"], logging_level="WARNING", log_to_driver=False)

    def _pg(self, backend: Any) -> Any:
        return backend.pg  # RayJaxBackend's placement group: one bundle per JAX process


__all__ = ["JaxEngine", "RayJaxEngine"]
