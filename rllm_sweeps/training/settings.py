"""Typed settings of the RL loop, built from the common (rLLM-named) config keys."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rllm_sweeps.native_keys import SKYRL_NODE
from rllm_sweeps.workflows.generator import GeneratorSettings, input_limit

# field name -> dotted key of the common config (conf/config.yaml holds the defaults,
# rllm_sweeps/config/rules.py what is valid: both are checked before the loop starts), or of a
# SkyRL-native key the loop honours on every engine (no common name: rLLM has none).
CONFIG_KEYS: dict[str, str] = {
    "lora_rank": "model.lora.rank",
    "lora_alpha": "model.lora.alpha",
    "train_batch_size": "data.train_batch_size",
    "val_batch_size": "data.val_batch_size",
    "max_prompt_length": "data.max_prompt_length",
    "max_response_length": "data.max_response_length",
    "n": "rollout.n",
    "n_val": "rollout.n_val",
    "temperature": "rollout.train.temperature",
    "top_p": "rollout.train.top_p",
    "val_temperature": "rollout.val.temperature",
    "val_top_p": "rollout.val.top_p",
    "lr": "trainer.lr",
    "weight_decay": "trainer.weight_decay",
    "adam_betas": "trainer.adam_betas",
    "adam_eps": "trainer.adam_eps",
    "max_grad_norm": "trainer.max_grad_norm",
    "mini_batch_size": "trainer.mini_batch_size",
    "total_epochs": "trainer.total_epochs",
    "total_batches": "trainer.total_batches",
    "test_freq": "trainer.test_freq",
    "save_freq": "trainer.save_freq",
    "val_before_train": "trainer.val_before_train",
    "val_max_samples": "trainer.val_max_samples",
    "seed": "trainer.seed",
    "resume_mode": "trainer.resume_mode",
    "adv_estimator": "algorithm.adv_estimator",
    "norm_adv_by_std_in_grpo": "algorithm.norm_adv_by_std_in_grpo",
    "loss_fn": "algorithm.loss_fn",
    "eps_clip": "algorithm.eps_clip",
    "eps_clip_high": "algorithm.eps_clip_high",
    "use_kl_loss": "algorithm.use_kl_loss",
    "kl_beta": "algorithm.kl_beta",
    "loss_agg_mode": "algorithm.loss_agg_mode",
    "lr_schedule": "algorithm.lr_schedule",
    "warmup_steps_ratio": "algorithm.warmup_steps_ratio",
    "num_warmup_steps": "skyrl.train.trainer.policy.optimizer_config.num_warmup_steps",
    "top_k": "skyrl.train.generator.sampling_params.top_k",
    "val_top_k": "skyrl.train.generator.eval_sampling_params.top_k",
    "chat_template_kwargs": "skyrl.train.generator.chat_template_kwargs",
    "val_max_response_length": "skyrl.train.generator.eval_sampling_params.max_generate_length",
    "cispo_eps_clip_low": "skyrl.train.trainer.algorithm.cispo.cispo_eps_clip_low",
    "cispo_eps_clip_high": "skyrl.train.trainer.algorithm.cispo.cispo_eps_clip_high",
    "loss_norm_length": "skyrl.train.trainer.algorithm.max_seq_len",
    "legacy_micro_batch": "skyrl.train.trainer.micro_train_batch_size_per_gpu",
    "max_ckpts_to_keep": "skyrl.train.trainer.max_ckpts_to_keep",
    # SkyRL's trainer settings the loop implements on every engine (training/loop.py says where)
    "update_epochs_per_batch": "skyrl.train.trainer.update_epochs_per_batch",
    "dynamic_sampling_type": "skyrl.train.trainer.algorithm.dynamic_sampling.type",
    "dynamic_sampling_max_sample_batches": "skyrl.train.trainer.algorithm.dynamic_sampling.max_sample_batches",
    "dynamic_sampling_min_replace_ratio": "skyrl.train.trainer.algorithm.dynamic_sampling.min_replace_ratio",
    "zero_variance_filter": "skyrl.train.trainer.algorithm.zero_variance_filter",
    "zero_variance_filter_tol": "skyrl.train.trainer.algorithm.zero_variance_filter_tol",
    # SkyRL's overlong filtering: rLLM's name for it (keymap.py maps SkyRL's)
    "apply_overlong_filtering": "rllm.mask_truncated_samples",
    "use_kl_in_reward": "skyrl.train.trainer.algorithm.use_kl_in_reward",
    "kl_estimator_type": "skyrl.train.trainer.algorithm.kl_estimator_type",
    "kl_ctrl_type": "skyrl.train.trainer.algorithm.kl_ctrl.type",
    "kl_ctrl_target": "skyrl.train.trainer.algorithm.kl_ctrl.kl_target",
    "kl_ctrl_horizon": "skyrl.train.trainer.algorithm.kl_ctrl.horizon",
    "advantage_batch_normalize": "skyrl.train.trainer.algorithm.advantage_batch_normalize",
    # SkyRL's generator settings the workflows implement (workflows/generator.py; defaults: GeneratorConfig)
    "max_input_length": "skyrl.train.generator.max_input_length",
    "stop": "skyrl.train.generator.sampling_params.stop",
    "val_stop": "skyrl.train.generator.eval_sampling_params.stop",
    "use_conversation_multi_turn": "skyrl.train.generator.use_conversation_multi_turn",
    "append_eos_after_stop": "skyrl.train.generator.append_eos_token_after_stop_str_in_multi_turn",
    "step_wise_trajectories": "skyrl.train.generator.step_wise_trajectories",
    # DAPO's overlong buffer penalty: SkyRL's DAPO example adds these two to its AlgorithmConfig
    "overlong_buffer_len": "skyrl.train.trainer.algorithm.overlong_buffer_len",
    "overlong_buffer_penalty_factor": "skyrl.train.trainer.algorithm.overlong_buffer_penalty_factor",
}

# SkyRL's AlgorithmConfig in the composed config (read whole: see LoopSettings.skyrl_algorithm)
ALGORITHM_TREE = "skyrl.train.trainer.algorithm"


@dataclass(frozen=True)
class LoopSettings:
    # model.lora
    lora_rank: int
    lora_alpha: float
    # data
    train_batch_size: int
    val_batch_size: int
    max_prompt_length: int
    max_response_length: int
    # rollout
    n: int
    n_val: int
    temperature: float
    top_p: float
    val_temperature: float
    val_top_p: float
    # trainer
    lr: float
    weight_decay: float
    adam_betas: tuple[float, float]
    adam_eps: float
    max_grad_norm: float | None
    mini_batch_size: int
    total_epochs: int
    total_batches: int | None
    test_freq: int
    save_freq: int
    val_before_train: bool
    seed: int
    resume_mode: str
    # algorithm
    adv_estimator: str
    norm_adv_by_std_in_grpo: bool
    loss_fn: str
    eps_clip: float
    eps_clip_high: float | None
    use_kl_loss: bool
    kl_beta: float
    loss_agg_mode: str
    lr_schedule: str
    warmup_steps_ratio: float
    val_max_samples: int | None = None  # rLLM PR #407: the first N validation examples (-1/None: all)
    # SkyRL-native settings the loop reads (the engine classes, rllm_sweeps/engines/, read them on every engine)
    top_k: int = -1  # sampling: -1 = no limit
    val_top_k: int = -1
    num_warmup_steps: int = 0  # SkyRL's warmup in steps (0: algorithm.warmup_steps_ratio decides)
    val_max_response_length: int | None = None  # validation's (None: max_response_length)
    chat_template_kwargs: dict | None = None  # SkyRL's: passed to every chat-template rendering
    cispo_eps_clip_low: float = 1.0  # CISPO's ratio clip range: [1 - low, 1 + high]
    cispo_eps_clip_high: float = 4.0
    loss_norm_length: int | None = None  # seq-mean-token-sum-norm's constant (None: max_response_length)
    legacy_micro_batch: int = 1  # token_mean_legacy: sequences per token-mean (SkyRL's micro batch)
    max_ckpts_to_keep: int = -1  # the newest K checkpoints stay on disk; -1: all (SkyRL's default)
    # SkyRL's trainer settings (defaults: SkyRL's AlgorithmConfig / TrainerConfig)
    update_epochs_per_batch: int = 1  # passes over each batch's mini batches
    dynamic_sampling_type: str | None = None  # "filter" (DAPO), "replace" (POLARIS) or None
    dynamic_sampling_max_sample_batches: int = 30  # -1: sample until the batch is full
    dynamic_sampling_min_replace_ratio: float = 0.3
    zero_variance_filter: bool = False  # loss-mask groups whose rewards are all equal
    zero_variance_filter_tol: float = 1e-6
    apply_overlong_filtering: bool = False  # loss-mask responses cut at the length limit
    use_kl_in_reward: bool = False  # reward -= kl_coef x KL(sampler || reference), per token
    kl_estimator_type: str = "k3"  # k1 / k2 / k3 / abs
    kl_ctrl_type: str = "fixed"  # fixed / adaptive (the coefficient of use_kl_in_reward)
    kl_ctrl_target: float = 0.1
    kl_ctrl_horizon: int = 10000
    advantage_batch_normalize: bool = False  # advantages normalized over the whole batch's tokens
    overlong_buffer_len: int | None = None  # DAPO: the last N tokens of the length limit are penalized
    overlong_buffer_penalty_factor: float = 1.0
    # SkyRL's generator settings (GeneratorConfig's defaults)
    max_input_length: int | None = None  # a multi-turn conversation's limit per turn; None: max_prompt_length
    stop: tuple[str, ...] | None = None  # stop strings (training sampling), kept in the response
    val_stop: tuple[str, ...] | None = None  # stop strings (validation sampling)
    use_conversation_multi_turn: bool = True  # observations as chat messages (False: raw text, one message)
    append_eos_after_stop: bool = True  # EOS after a response that ends at a stop string (conversation style)
    step_wise_trajectories: bool = False  # each turn its own training sequence (SkyRL's step-wise training)
    # skyrl.train.trainer.algorithm as plain data: the parameters of SkyRL's policy losses that the
    # loop computes itself (training/custom_loss.py; None: a bare config, SkyRL's defaults)
    skyrl_algorithm: dict | None = None

    @classmethod
    def from_config(cls, cfg: Any) -> LoopSettings:
        """Read the loop's keys from a validated config (rllm_sweeps.config.load)."""
        from omegaconf import OmegaConf

        if not OmegaConf.is_config(cfg):
            cfg = OmegaConf.create(cfg)
        values: dict[str, Any] = {}
        absent = object()
        for name, key in CONFIG_KEYS.items():
            value = OmegaConf.select(cfg, key, throw_on_missing=True, default=absent)
            if value is absent and key.startswith((SKYRL_NODE + ".", "rllm.")):
                continue  # no SkyRL tree (a bare config, as bench/gpu_loop.py's): the field's default
            values[name] = OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
        values["adam_betas"] = tuple(values["adam_betas"])
        for name in ("stop", "val_stop"):
            if values.get(name) is not None:
                values[name] = tuple(values[name])
        algorithm = OmegaConf.select(cfg, ALGORITHM_TREE, default=None)
        if algorithm is not None:
            values["skyrl_algorithm"] = OmegaConf.to_container(algorithm, resolve=True)
        return cls(**values)

    # -- derived ------------------------------------------------------------------
    @property
    def kl_active(self) -> bool:
        """KL to the base model is applied only with ``use_kl_loss`` and ``kl_beta > 0``."""
        return self.use_kl_loss and self.kl_beta > 0

    @property
    def input_limit(self) -> int:
        """The conversation's token limit before each turn (SkyRL's max_input_length)."""
        return input_limit(self.max_prompt_length, self.max_input_length)

    @property
    def generator(self) -> GeneratorSettings:
        """SkyRL's generator settings of an episode's turns (workflows/generator.py)."""
        return GeneratorSettings(
            self.input_limit,
            self.use_conversation_multi_turn,
            self.append_eos_after_stop,
            self.step_wise_trajectories,
        )

    @property
    def needs_reference(self) -> bool:
        """The base model's log-probs are needed: a KL loss or SkyRL's KL in the reward."""
        return self.kl_active or self.use_kl_in_reward

    @property
    def clip_low_threshold(self) -> float:
        """Lower bound of the importance ratio's clip (CISPO's own range for cispo)."""
        if self.loss_fn == "cispo":
            return 1.0 - self.cispo_eps_clip_low
        return 1.0 - self.eps_clip

    @property
    def clip_high_threshold(self) -> float:
        if self.loss_fn == "cispo":
            return 1.0 + self.cispo_eps_clip_high
        return 1.0 + (self.eps_clip if self.eps_clip_high is None else self.eps_clip_high)

    def total_steps(self, train_size: int) -> int:
        """Training steps: ``total_batches`` if set (not null or rLLM's -1), else whole epochs (last
        partial batch dropped)."""
        if self.total_batches is not None and self.total_batches >= 0:
            return self.total_batches
        return self.total_epochs * (train_size // self.train_batch_size)

    def lr_at(self, step: int, total_steps: int) -> float:
        """Learning rate for 0-based optimizer step ``step``: linear warmup, then constant, cosine
        or linear decay towards 0 (transformers' schedules of the same names). The warmup: SkyRL's
        ``num_warmup_steps`` where set, else rLLM's ``warmup_steps_ratio`` of the steps."""
        warmup = self.num_warmup_steps if self.num_warmup_steps > 0 else int(self.warmup_steps_ratio * total_steps)
        if step < warmup:
            return self.lr * (step + 1) / warmup
        span = max(1, total_steps - warmup)
        progress = min(1.0, (step - warmup) / span)
        if self.lr_schedule == "cosine":
            return self.lr * 0.5 * (1.0 + math.cos(math.pi * progress))
        if self.lr_schedule == "linear":
            return self.lr * (1.0 - progress)
        return self.lr
