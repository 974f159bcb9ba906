"""Whether a set SkyRL-native (or rLLM) setting changes what runs: the one rule (docs/CONFIG.md).

A setting is **refused** only when what runs here would differ from what SkyRL (or rLLM) does with it
in that configuration; it is **unused** (accepted, with one note saying why) when SkyRL itself would
ignore it there; otherwise it is **read**. Read in SkyRL 0.4.0 (skyrl/train/config/config.py: each
field's "only used when"; skyrl/train/trainer.py: the critic exists only for ``gae``, the reference
model only with a KL term; skyrl/backends/skyrl_train_backend.py and its workers: what Tinker mode
reads). A sweep over a setting that is unused in every job still fails (sweep/idle_dimensions.py):
it would run identical jobs.

Common keys are judged by rules.py; their native twins (keymap.py) through them.
"""

from __future__ import annotations

import functools
from typing import Any

from rllm_sweeps.config.effect_kinds import READ, Effect, Kind, Rule, Situation, refused, unused
from rllm_sweeps.config.engine_names import GPU_TRAINER, REFERENCE_WORKER_ENGINES
from rllm_sweeps.config.gpu_trainer_rules import COLOCATE_ALL
from rllm_sweeps.config.rllm_setting_effect import rllm_effect
from rllm_sweeps.native_keys import SKYRL_JAX_PREFIX, SKYRL_TRAIN_PREFIX


@functools.cache
def loop_native_keys() -> frozenset[str]:
    """Native keys (full paths) the loop reads directly, besides the mapped ones."""
    from rllm_sweeps.training.settings import CONFIG_KEYS

    return frozenset(k for k in CONFIG_KEYS.values() if k.startswith(SKYRL_TRAIN_PREFIX))


# Flat trainer settings read by name, where a name that SkyRL's backend code never mentions
# cannot be read there (nested configs handed on whole, e.g. megatron_config, are not judged).
_FLAT_TRAINER_PARENTS = ("trainer", "trainer.algorithm", "trainer.algorithm.dynamic_sampling", "trainer.fully_async")


@functools.cache
def ppo_loop_only() -> frozenset[str]:
    """trainer.* leaves (relative to skyrl.train) that SkyRL's Tinker-mode backend never reads:
    derived from the installed SkyRL, whose skyrl/backends/ code never names them."""
    import importlib.util
    import re
    from pathlib import Path

    spec = importlib.util.find_spec("skyrl")
    if spec is None or spec.origin is None:
        return frozenset()
    names: set[str] = set()
    for path in (Path(spec.origin).parent / "backends").rglob("*.py"):
        names.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text(errors="replace")))
    from rllm_sweeps.config.native import skyrl_train_defaults
    from rllm_sweeps.plain_tree import leaves

    return frozenset(
        p
        for p, _ in leaves(skyrl_train_defaults())
        if p.rpartition(".")[0] in _FLAT_TRAINER_PARENTS and p.rpartition(".")[2] not in names
    )


# ---- the conditions, one function each (tests/test_setting_effect.py has a test per condition) ----

NO_CRITIC = "the estimator ({}) trains no critic: SkyRL builds one only for gae (RayPPOTrainer.has_critic)"


def critic_setting(s: Situation, _value: Any) -> Effect:
    return unused(NO_CRITIC.format(s.estimator))


def reference_setting(s: Situation, _value: Any) -> Effect:
    if not (s.kl_loss or s.kl_in_reward):
        return unused(
            "no KL term uses a reference model (algorithm.use_kl_loss and trainer.algorithm.use_kl_in_reward "
            "are off): SkyRL builds none then (RefConfig)"
        )
    if s.engine in REFERENCE_WORKER_ENGINES:
        return READ  # SkyRL's own reference worker group reads them (engines/skyrl_reference.py)
    return unused(
        "placement and sharding of SkyRL's reference worker: the KL's reference here is the base model, "
        "an untrained second LoRA adapter beside the policy's, in the policy's own workers"
    )


def colocate_policy_ref(s: Situation, value: Any) -> Effect:
    """SkyRL reads it only without colocate_all (RayPPOTrainer.build_models, WorkerDispatch); fsdp's reference
    worker with colocate_all=false is refused (gpu_trainer_rules.py)."""
    if s.engine in REFERENCE_WORKER_ENGINES and (s.kl_loss or s.kl_in_reward) and s.get(COLOCATE_ALL) is not False:
        return unused(
            "SkyRL reads it only with trainer.placement.colocate_all=false: colocate_all=true puts the policy, "
            "its reference and vLLM on the same GPUs (RayPPOTrainer.build_models, WorkerDispatch)"
        )
    return reference_setting(s, value)


