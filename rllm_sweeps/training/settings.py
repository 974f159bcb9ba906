"""Typed settings of the RL loop, built from the common (rLLM-named) config keys."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

ADV_ESTIMATORS = ("grpo", "rloo", "reinforce", "reinforce_plus_plus_baseline")
LOSS_FNS = ("importance_sampling", "ppo")
LOSS_AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")
LR_SCHEDULES = ("constant", "cosine")
RESUME_MODES = ("auto", "disable")

# field name -> dotted key of the common config (conf/config.yaml). Keys missing
# from the config keep the dataclass default.
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
}


@dataclass
class LoopSettings:
    # model.lora
    lora_rank: int = 8
    lora_alpha: float = 16.0
    # data
    train_batch_size: int = 8
    val_batch_size: int = 32
    max_prompt_length: int = 32
    max_response_length: int = 8
    # rollout
    n: int = 4
    n_val: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    val_temperature: float = 0.0
    val_top_p: float = 1.0
    # trainer
    lr: float = 2e-3
    weight_decay: float = 0.0
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8
    max_grad_norm: float | None = 1.0
    mini_batch_size: int = 8
    total_epochs: int = 1
    total_batches: int | None = 30
    test_freq: int = 10
    save_freq: int = 10
    val_before_train: bool = True
    seed: int = 42
    resume_mode: str = "auto"
    # algorithm
    adv_estimator: str = "grpo"
    norm_adv_by_std_in_grpo: bool = True
    loss_fn: str = "importance_sampling"
    eps_clip: float = 0.2
    eps_clip_high: float | None = 0.2
    use_kl_loss: bool = False
    kl_beta: float = 0.001
    loss_agg_mode: str = "token-mean"
    lr_schedule: str = "constant"
    warmup_steps_ratio: float = 0.0
    # where each value came from (field -> config key), for error messages
    _sources: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._coerce()
        self._validate()

    # -- construction -------------------------------------------------------------
    @classmethod
    def from_config(cls, cfg: Any) -> LoopSettings:
        """Read the common keys from a DictConfig / nested dict; missing keys keep defaults."""
        from omegaconf import DictConfig, OmegaConf

        if not isinstance(cfg, DictConfig):
            cfg = OmegaConf.create(cfg)
        values: dict[str, Any] = {}
        for name, key in CONFIG_KEYS.items():
            missing = object()
            v = OmegaConf.select(cfg, key, default=missing)
            if v is missing:
                continue
            if isinstance(v, DictConfig) or OmegaConf.is_list(v):
                v = OmegaConf.to_container(v, resolve=True)
            values[name] = v
        return cls(**values, _sources=dict(CONFIG_KEYS))

    def _key(self, name: str) -> str:
        return self._sources.get(name, name)

    # -- checks -------------------------------------------------------------------
    def _coerce(self) -> None:
        for f in fields(self):
            if f.name.startswith("_"):
                continue
            v = getattr(self, f.name)
            t = str(f.type)
            try:
                if t == "int":
                    v = _to_int(v)
                elif t == "int | None":
                    v = None if v is None else _to_int(v)
                elif t == "float":
                    v = _to_float(v)
                elif t == "float | None":
                    v = None if v is None else _to_float(v)
                elif t == "bool":
                    if not isinstance(v, bool):
                        raise TypeError(f"expected true/false, got {v!r}")
                elif t == "str":
                    if not isinstance(v, str):
                        raise TypeError(f"expected a string, got {v!r}")
                elif f.name == "adam_betas":
                    v = tuple(_to_float(b) for b in v)
                    if len(v) != 2:
                        raise TypeError(f"expected two betas, got {v!r}")
            except (TypeError, ValueError) as e:
                raise ValueError(f"{self._key(f.name)}: {e}") from None
            setattr(self, f.name, v)

    def _validate(self) -> None:
        def need(ok: bool, name: str, msg: str) -> None:
            if not ok:
                raise ValueError(f"{self._key(name)}={getattr(self, name)!r}: {msg}")

        for name in ("lora_rank", "train_batch_size", "val_batch_size", "max_prompt_length", "max_response_length"):
            need(getattr(self, name) > 0, name, "must be > 0")
        for name in ("n", "n_val", "mini_batch_size", "total_epochs"):
            need(getattr(self, name) > 0, name, "must be > 0")
        need(self.total_batches is None or self.total_batches > 0, "total_batches", "must be > 0 or null")
        need(self.test_freq >= 0, "test_freq", "must be >= 0")
        need(self.save_freq >= 0, "save_freq", "must be >= 0")
        need(self.lora_alpha > 0, "lora_alpha", "must be > 0")
        need(self.lr >= 0, "lr", "must be >= 0")
        need(self.weight_decay >= 0, "weight_decay", "must be >= 0")
        need(all(0.0 <= b < 1.0 for b in self.adam_betas), "adam_betas", "each beta must be in [0, 1)")
        need(self.adam_eps > 0, "adam_eps", "must be > 0")
        need(self.max_grad_norm is None or self.max_grad_norm > 0, "max_grad_norm", "must be > 0 or null")
        need(self.temperature > 0, "temperature", "sampling temperature for training must be > 0")
        need(self.val_temperature >= 0, "val_temperature", "must be >= 0 (0 = greedy)")
        need(0 < self.top_p <= 1, "top_p", "must be in (0, 1]")
        need(0 < self.val_top_p <= 1, "val_top_p", "must be in (0, 1]")
        need(self.train_batch_size % self.mini_batch_size == 0, "mini_batch_size", "must divide train_batch_size")
        need(self.adv_estimator in ADV_ESTIMATORS, "adv_estimator", f"expected one of {ADV_ESTIMATORS}")
        need(self.loss_fn in LOSS_FNS, "loss_fn", f"expected one of {LOSS_FNS}")
        need(self.loss_agg_mode in LOSS_AGG_MODES, "loss_agg_mode", f"expected one of {LOSS_AGG_MODES}")
        need(self.lr_schedule in LR_SCHEDULES, "lr_schedule", f"expected one of {LR_SCHEDULES}")
        need(self.resume_mode in RESUME_MODES, "resume_mode", f"expected one of {RESUME_MODES}")
        need(0 <= self.eps_clip < 1, "eps_clip", "must be in [0, 1)")
        need(self.eps_clip_high is None or self.eps_clip_high >= 0, "eps_clip_high", "must be >= 0 or null")
        need(self.kl_beta >= 0, "kl_beta", "must be >= 0")
        need(0 <= self.warmup_steps_ratio < 1, "warmup_steps_ratio", "must be in [0, 1)")

    # -- derived ------------------------------------------------------------------
    @property
    def kl_active(self) -> bool:
        """KL to the base model is applied only with ``use_kl_loss`` and ``kl_beta > 0``."""
        return self.use_kl_loss and self.kl_beta > 0

    @property
    def clip_low_threshold(self) -> float:
        return 1.0 - self.eps_clip

    @property
    def clip_high_threshold(self) -> float:
        return 1.0 + (self.eps_clip if self.eps_clip_high is None else self.eps_clip_high)

    def total_steps(self, train_size: int) -> int:
        """Training steps: ``total_batches`` if set, else whole epochs (last partial batch dropped)."""
        if self.total_batches is not None:
            return self.total_batches
        return self.total_epochs * (train_size // self.train_batch_size)

    def lr_at(self, step: int, total_steps: int) -> float:
        """Learning rate for 0-based optimizer step ``step`` (linear warmup, then constant/cosine)."""
        warmup = int(self.warmup_steps_ratio * total_steps)
        if step < warmup:
            return self.lr * (step + 1) / warmup
        if self.lr_schedule == "cosine":
            span = max(1, total_steps - warmup)
            progress = min(1.0, (step - warmup) / span)
            return self.lr * 0.5 * (1.0 + math.cos(math.pi * progress))
        return self.lr

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}


def _to_int(v: Any) -> int:
    if isinstance(v, bool):
        raise TypeError(f"expected an integer, got {v!r}")
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        return int(v)
    raise TypeError(f"expected an integer, got {v!r}")


def _to_float(v: Any) -> float:
    if isinstance(v, bool):
        raise TypeError(f"expected a number, got {v!r}")
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        return float(v)
    raise TypeError(f"expected a number, got {v!r}")
