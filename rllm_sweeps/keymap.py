"""The one table that maps rLLM-common keys onto SkyRL-native keys.

Everything that needs to know which native key means the same as a common key reads
this table: the interpolations planted in the composed config (config/native.py),
the `rllm-sweeps keys` listing, conflict detection and reconciliation (config/reconcile.py),
and validation. There is no second copy of the mapping anywhere.

Identity mappings become plain interpolations (``${trainer.lr}``) so `--cfg job`
stays readable; mappings whose meaning needs a transform go through the
``rllm_native`` resolver, which looks the entry up here by its native key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.native_keys import SKYRL_JAX_PREFIX, SKYRL_TRAIN_PREFIX

RESOLVER = "rllm_native"


@dataclass(frozen=True)
class KeyMapping:
    """One common key and one native key that carry the same setting."""

    common: str
    native: str  # full path in the composed config, e.g. skyrl.train.trainer.epochs
    meaning: str
    to_native: Callable[[Any], Any] | None = None  # None = identity
    to_common: Callable[[Any], Any] | None = None  # inverse; None with to_native set = not invertible
    null_means: str | None = None  # a null common value stands for this common key's value (native has no null)

    @property
    def is_identity(self) -> bool:
        return self.to_native is None and self.null_means is None

    def native_value(self, common_value: Any) -> Any:
        return common_value if self.to_native is None else self.to_native(common_value)

    def common_value(self, native_value: Any) -> Any:
        if self.to_native is None:
            return native_value
        if self.to_common is None:
            raise ValueError(f"{self.native} cannot be translated back; set {self.common} instead")
        return self.to_common(native_value)

    def interpolation(self) -> str:
        if self.is_identity:
            return "${" + self.common + "}"
        return "${" + RESOLVER + ":'" + self.native + "'}"


# Advantage estimators: the loop computes them (advantages.py), each with its own
# meaning. Names that mean the same in rLLM and SkyRL's registry are spelled the same; rLLM's
# `reinforce` (no baseline) and `reinforce_plus_plus_baseline` (group mean, then batch scaling)
# have no SkyRL twin and SkyRL's `reinforce++` (batch whitening only) and `maxrl` no rLLM one:
# each keeps its name on both sides (SkyRL's workers never read the native key: config/engine_settings.py).
# The names: advantages.py ESTIMATORS.

# The loop's loss names (Tinker's) -> SkyRL's policy_loss_type: Tinker's "ppo" is SkyRL's
# clipped "regular" loss; every other name is the same in both (cispo, importance_sampling, gspo, ...).
_LOSSES = {"ppo": "regular"}
_LOSSES_BACK = {v: k for k, v in _LOSSES.items()}

# skyrl.engine -> SkyRL's trainer.strategy: the GPU trainer's engines are named by their strategy.
# The JAX engine never reads the strategy: it keeps SkyRL's default there, so the native tree stays
# one that SkyRL accepts.
_STRATEGIES = {"jax": "fsdp"}


def _named(name: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Give a transform the name `rllm-sweeps keys` shows for it."""

    def rename(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        fn.__name__ = name
        return fn

    return rename


@_named("SkyRL's strategy names")
def _strategy_to_engine(strategy: Any) -> Any:
    # SkyRL renamed fsdp2 to fsdp (validate_cfg says so); other unknown strategies come back
    # unchanged and validation names the engines there are.
    return "fsdp" if strategy == "fsdp2" else strategy


@_named("jax keeps SkyRL's default strategy")
def _engine_to_strategy(engine: Any) -> Any:
    return _STRATEGIES.get(engine, engine)


# rLLM's loss aggregation names (verl's spelling) -> SkyRL's loss_reduction names. The loop
# implements every mode (training/datums.py loss_agg_scales); a mode only one side has keeps its
# name on both: rLLM's seq-mean-token-sum, SkyRL's token_mean_legacy and prompt_mean.
_LOSS_AGG = {
    "token-mean": "token_mean",
    "seq-mean-token-mean": "sequence_mean",
    "seq-mean-token-sum-norm": "seq_mean_token_sum_norm",
}
_LOSS_AGG_BACK = {v: k for k, v in _LOSS_AGG.items()}
LOSS_AGG_MODES = (*_LOSS_AGG, "seq-mean-token-sum", "token_mean_legacy", "prompt_mean")

# rLLM's lr schedules (after the warmup) -> SkyRL's (transformers) scheduler names; the loop
# computes the lr of every step (training/settings.py lr_at).
_SCHEDULES = {"constant": "constant_with_warmup", "cosine": "cosine_with_warmup", "linear": "linear"}
_SCHEDULES_BACK = {v: k for k, v in _SCHEDULES.items()} | {"constant": "constant", "cosine": "cosine"}
LR_SCHEDULES = tuple(_SCHEDULES)


# trainer.resume_mode: ours (auto | disable) -> SkyRL's (latest | none | from_path; null = none).
_RESUME = {"auto": "latest", "disable": "none"}
_RESUME_BACK = {"latest": "auto", "none": "disable", None: "disable"}


@_named("first tracker other than console")
def _loggers_to_native(loggers: Any) -> str:
    """rLLM takes a list of trackers; SkyRL one. The first non-console one wins."""
    items = [loggers] if isinstance(loggers, str) else list(loggers or [])
    others = [x for x in items if x != "console"]
    return others[0] if others else "console"


def _logger_to_common(logger: Any) -> list[Any]:
    # SkyRL's logger is one name; a native override may still spell it as a list.
    return list(logger) if isinstance(logger, list | tuple) else [logger]


@_named("0 GPUs -> 1")
def _gpus_to_native(gpus: Any) -> Any:
    return max(1, gpus) if isinstance(gpus, int) else gpus


def _gpus_to_common(gpus: Any) -> Any:
    return gpus


@_named("null: []; a path: a list of one")
def _files_to_native(files: Any) -> Any:
    """data.*_files -> SkyRL's data.*_data: null (the task group's data) is SkyRL's empty list; one path
    (verl's spelling) a list of one."""
    if files is None:
        return []
    return [files] if isinstance(files, str) else files


def _files_to_common(files: Any) -> Any:
    return files


def _lookup(table: dict[str, str], what: str) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        # Unknown values pass through unchanged; validation reports them with the allowed set.
        return table.get(value, value)

    convert.__name__ = f"{what} names"
    return convert


_T = SKYRL_TRAIN_PREFIX
_J = SKYRL_JAX_PREFIX

# One entry per SkyRL setting: two settings SkyRL keeps apart are never one common key here, where one
# follows the other by default it is a derived default in conf/backend/skyrl.yaml (the reference model,
# validation's response length, the trainer's log-probability temperature, the JAX engine's rank capacity).
KEY_MAPPINGS: tuple[KeyMapping, ...] = (
    KeyMapping("model.path", _T + "trainer.policy.model.path", "policy model directory"),
    KeyMapping("model.lora.rank", _T + "trainer.policy.model.lora.rank", "LoRA rank"),
    KeyMapping("model.lora.alpha", _T + "trainer.policy.model.lora.alpha", "LoRA alpha"),
    KeyMapping("data.train_batch_size", _T + "trainer.train_batch_size", "prompts per training step"),
    KeyMapping("data.val_batch_size", _T + "trainer.eval_batch_size", "prompts per validation batch"),
    KeyMapping("data.max_prompt_length", _T + "trainer.max_prompt_length", "prompt length limit (tokens)"),
    KeyMapping(
        "data.max_response_length",
        _T + "generator.sampling_params.max_generate_length",
        "tokens sampled per response",
    ),
    KeyMapping(
        "data.train_files",
        _T + "data.train_data",
        "training data files (null = the task group's)",
        to_native=_files_to_native,
        to_common=_files_to_common,
    ),
    KeyMapping(
        "data.val_files",
        _T + "data.val_data",
        "validation data files",
        to_native=_files_to_native,
        to_common=_files_to_common,
    ),
    KeyMapping("rollout.n", _T + "generator.n_samples_per_prompt", "samples per prompt (group size)"),
    KeyMapping("workflow.max_turns", _T + "generator.max_turns", "model turns per episode (workflows)"),
    KeyMapping(
        "rllm.mask_truncated_samples",
        _T + "generator.apply_overlong_filtering",
        "loss-mask responses cut at the length limit (DAPO's overlong filtering)",
    ),
    KeyMapping("rollout.n_val", _T + "generator.eval_n_samples_per_prompt", "samples per validation prompt"),
    KeyMapping("rollout.train.temperature", _T + "generator.sampling_params.temperature", "sampling temperature"),
    KeyMapping("rollout.train.top_p", _T + "generator.sampling_params.top_p", "nucleus sampling p"),
    KeyMapping("rollout.val.temperature", _T + "generator.eval_sampling_params.temperature", "validation temperature"),
    KeyMapping("rollout.val.top_p", _T + "generator.eval_sampling_params.top_p", "validation nucleus p"),
    KeyMapping("trainer.lr", _T + "trainer.policy.optimizer_config.lr", "policy learning rate"),
    KeyMapping("trainer.weight_decay", _T + "trainer.policy.optimizer_config.weight_decay", "AdamW weight decay"),
    KeyMapping("trainer.adam_betas", _T + "trainer.policy.optimizer_config.adam_betas", "Adam betas"),
    KeyMapping("trainer.max_grad_norm", _T + "trainer.policy.optimizer_config.max_grad_norm", "gradient clip norm"),
    KeyMapping(
        "algorithm.lr_schedule",
        _T + "trainer.policy.optimizer_config.scheduler",
        "lr schedule after warmup",
        to_native=_lookup(_SCHEDULES, "schedule"),
        to_common=_lookup(_SCHEDULES_BACK, "schedule"),
    ),
    KeyMapping("trainer.mini_batch_size", _T + "trainer.policy_mini_batch_size", "prompts per optimizer step"),
    KeyMapping("trainer.total_epochs", _T + "trainer.epochs", "passes over the training data"),
    KeyMapping("trainer.total_batches", _T + "trainer.max_training_steps", "training steps (null = all data)"),
    KeyMapping("trainer.test_freq", _T + "trainer.eval_interval", "validate every N steps"),
    KeyMapping("trainer.save_freq", _T + "trainer.ckpt_interval", "checkpoint every N steps"),
    KeyMapping("trainer.val_before_train", _T + "trainer.eval_before_train", "validate before the first step"),
    KeyMapping("trainer.seed", _T + "trainer.seed", "random seed"),
    KeyMapping("trainer.project_name", _T + "trainer.project_name", "tracker project"),
    KeyMapping(
        "trainer.resume_mode",
        _T + "trainer.resume_mode",
        "resume from the job's latest checkpoint",
        to_native=_lookup(_RESUME, "resume mode"),
        to_common=_lookup(_RESUME_BACK, "resume mode"),
    ),
    KeyMapping("trainer.experiment_name", _T + "trainer.run_name", "tracker run name"),
    KeyMapping(
        "trainer.logger",
        _T + "trainer.logger",
        "trackers (SkyRL takes one: the first non-console)",
        to_native=_loggers_to_native,
        to_common=_logger_to_common,
    ),
    KeyMapping("algorithm.adv_estimator", _T + "trainer.algorithm.advantage_estimator", "advantage estimator"),
    KeyMapping(
        "algorithm.norm_adv_by_std_in_grpo", _T + "trainer.algorithm.grpo_norm_by_std", "GRPO std normalisation"
    ),
    KeyMapping("algorithm.eps_clip", _T + "trainer.algorithm.eps_clip_low", "PPO clip (low side)"),
    KeyMapping(
        "algorithm.eps_clip_high",
        _T + "trainer.algorithm.eps_clip_high",
        "PPO clip (high side; null = eps_clip)",
        null_means="algorithm.eps_clip",
    ),
    KeyMapping("algorithm.kl_beta", _T + "trainer.algorithm.kl_loss_coef", "KL loss coefficient"),
    KeyMapping("algorithm.use_kl_loss", _T + "trainer.algorithm.use_kl_loss", "KL loss against the reference"),
    KeyMapping(
        "algorithm.loss_fn",
        _T + "trainer.algorithm.policy_loss_type",
        "policy loss",
        to_native=_lookup(_LOSSES, "loss"),
        to_common=_lookup(_LOSSES_BACK, "loss"),
    ),
    KeyMapping(
        "algorithm.loss_agg_mode",
        _T + "trainer.algorithm.loss_reduction",
        "loss aggregation over tokens",
        to_native=_lookup(_LOSS_AGG, "loss_agg"),
        to_common=_lookup(_LOSS_AGG_BACK, "loss_agg"),
    ),
    KeyMapping(
        "skyrl.engine",
        _T + "trainer.strategy",
        "SkyRL's trainer strategy (the jax engine keeps SkyRL's default)",
        to_native=_engine_to_strategy,
        to_common=_strategy_to_engine,
    ),
    KeyMapping("resources.nodes", _T + "trainer.placement.policy_num_nodes", "nodes per job"),
    KeyMapping(
        "resources.gpus_per_node",
        _T + "trainer.placement.policy_num_gpus_per_node",
        "GPUs per node (0 = CPU; SkyRL's placement needs >= 1)",
        to_native=_gpus_to_native,
        to_common=_gpus_to_common,
    ),
)

BY_NATIVE: dict[str, KeyMapping] = {m.native: m for m in KEY_MAPPINGS}
NATIVE_LOSS_NAMES = _LOSSES  # the loop's loss names that SkyRL spells differently


def plain_value(value: Any) -> Any:
    """A config node's value as plain Python (a container resolved), a leaf as it is."""
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def _resolve_native(native_key: str, *, _root_: DictConfig) -> Any:
    mapping = BY_NATIVE[native_key]
    value = OmegaConf.select(_root_, mapping.common)
    if value is None and mapping.null_means is not None:
        value = OmegaConf.select(_root_, mapping.null_means)
    return mapping.native_value(plain_value(value))


def register_resolver() -> None:
    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, _resolve_native)


register_resolver()