def update_ref_every_epoch(s: Situation, value: Any) -> Effect:
    if value and (s.kl_loss or s.kl_in_reward):
        return refused(
            "SkyRL's trainer reloads its reference from the policy after every epoch; the loop's reference stays "
            "the base model: leave it out (false)"
        )
    return reference_setting(s, value)


def reference_model_path(s: Situation, value: Any) -> Effect:
    """SkyRL's reference may be another model; the loop's is the policy's base model (an untrained adapter)."""
    if value == s.get("model.path") or not (s.kl_loss or s.kl_in_reward):
        return READ if value == s.get("model.path") else reference_setting(s, value)
    return refused("the KL's reference here is the policy's base model, not another one: leave it out (model.path)")


def algorithm_temperature(s: Situation, value: Any) -> Effect:
    """SkyRL's trainer log-probabilities' temperature; the loop trains on the sampler's (its temperature)."""
    if value is None or value == s.get("rollout.train.temperature"):
        return READ
    return refused("the loop trains on the sampler's log-probabilities, at rollout.train.temperature: leave it out")


def kl_estimator(s: Situation, _value: Any) -> Effect:
    if s.kl_in_reward or s.kl_loss:
        return READ
    return unused("no KL term is on (algorithm.use_kl_loss, trainer.algorithm.use_kl_in_reward)")


def kl_ctrl(s: Situation, _value: Any) -> Effect:
    if s.kl_in_reward:
        return READ
    return unused("SkyRL's kl_ctrl sets the coefficient of use_kl_in_reward only, which is off (KLCtrlConfig)")


def entropy_loss(s: Situation, value: Any) -> Effect:
    if value and s.engine not in GPU_TRAINER:
        return refused(
            "SkyRL's JAX backend returns only the sampled tokens' log-probabilities: no distribution to take "
            "an entropy of; SkyRL's trainer (skyrl.engine=fsdp or megatron) adds it in its workers"
        )
    return READ


def entropy_coef(s: Situation, _value: Any) -> Effect:
    if s.algorithm("use_entropy_loss") and s.engine in GPU_TRAINER:
        return READ
    return unused("only used with trainer.algorithm.use_entropy_loss=true, which is off")


# A policy loss's own parameters: read only when that loss is the selected one (AlgorithmConfig's
# "Only used when policy_loss_type=..."). fsdp/megatron: SkyRL's workers read them; jax: the loop's
# custom-loss route calls SkyRL's PolicyLossRegistry with the same tree.
LOSS_PARAMETERS = {
    "sapo.": "sapo",
    "clip_cov.": "clip_cov",
    "kl_cov.": "kl_cov",
    "cispo.": "cispo",
    "dppo.": "dppo",
    "clip_ratio_c": "dual_clip",
}


def loss_parameter(loss: str) -> Rule:
    def rule(s: Situation, _value: Any) -> Effect:
        if s.loss == loss:
            return READ
        return unused(f"a parameter of the {loss} policy loss; the selected one is algorithm.loss_fn={s.loss}")

    return rule


# Off-policy corrections compare the old log-probs with the sampler's; the loop's old log-probs ARE
# the sampler's (training/datums.py: Datum.logprobs), so every ratio is exactly 1 (SkyRL's own
# _to_training_batch says so for Tinker datums): TIS clips nothing, and a mask drops nothing as long
# as 1 lies within its bounds.
_RATIO_BOUNDS = (
    ("geo_mask_low", "geo_mask_high", "sequence_mask_metric", "geometric"),
    ("product_mask_low", "product_mask_high", "sequence_mask_metric", "product"),
    ("outlier_token_is_threshold_low", "outlier_token_is_threshold_high", None, None),
    ("token_mask_is_threshold_low", "token_mask_is_threshold_high", None, None),
)
RATIO_ONE = (
    "the loop's old log-probabilities are the sampler's (training/datums.py), so the importance ratio it "
    "corrects is exactly 1 and the correction changes nothing"
)


def off_policy_correction(s: Situation, _value: Any) -> Effect:
    opc = s.algorithm("off_policy_correction") or {}
    for low, high, switch, mode in _RATIO_BOUNDS:
        if switch is not None and opc.get(switch) != mode:
            continue
        lo, hi = opc.get(low), opc.get(high)
        if (lo is not None and lo > 1) or (hi is not None and hi < 1):
            return refused(
                f"with an importance ratio of exactly 1 (the loop's old log-probabilities are the sampler's), "
                f"bounds [{lo}, {hi}] ({low}, {high}) mask every sequence"
            )
    return unused(RATIO_ONE)


def sample_support_replay(_s: Situation, value: Any) -> Effect:
    if value:
        return refused("the loop's datums carry no sampler support set (Tinker mode's batches have none)")
    return READ


