"""The KL's reference on ``skyrl.engine=fsdp``: SkyRL's own FSDP reference worker group, beside the policy.

SkyRL 0.4.0's FSDP workers hold one LoRA adapter (``PolicyWorkerBase.register_adapter`` raises: multi-LoRA
is Megatron-only), so there the reference cannot be the untrained second adapter it is on jax and megatron
(docs/CONFIG.md, "The KL reference"). SkyRL's own trainer has the reference fsdp needs:
``RayPPOTrainer.build_models`` builds a ``PPORayActorGroup`` of ``FSDPRefWorkerBase`` workers, a frozen copy
of ``trainer.ref.model.path`` (here always the base model, ``model.path``) sharded by ``trainer.ref.*``, and
with ``colocate_all`` places one worker on each of the policy's GPUs in the shared placement group (0.2 GPU
each) and offloads it to CPU while idle; its ``WorkerDispatch`` knows that group as ``"ref"`` (colocation,
offload around every call, the data-parallel sizes' lcm). Tinker mode's ``SkyRLTrainBackend`` builds no such
group (its builder turns ``use_kl_loss`` off). :class:`SkyRLTrainBackendWithReference` builds it as SkyRL's
trainer does and adds it to the backend's dispatch as SkyRL's backend adds a critic (``_build_critic``:
``register_actor_group``, ``init_model``, offload); the reference is then a model id of role ``"ref"``, whose
log-probabilities SkyRL's own ``SkyRLTrainBackend.forward`` returns through ``WorkerDispatch.forward("ref")``,
as the trainer's forward pass gets its ``base_log_probs``.

Why this route (docs/CONFIG.md): it is SkyRL's own reference code, for fsdp, and it does not depend on LoRA;
a second ``SkyRLTrainBackend`` would start a second Ray runtime, placement group and vLLM fleet for a model
that only runs forwards; PEFT's ``disable_adapter`` on the policy's workers would need a worker method SkyRL
does not have. Its cost: a second copy of the base model's weights (on CPU while idle, colocated) and its
load to the GPU for each reference forward.
"""

from __future__ import annotations

import functools
from typing import Any

from skyrl.backends.skyrl_train.workers.worker import PPORayActorGroup
from skyrl.backends.skyrl_train_backend import SkyRLTrainBackend
from skyrl.tinker import types

REFERENCE_ROLE = "ref"  # WorkerDispatch's name of the reference group (and SkyRL's trainer's)
# SkyRL's trainer's share of a colocated GPU for each worker (RayPPOTrainer.build_models, colocate_all)
COLOCATED_GPU_SHARE = 0.2


class HoldsNoAdapter:
    """``WorkerDispatch.forward(role, batch, model_id=...)`` first asks every worker of ``role`` to make
    ``model_id`` its live adapter (``ensure_active_adapter`` -> ``swap_to_adapter``), which SkyRL's policy
    workers answer and its reference workers do not define. The reference holds no adapter: nothing to
    swap, as ``PolicyWorkerBase.swap_to_adapter`` does on FSDP."""

    def swap_to_adapter(self, model_id: str) -> None:
        return None


@functools.cache
def reference_worker_class() -> Any:
    """SkyRL's FSDP reference worker as the Ray actor class SkyRL makes of it (``fsdp_worker.RefWorker``),
    answering ``swap_to_adapter``. Imported here: SkyRL's FSDP workers need flash-attn and CUDA."""
    import ray
    from skyrl.backends.skyrl_train.workers.fsdp.fsdp_worker import FSDPRefWorkerBase

    class FSDPReferenceWorker(HoldsNoAdapter, FSDPRefWorkerBase):
        pass

    return ray.remote(num_gpus=1)(FSDPReferenceWorker)


class SkyRLTrainBackendWithReference(SkyRLTrainBackend):
    """``SkyRLTrainBackend`` whose ``create_model`` also takes ``model_role="ref"``: SkyRL's FSDP reference
    worker group, a frozen copy of the base model, after the policy (and in its colocated placement group)."""

    def create_model(self, model_id: str, lora_config: types.LoraConfig, model_role: str = "policy") -> None:
        if model_role != REFERENCE_ROLE:
            super().create_model(model_id, lora_config, model_role)
            return
        if model_id in self._model_ids_to_role:
            raise ValueError(f"Model '{model_id}' already exists")
        if self._dispatch is None:
            raise ValueError("Create a policy model before its reference")
        if REFERENCE_ROLE in self._model_ids_to_role.values():
            raise ValueError(f"SkyRLTrainBackend already has a '{REFERENCE_ROLE}' model")
        self._build_reference()
        self._model_ids_to_role[model_id] = REFERENCE_ROLE
        self._model_metadata[model_id] = types.ModelMetadata(adapter_index=0, lora_config=lora_config)

    def _build_reference(self) -> None:
        """As ``_build_critic`` adds the critic: the group, registered on the dispatch, initialised from
        ``trainer.ref.model.path``, offloaded while idle when colocated (the trainer's order: init, offload)."""
        cfg = self._cfg
        self._sleep_inference_engines()  # the colocated vLLM engines give the GPUs back first
        group = self._reference_actor_group()
        self._dispatch.register_actor_group(REFERENCE_ROLE, group)
        self._dispatch.init_model(REFERENCE_ROLE, cfg.trainer.ref.model.path)
        if cfg.trainer.placement.colocate_all:
            group.offload_to_cpu()
            self._dispatch.mark_as_offloaded(REFERENCE_ROLE)

    def _reference_actor_group(self) -> PPORayActorGroup:
        """The reference's workers as ``RayPPOTrainer.build_models`` places them with ``colocate_all`` (the only
        placement validation lets through with a reference on fsdp: config/gpu_trainer_rules.py)."""
        cfg = self._cfg
        placement = cfg.trainer.placement
        colocate_all = placement.colocate_all
        return PPORayActorGroup(
            cfg.trainer,
            placement.ref_num_nodes,
            placement.ref_num_gpus_per_node,
            reference_worker_class(),
            pg=self._colocate_pg,
            num_gpus_per_actor=COLOCATED_GPU_SHARE if colocate_all else 1,
            colocate_all=colocate_all,
            sequence_parallel_size=cfg.trainer.ref.sequence_parallel_size,
        )


__all__ = ["HoldsNoAdapter", "SkyRLTrainBackendWithReference", "reference_worker_class"]
