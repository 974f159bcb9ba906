"""SkyRL's GPU trainer (``SkyRLTrainBackend``: FSDP or Megatron workers + vLLM servers, on Ray) as an
engine (``SkyRLTrainEngine``, skyrl.engine=fsdp|megatron), and its construction for the loop.

The backend's overrides are the job's composed ``skyrl.train`` tree, by dotted path: each
sub-config (a mapping of leaves) that differs from SkyRL's defaults, whole, and the model paths
pointing at the resolved model directory. Whole sub-configs, because one leaf of an optional
sub-config (``generator.eval_sampling_params``) would bring that sub-config's dataclass
defaults along instead of the values SkyRL's ``__post_init__`` gives it; not the whole tree,
because SkyRL's builder refuses some sub-configs outright (the torch profiler's).

SkyRL's own builder (``_build_skyrl_train_config``, through
``SkyRLTrainConfig.from_cli_overrides``) turns the overrides into the trainer's config when the
loop creates the policy; tests/test_skyrl_train_backend.py checks that config against the tree leaf
by leaf. The leaves that builder sets regardless are refused at validation (config/engine_settings.py), the
policy's lr schedule excepted: the loop computes the lr of every step and the backend applies it.

SkyRL's own working paths (``JOB_OWNED_PATHS``) go to the job's directory whatever the tree says:
SkyRL's defaults are machine-wide (``/tmp/skyrl_lora_sync``, ``/tmp/skyrl-logs``, ``~/exports``,
``~/ckpts``), and the loop's policy is always ``policy``, so two jobs on one node would write one
``<lora_sync_path>/policy/`` adapter that every vLLM server of both reads. The job directory is on
the filesystem every node of the job sees (runtime/job_ray.py), as SkyRL asks of these paths on
several nodes.

Constructing the backend needs no GPU (it loads the tokenizer); Ray and the workers start at
``create_model``, the vLLM servers at the first ``save_sampler_checkpoint`` (the loop's setup
publishes the new policy right after creating it), on the job's Ray cluster (SkyRL's
``initialize_ray`` joins ``RAY_ADDRESS``). This path has never run on a GPU here (no vLLM): what
runs on CPU is in tests/test_gpu_trainer_on_cpu.py and tests/test_skyrl_train_backend.py.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rllm_sweeps.config.engine_names import REFERENCE_WORKER_ENGINES
from rllm_sweeps.config.native import skyrl_own, skyrl_train_defaults
from rllm_sweeps.config.setting_effect import ppo_loop_only
from rllm_sweeps.engines.base import BuiltBackend, Engine, EngineUnavailable
from rllm_sweeps.engines.settings import EngineSettings, SkyRLTrainTree
from rllm_sweeps.keymap import KEY_MAPPINGS
from rllm_sweeps.native_keys import SKYRL_TRAIN_PREFIX
from rllm_sweeps.plain_tree import leaves
from rllm_sweeps.records.layout import JOB_OWNED_PATHS, JobPaths
from rllm_sweeps.training.engine_traits import EngineTraits
from rllm_sweeps.training.settings import LoopSettings

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

# Where SkyRL's Tinker-mode backend reads its tree (read in skyrl/backends/ of SkyRL 0.4.0): the
# trainer's workers take trainer.*, the vLLM servers generator.inference_engine.*. Whether a set
# setting changes what runs in a given configuration is config/setting_effect.py's to say.
SUBTREES = ("trainer.", "generator.inference_engine.")
NEEDS = ("vllm", "flash_attn")  # packages the GPU trainer imports (pip install -e '.[fsdp]')


class SkyRLTrainEngine(Engine):
    """SkyRL's SkyRLTrainBackend with the FSDP or Megatron strategy; its overrides are the whole
    composed skyrl.train tree (native_overrides), and it runs on the job's Ray cluster."""

    uses_ray: ClassVar[bool] = True

    def __init__(self, strategy: str) -> None:
        self.name = self.strategy = strategy  # "fsdp" | "megatron": skyrl.engine's value is the strategy

    def reads_train_setting(self, rel: str) -> bool:
        return rel.startswith(SUBTREES) and rel not in ppo_loop_only()

    @property
    def traits(self) -> EngineTraits:
        # SkyRLTrainBackend turns ppo/gspo clip thresholds into its eps_clip settings; other losses
        # take their parameters from the skyrl.train tree it was built with.
        # Its builder turns SkyRL's KL loss off (Tinker mode builds no ref worker): the loop adds
        # SkyRL's KL term to the policy loss against the reference (custom_loss.py), on fsdp SkyRL's
        # own reference worker group (engines/skyrl_reference.py), on megatron an untrained adapter.
        return EngineTraits(
            losses=None,
            backend_reduction="token-sum",
            loss_config_for=("ppo", "gspo"),
            kl_loss_in_advantages=False,
            reference_worker=self.strategy in REFERENCE_WORKER_ENGINES,
        )

    def check_available(self) -> None:
        """The GPU trainer needs CUDA and vLLM: said before Ray or a model starts."""
        missing = [m for m in NEEDS if importlib.util.find_spec(m) is None]
        cuda = _cuda_available()
        if missing or not cuda:
            what = ", ".join([*(f"the {m} package" for m in missing), *([] if cuda else ["a CUDA GPU"])])
            raise EngineUnavailable(
                f"skyrl.engine={self.name} runs SkyRL's GPU trainer (vLLM + FSDP/Megatron) and needs {what}. "
                f"On a GPU cluster: pip install -e '.[fsdp]'. Here, use skyrl.engine=jax (CPU or one GPU)."
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
        assert settings.skyrl_train is not None  # JobConfig.of builds it for skyrl.engine=fsdp|megatron
        return BuiltBackend(skyrl_train_backend(self.strategy, settings.skyrl_train, model_dir, job_dir), tokenizer)


def _cuda_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def job_owned_paths(job_dir: str | os.PathLike) -> dict[str, str]:
    """SkyRL's working paths of the job in ``job_dir``: {path relative to skyrl.train: directory}."""
    root = JobPaths(Path(job_dir)).skyrl
    return {key: str(root / sub) for key, sub in JOB_OWNED_PATHS.items()}


REFERENCE_PATH = "trainer.ref.model.path"  # relative to skyrl.train


def tree_overrides(train: dict[str, Any]) -> dict[str, Any]:
    """The composed skyrl.train tree as SkyRL overrides, {dotted path: value}, before the job's paths
    (`with_job_paths`): each sub-config that differs from SkyRL's defaults, whole, those of SkyRL's
    working paths too (the job's directory always differs from SkyRL's machine-wide defaults)."""
    defaults = dict(leaves(skyrl_train_defaults()))
    tree = dict(leaves(skyrl_own(train)))
    changed = {path.rpartition(".")[0] for path, value in tree.items() if defaults.get(path, value) != value}
    changed |= {path.rpartition(".")[0] for path in tree if path not in defaults}
    changed |= {path.rpartition(".")[0] for path in JOB_OWNED_PATHS}
    return {path: value for path, value in tree.items() if path.rpartition(".")[0] in changed}


def with_job_paths(
    overrides: dict[str, Any], model_dir: str | os.PathLike, job_dir: str | os.PathLike
) -> dict[str, Any]:
    """`overrides` with the model paths (those of model.path in the key map) -> model_dir and SkyRL's
    working paths -> job_dir's."""
    overrides = overrides | job_owned_paths(job_dir)
    for mapping in KEY_MAPPINGS:
        if mapping.common == "model.path" and mapping.native.startswith(SKYRL_TRAIN_PREFIX):
            overrides[mapping.native.removeprefix(SKYRL_TRAIN_PREFIX)] = str(model_dir)
    # The reference's follows model.path (conf/backend/skyrl.yaml; another is refused where a KL term reads it)
    overrides[REFERENCE_PATH] = str(model_dir)
    return overrides


def native_overrides(train: dict[str, Any], model_dir: str | os.PathLike, job_dir: str | os.PathLike) -> dict[str, Any]:
    """The composed skyrl.train tree as SkyRL overrides, {dotted path: value}; the model paths
    (those of model.path in the key map) -> model_dir, SkyRL's working paths -> job_dir's."""
    return with_job_paths(tree_overrides(train), model_dir, job_dir)


def backend_overrides(engine: str, overrides: dict[str, Any]) -> Any:
    """SkyRL's FSDPBackendOverrides or MegatronBackendOverrides of these overrides."""
    from skyrl.backends.skyrl_train_backend import FSDPBackendOverrides, MegatronBackendOverrides

    cls = {"fsdp": FSDPBackendOverrides, "megatron": MegatronBackendOverrides}[engine]
    return cls(**overrides)


def skyrl_train_backend(
    engine: str, tree: SkyRLTrainTree, model_dir: str | os.PathLike, job_dir: str | os.PathLike
) -> Any:
    """``SkyRLTrainBackend(model_dir, overrides)`` for ``skyrl.engine=fsdp|megatron``, its working
    paths in ``job_dir``; on fsdp the subclass that also builds SkyRL's reference worker group."""
    if engine in REFERENCE_WORKER_ENGINES:
        from rllm_sweeps.engines.skyrl_reference import SkyRLTrainBackendWithReference as Backend
    else:
        from skyrl.backends.skyrl_train_backend import SkyRLTrainBackend as Backend

    overrides = with_job_paths(tree.overrides(), model_dir, job_dir)
    return Backend(str(model_dir), backend_overrides(engine, overrides))


def make_skyrl_train_backend(
    engine: str, train: dict[str, Any], model_dir: str | os.PathLike, job_dir: str | os.PathLike
) -> Any:
    """skyrl_train_backend of a plain skyrl.train tree (what the engine's `SkyRLTrainTree` is made of)."""
    return skyrl_train_backend(engine, SkyRLTrainTree(**tree_overrides(train)), model_dir, job_dir)


def built_config(backend: Any, lora_rank: int, lora_alpha: float, seed: int = 0) -> Any:
    """The SkyRLTrainConfig that SkyRL's builder makes for ``backend`` when the loop creates
    its policy (create_model calls the same builder with the same arguments); no GPU needed."""
    from skyrl.backends.skyrl_train_backend import _build_skyrl_train_config
    from skyrl.tinker import types

    lora = types.LoraConfig(rank=lora_rank, alpha=lora_alpha, seed=seed)
    return _build_skyrl_train_config(backend.base_model, backend.config, lora)


__all__ = [
    "JOB_OWNED_PATHS",
    "SkyRLTrainEngine",
    "backend_overrides",
    "built_config",
    "job_owned_paths",
    "make_skyrl_train_backend",
    "native_overrides",
    "skyrl_train_backend",
    "tree_overrides",
    "with_job_paths",
]