def dynamic_sampling_part(needs: tuple[str, ...]) -> Rule:
    def rule(s: Situation, _value: Any) -> Effect:
        kind = s.algorithm("dynamic_sampling.type")
        if kind in needs:
            return READ
        return unused(f"only used with trainer.algorithm.dynamic_sampling.type in {needs} (it is {kind})")

    return rule


def zero_variance_tol(s: Situation, _value: Any) -> Effect:
    if s.algorithm("zero_variance_filter"):
        return READ
    return unused("only used with trainer.algorithm.zero_variance_filter=true, which is off")


def overlong_penalty_factor(s: Situation, _value: Any) -> Effect:
    if s.algorithm("overlong_buffer_len") is not None:
        return READ
    return unused("only used with trainer.algorithm.overlong_buffer_len set (DAPO's overlong buffer)")


def seq_len_constant(s: Situation, _value: Any) -> Effect:
    if s.get("algorithm.loss_agg_mode") in ("seq-mean-token-sum-norm", "seq_mean_token_sum_norm"):
        return READ
    return unused("the constant of the seq-mean-token-sum-norm loss reduction, which is not the selected one")


def fully_async(s: Situation, value: Any) -> Effect:
    if value:
        return refused("the loop trains synchronously: each batch is sampled by the policy it then updates")
    return READ


def fully_async_part(s: Situation, _value: Any) -> Effect:
    if s.get(SKYRL_TRAIN_PREFIX + "trainer.fully_async.enabled"):
        return READ  # refused through fully_async.enabled
    return unused("only used with trainer.fully_async.enabled=true, which is off")


def worker_setting(s: Situation, _value: Any) -> Effect:
    if s.engine in GPU_TRAINER:
        return READ
    return unused(
        "a setting of SkyRL's GPU trainer (its FSDP/Megatron workers and vLLM servers), which skyrl.engine=jax "
        "does not start"
    )


def jax_setting(s: Situation, _value: Any) -> Effect:
    if s.engine == "jax":
        return READ
    return unused(f"configures SkyRL's JAX backend, which skyrl.engine={s.engine} does not start")


def sampler_logprobs(_s: Situation, value: Any) -> Effect:
    # SkyRL's SamplingParams.logprobs: None, 0 or 1 (both return the chosen token's), larger values rejected.
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value in (0, 1)):
        return unused(
            "the loop always takes the sampler's log-probability of each chosen token (what 0 and 1 return) as "
            "the old policy's; without them (null) SkyRL's trainer computes the same values with a forward pass "
            "of the weights that sampled"
        )
    return refused("SkyRL takes null, 0 or 1 (the chosen token's log-probability); larger values are rejected")


def constant(effect: Effect) -> Rule:
    return lambda _s, _v: effect


OUTPUT_ONLY = unused("output only (logging, dumps or exports of SkyRL's own PPO loop): what trains is the same")
NOT_IMPLEMENTED = (
    "only SkyRL's own PPO loop reads it; its trainer in Tinker mode, which fsdp/megatron run under this "
    "project's loop, does not, and the loop does not implement it"
)
REPLACED = (
    "it belongs to SkyRL's own generator and PPO loop, which this project's loop replaces: the data and reward "
    "come from task.* or data.train_files, sampling from rollout.*; environment.* is read with data.train_files"
)

