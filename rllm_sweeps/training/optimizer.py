"""The AdamW each JAX process of SkyRL's JAX backends trains a policy with: SkyRL's own
(``optax.inject_hyperparams(optax.adamw)``, whose hyperparameters ``optim_step`` sets at every
step), with two changes made here, in one place.

1. **Hyperparameters and state in float32.** SkyRL 0.4.0's ``JaxBackendImpl.create_model``
   builds ``optax.inject_hyperparams(optax.adamw)(learning_rate=0.0)``; optax then holds the
   hyperparameters in the parameters' highest dtype, which for a bf16 checkpoint (every published
   one: SkyRL computes in the dtype its ``config.json`` names, LoRA weights included) is bfloat16.
   bfloat16 has 8 significant bits: ``b2 = 0.999`` becomes exactly 1.0, so Adam's bias correction
   ``1 - b2**t`` is 0, the second-moment estimate ``nu / 0`` is inf or (where the gradient is 0, as
   for every LoRA A while B is still zero) 0/0 = NaN, and the first ``optim_step`` writes NaN into
   the adapter. Every later loss, gradient and sample is NaN (docs/JOBS.md, "bf16 checkpoints":
   the upstream report). float32 hyperparameters keep ``b2 < 1``; the optimizer computes in
   float32 too (its moments, the clip, the weight decay: :func:`in_float32`), as mixed-precision
   trainers keep optimizer state; the update is cast to the parameter's dtype when applied.
   ``tests/test_bf16_training.py`` fails without this.
2. **The gradient clipped to ``trainer.max_grad_norm``** (global norm, before AdamW), as SkyRL's
   trainer does (``clip_grad_norm_``, then AdamW); None or <= 0: unclipped. ``grad_norm`` stays the
   norm before clipping, as SkyRL reports it.

``install_adamw`` swaps the optimizer SkyRL's ``create_model`` made for this one: in the job's
process's ``JaxBackend`` (``policy_jax_backend``), and in each of RayJaxBackend's worker processes
(``policy_ray_jax_backend``, through Ray's ``__ray_call__``, which runs a function on an actor's
instance), so both engines train bf16 checkpoints and clip alike.
"""

from __future__ import annotations

from typing import Any


def in_float32(inner: Any) -> Any:
    """``inner`` (an optax transformation) computing in float32 whatever the parameters' dtype: its
    state is made from float32 copies of the parameters, it receives float32 gradients and
    parameters, and its float32 updates are cast to each parameter's dtype when applied
    (``optax.apply_updates``), as mixed-precision trainers keep optimizer state."""
    import jax
    import jax.numpy as jnp
    import optax

    def as_float32(tree: Any) -> Any:
        return None if tree is None else jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), tree)

    def init(params: Any) -> Any:
        return inner.init(as_float32(params))

    def update(updates: Any, state: Any, params: Any = None) -> Any:
        return inner.update(as_float32(updates), state, as_float32(params))

    return optax.GradientTransformation(init, update)


def clipped_adamw(learning_rate, b1=0.9, b2=0.999, eps=1e-8, weight_decay=1e-4, max_norm=0.0):
    """optax's AdamW after optax's global-norm clip (SkyRL's trainer: clip_grad_norm_, then AdamW;
    ``max_norm`` <= 0: no clip), in float32 (:func:`in_float32`)."""
    import jax.numpy as jnp
    import optax

    adamw = optax.adamw(learning_rate, b1, b2, eps, weight_decay=weight_decay)
    # max_norm is a traced hyperparameter: its "no clip" is the identity, not a Python branch.
    clip = optax.clip_by_global_norm(jnp.where(max_norm > 0, max_norm, jnp.inf))
    return in_float32(optax.chain(clip, adamw))


def policy_adamw(max_grad_norm: float | None) -> Any:
    """SkyRL's injectable AdamW (optim_step sets learning_rate, b1, b2, eps, weight_decay) computing in
    float32, its hyperparameters in float32 (SkyRL's take the parameters' dtype), clipped to
    ``max_grad_norm`` when that is > 0."""
    import jax.numpy as jnp
    import optax

    return optax.inject_hyperparams(clipped_adamw, hyperparam_dtype=jnp.float32)(
        learning_rate=0.0, max_norm=max_grad_norm or 0.0
    )


def install_adamw(impl: Any, model_id: str, max_grad_norm: float | None) -> None:
    """Replace the optimizer of ``model_id`` in SkyRL's ``JaxBackendImpl`` ``impl`` (made by its
    ``create_model``, not stepped yet) by :func:`policy_adamw`, over the same LoRA parameters."""
    import jax
    from flax import nnx

    with jax.set_mesh(impl.mesh):
        impl.optimizers[model_id] = nnx.Optimizer(impl.model, policy_adamw(max_grad_norm), wrt=impl.model.is_lora_param)


def policy_jax_backend(max_grad_norm: float | None) -> type:
    """SkyRL's ``JaxBackend`` whose policies train with :func:`policy_adamw`."""
    from skyrl.backends.jax import JaxBackend

    class PolicyJaxBackend(JaxBackend):
        def create_model(self, model_id, lora_config, model_role: str = "policy") -> None:
            super().create_model(model_id, lora_config, model_role)
            install_adamw(self, model_id, max_grad_norm)

    return PolicyJaxBackend


def _install_in_ray_worker(worker: Any, model_id: str, max_grad_norm: float | None) -> None:
    """:func:`install_adamw` inside one of RayJaxBackend's actors (``RayJaxBackendImpl``, whose
    ``backend`` is that process's SkyRL ``JaxBackendImpl``); called through ``__ray_call__``."""
    install_adamw(worker.backend, model_id, max_grad_norm)


def policy_ray_jax_backend(max_grad_norm: float | None) -> type:
    """SkyRL's ``RayJaxBackend`` whose policies train with :func:`policy_adamw` in every JAX process
    (each holds its shard of the model and its own optimizer; all swap alike, as SPMD needs)."""
    import ray
    from skyrl.backends.ray_jax import RayJaxBackend

    class PolicyRayJaxBackend(RayJaxBackend):
        def create_model(self, model_id, lora_config, model_role: str = "policy") -> None:
            super().create_model(model_id, lora_config, model_role)
            ray.get([w.__ray_call__.remote(_install_in_ray_worker, model_id, max_grad_norm) for w in self.workers])

    return PolicyRayJaxBackend


__all__ = [
    "clipped_adamw",
    "in_float32",
    "install_adamw",
    "policy_adamw",
    "policy_jax_backend",
    "policy_ray_jax_backend",
]
