"""The loop's calls into SkyRL's ``AbstractBackend``: the policy's adapters, their updates, their files.

Sampling is the rollout client's (workflows/client.py); :meth:`Policy.rollout_client` hands it
the sampler weights of the moment. Everything else the loop asks of the backend goes through
:class:`Policy`: create the adapters, forwards (the KL reference's, a custom loss's), ``forward_backward``,
``optim_step``, publish the weights to the sampler, training checkpoints.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rllm_sweeps.training.datums import Datum
from rllm_sweeps.training.settings import LoopSettings
from rllm_sweeps.workflows.client import RolloutClient, Sampling, SeedPlan


class Policy:
    """The policy ``model_id`` (and, with a KL penalty, its reference ``<model_id>-ref``) in ``backend``.

    Args:
        backend: any ``skyrl.backends.backend.AbstractBackend``, built on the model.
        model_id: the policy's id in the backend.
        work_dir: where the sampler's weight files go.
        reference_worker: the reference is the backend's reference worker group (EngineTraits), not an
            untrained adapter.
    """

    def __init__(
        self, backend: Any, model_id: str, work_dir: str | os.PathLike, reference_worker: bool = False
    ) -> None:
        self.backend = backend
        self.model_id = model_id
        self.ref_model_id = f"{model_id}-ref"
        self.reference_worker = reference_worker
        self.work_dir = Path(work_dir)
        self._sampler_ckpt: tuple[str, Path] | None = None
        self._sync_count = 0

    def create(self, settings: LoopSettings) -> None:
        """The policy's LoRA adapter + optimizer (and the reference's, with a KL penalty), where absent."""
        from skyrl.tinker import types

        s = settings
        lora = types.LoraConfig(rank=s.lora_rank, alpha=s.lora_alpha, seed=s.seed)
        if not self.backend.has_model(self.model_id):
            self.backend.create_model(self.model_id, lora)
        if s.needs_reference and not self.backend.has_model(self.ref_model_id):
            if self.reference_worker:  # a frozen copy of the base model (engines/skyrl_reference.py)
                self.backend.create_model(self.ref_model_id, lora, model_role="ref")
            else:  # never trained: its LoRA B is zero, so it computes the base model
                self.backend.create_model(self.ref_model_id, lora)

    def rollout_client(self, stop_token_ids: Sequence[int], sampling: Sampling, seeds: SeedPlan) -> RolloutClient:
        """A client sampling from the weights last published (:meth:`sync_sampler`)."""
        assert self._sampler_ckpt is not None, "sync_sampler() first"
        return RolloutClient(self.backend, self.model_id, self._sampler_ckpt, stop_token_ids, sampling, seeds)

    def reference_logprobs(self, datums: Sequence[Datum]) -> list[Sequence[float]]:
        """The base model's log-prob of each datum's targets (a forward pass of the reference)."""
        return self._logprobs(datums, self.ref_model_id)

    def current_logprobs(self, datums: Sequence[Datum]) -> list[Sequence[float]]:
        """The policy's log-prob of each datum's targets now (a custom loss's first pass)."""
        return self._logprobs(datums, self.model_id)

    def _logprobs(self, datums: Sequence[Datum], model_id: str) -> list[Sequence[float]]:
        out = self._model_pass(datums, model_id, "cross_entropy", None, forward_only=True)
        return [o["logprobs"]["data"] for o in out.loss_fn_outputs]

    def forward_backward(self, datums: Sequence[Datum], loss_fn: str, loss_config: dict | None) -> Any:
        """Gradients of ``loss_fn`` on ``datums`` (SkyRL's ``ForwardBackwardOutput``)."""
        return self._model_pass(datums, self.model_id, loss_fn, loss_config, forward_only=False)

    def optim_step(self, lr: float, settings: LoopSettings) -> float | None:
        """One Adam step at ``lr``; the gradient norm, where the backend reports it."""
        from skyrl.tinker import types

        s = settings
        adam = types.AdamParams(
            learning_rate=lr, beta1=s.adam_betas[0], beta2=s.adam_betas[1], eps=s.adam_eps, weight_decay=s.weight_decay
        )
        out = self.backend.optim_step(self.model_id, types.OptimStepInput(adam_params=adam))
        g = (out.metrics or {}).get("skyrl.ai/grad_norm")
        return None if g is None else float(g)

    def sync_sampler(self, step: int) -> None:
        """``save_sampler_checkpoint`` under a fresh id; the next client samples with those weights.

        The id is new on every call (JaxBackend reloads an adapter only when the id
        changes); the superseded file is deleted (JaxBackend always writes one,
        ``persist=False`` notwithstanding).
        """
        self._sync_count += 1
        ckpt_id = f"step{step:06d}-{self._sync_count}"
        path = self.work_dir / "sampler_weights" / f"{self.model_id}-{ckpt_id}.tar.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.backend.save_sampler_checkpoint(path, self.model_id, persist=False)
        old = self._sampler_ckpt
        self._sampler_ckpt = (ckpt_id, path)
        if old is not None:
            for p in (old[1], old[1].with_name(old[1].name + ".probe")):
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)

    def save_sampler_weights(self, path: Path) -> None:
        """SkyRL's sampler checkpoint of the policy, written to ``path`` (an archive of a PEFT adapter;
        training/policy_export.py unpacks it). ``persist``: the GPU trainer writes files only then."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.backend.save_sampler_checkpoint(path, self.model_id, persist=True)

    def save(self, path: Path) -> None:
        """The backend's training checkpoint of the policy (LoRA weights + optimizer state)."""
        self.backend.save_checkpoint(path, self.model_id)

    def load(self, path: Path, load_optimizer: bool = True) -> None:
        self.backend.load_checkpoint(path, self.model_id, load_optimizer=load_optimizer)

    def _model_pass(
        self, datums: Sequence[Datum], model_id: str, loss_fn: str, config: dict | None, forward_only: bool
    ) -> Any:
        from skyrl.tinker import types

        n = len(datums)
        batch = types.PreparedModelPassBatch(
            all_model_inputs=[types.ModelInput(chunks=[types.EncodedTextChunk(tokens=d.inputs)]) for d in datums],
            all_targets=[d.targets for d in datums],
            all_token_weights=[d.weights for d in datums],
            all_sampling_logprobs=[d.logprobs for d in datums],
            all_advantages=[d.advantages for d in datums],
            all_values=[[] for _ in datums],
            all_returns=[[] for _ in datums],
            all_model_ids=[model_id] * n,
            all_loss_fns=[loss_fn] * n,
            all_loss_fn_configs=[config] * n,
            request_batch_slices=[("batch", model_id, 0, n)],
        )
        results = self.backend.forward(batch) if forward_only else self.backend.forward_backward(batch)
        out = results["batch"]
        if isinstance(out, types.ErrorResponse):
            raise RuntimeError(f"backend.{'forward' if forward_only else 'forward_backward'} failed: {out.error}")
        return out


__all__ = ["Policy"]