# Exact settings (relative to skyrl.train), then prefixes; the first match decides.
EXACT: dict[str, Rule] = {
    "trainer.ref.model.path": reference_model_path,
    "trainer.algorithm.temperature": algorithm_temperature,
    "trainer.algorithm.kl_estimator_type": kl_estimator,
    "trainer.algorithm.use_entropy_loss": entropy_loss,
    "trainer.algorithm.entropy_loss_coef": entropy_coef,
    "trainer.algorithm.enable_sample_support_replay": sample_support_replay,
    "trainer.algorithm.use_tis": off_policy_correction,
    "trainer.algorithm.tis_imp_ratio_cap": off_policy_correction,
    "trainer.algorithm.value_clip": critic_setting,
    "trainer.algorithm.value_head_prefix": critic_setting,
    "trainer.algorithm.lambd": critic_setting,  # GAE's, as gamma below (SkyRL reads them for gae only)
    "trainer.algorithm.gamma": critic_setting,
    "trainer.algorithm.zero_variance_filter_tol": zero_variance_tol,
    "trainer.algorithm.dynamic_sampling.max_sample_batches": dynamic_sampling_part(("filter", "replace")),
    "trainer.algorithm.dynamic_sampling.min_replace_ratio": dynamic_sampling_part(("replace",)),
    "trainer.algorithm.overlong_buffer_penalty_factor": overlong_penalty_factor,
    "trainer.algorithm.max_seq_len": seq_len_constant,
    "trainer.critic_mini_batch_size": critic_setting,
    "trainer.placement.colocate_policy_ref": colocate_policy_ref,
    "trainer.update_ref_every_epoch": update_ref_every_epoch,
    "trainer.fully_async.enabled": fully_async,
    "trainer.recompute_old_logprobs_per_minibatch": constant(unused(RATIO_ONE.replace("corrects", "recomputes"))),
    "generator.sampling_params.logprobs": sampler_logprobs,
    "generator.eval_sampling_params.logprobs": sampler_logprobs,
    "generator.batched": constant(unused("the workflows batch their sampling anyway (a step's requests at once)")),
    "generator.use_cache_salt": constant(unused("vLLM prefix-cache salting: a no-op for synchronous training")),
    "trainer.dump_data_batch": constant(OUTPUT_ONLY),
    "trainer.dump_eval_results": constant(OUTPUT_ONLY),
    "trainer.enable_ray_gpu_monitor": constant(OUTPUT_ONLY),
    "trainer.print_example_interval": constant(OUTPUT_ONLY),
    "trainer.log_example_interval": constant(OUTPUT_ONLY),
    "trainer.num_logger_eval_samples": constant(OUTPUT_ONLY),
    "trainer.num_logger_train_samples": constant(OUTPUT_ONLY),
    "trainer.tags": constant(OUTPUT_ONLY),
    "trainer.hf_save_interval": constant(
        unused("SkyRL's PPO loop's Hugging Face exports; the job keeps its checkpoints in JOB_DIR/checkpoints")
    ),
}
PREFIXES: dict[str, Rule] = {
    "trainer.critic.": critic_setting,
    "trainer.placement.critic_": critic_setting,
    "trainer.ref.": reference_setting,
    "trainer.placement.ref_": reference_setting,
    "trainer.algorithm.off_policy_correction.": off_policy_correction,
    "trainer.algorithm.kl_ctrl.": kl_ctrl,
    "trainer.fully_async.": fully_async_part,
    "data.dataloader.": constant(unused("SkyRL's prompt data loader: the loop loads the data itself")),
    "generator.chat_template_kwargs": constant(READ),  # any key: the loop renders chat templates with them
    **{"trainer.algorithm." + p: loss_parameter(loss) for p, loss in LOSS_PARAMETERS.items()},
}


def job_owned(rel: str) -> Effect | None:
    from rllm_sweeps.records.layout import JOB_OWNED_PATHS

    if rel not in JOB_OWNED_PATHS:
        return None
    return unused(
        f"the job keeps SkyRL's own files in JOB_DIR/skyrl/{JOB_OWNED_PATHS[rel]} (on SkyRL's shared defaults "
        "two jobs of a node would overwrite each other's)"
    )


def native_effect(rel: str, value: Any, s: Situation) -> Effect:
    """The effect of skyrl.train.`rel` (not a key-map twin: those are judged by their common key)."""
    if (owned := job_owned(rel)) is not None:
        return owned
    if rel in EXACT:
        return EXACT[rel](s, value)
    for prefix, rule in PREFIXES.items():
        if rel.startswith(prefix):
            return rule(s, value)
    if SKYRL_TRAIN_PREFIX + rel in loop_native_keys():
        return READ  # the loop implements it on every engine (training/settings.py CONFIG_KEYS)
    if rel.startswith("environment."):
        return READ if s.get("data.train_files") is not None else refused(REPLACED)
    if rel.startswith(("trainer.", "generator.inference_engine.")):
        return refused(NOT_IMPLEMENTED) if rel in ppo_loop_only() else worker_setting(s, value)
    return refused(REPLACED)


def setting_effect(key: str, value: Any, plain: dict[str, Any]) -> Effect:
    """Whether setting `key` (a full path: skyrl.train.*, skyrl.jax.* or rLLM's rllm.*) to `value` changes
    what runs in the configuration `plain` (resolved): read, unused (with why) or refused (with why)."""
    from rllm_sweeps.keymap import BY_NATIVE

    s = Situation(plain)
    if key in BY_NATIVE:
        return READ  # a common key's twin: judged by the common key's rules (rules.py)
    if key.startswith(SKYRL_JAX_PREFIX):
        return jax_setting(s, value)
    if key.startswith("rllm."):
        return rllm_effect(key, value, s)
    if key.startswith(SKYRL_TRAIN_PREFIX):
        return native_effect(key.removeprefix(SKYRL_TRAIN_PREFIX), value, s)
    return READ


__all__ = ["READ", "Effect", "Kind", "Situation", "refused", "setting_effect", "unused"]
