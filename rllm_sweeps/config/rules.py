"""What a valid value is, per common key, plus the rules that span several keys.

Each check returns None when the value is fine, else a short phrase saying what was
expected; validate.py turns that into a message naming the key and the bad value.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rllm_sweeps.advantages import ESTIMATORS as _ESTIMATOR_FUNCTIONS
from rllm_sweeps.config.cross_rule import CrossRule
from rllm_sweeps.config.engine_names import ENGINES
from rllm_sweeps.config.generator_rules import GENERATOR_RULES
from rllm_sweeps.config.gpu_trainer_rules import GPU_TRAINER_RULES
from rllm_sweeps.keymap import LOSS_AGG_MODES, LR_SCHEDULES

Check = Callable[[Any], str | None]

ESTIMATORS = tuple(_ESTIMATOR_FUNCTIONS)
LOGGERS = ("console", "tensorboard", "wandb")
RESUME_MODES = ("auto", "disable")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


def integer(ge: int | None = None, nullable: bool = False, off: int | None = None) -> Check:
    """`off`: a value outside the range that means "off" (rLLM's -1)."""

    def check(v: Any) -> str | None:
        if (v is None and nullable) or (off is not None and v == off and _is_int(v)):
            return None
        bound = f" >= {ge}" if ge is not None else ""
        expected = f"an integer{bound}" + (" or null" if nullable else "")
        expected += f" or {off} (off)" if off is not None else ""
        if not _is_int(v) or (ge is not None and v < ge):
            return expected
        return None

    return check


def number(
    gt: float | None = None,
    ge: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    nullable: bool = False,
) -> Check:
    bounds = [f"> {gt}" if gt is not None else "", f">= {ge}" if ge is not None else ""]
    bounds += [f"<= {le}" if le is not None else "", f"< {lt}" if lt is not None else ""]
    expected = "a number " + " and ".join(b for b in bounds if b)

    def check(v: Any) -> str | None:
        if v is None and nullable:
            return None
        if not _is_number(v):
            return expected.strip() + (" or null" if nullable else "")
        if (gt is not None and not v > gt) or (ge is not None and not v >= ge):
            return expected
        if (le is not None and not v <= le) or (lt is not None and not v < lt):
            return expected
        return None

    return check


def one_of(*allowed: str) -> Check:
    def check(v: Any) -> str | None:
        return None if v in allowed else "one of " + ", ".join(allowed)

    return check


def estimator(v: Any) -> str | None:
    if v in ESTIMATORS:
        return None
    why = "; gae needs a value model (critic), which the loop does not train" if v == "gae" else ""
    return "one of " + ", ".join(ESTIMATORS) + why


def lr_schedule(v: Any) -> str | None:
    if v in LR_SCHEDULES:
        return None
    return (
        "one of " + ", ".join(LR_SCHEDULES) + " (the loop computes the lr of every step on every engine; "
        "SkyRL's constant_with_warmup and cosine_with_warmup are constant and cosine)"
    )


def boolean(v: Any) -> str | None:
    return None if isinstance(v, bool) else "true or false"


def text(v: Any) -> str | None:
    return None if isinstance(v, str) and v else "a non-empty string"


def path_name(v: Any) -> str | None:
    """One directory name: jobs live in outputs/PROJECT/EXPERIMENT, sweeps in multirun/PROJECT/NAME-ID,
    so a name must not climb out of them nor make SkyRL write elsewhere."""
    if not isinstance(v, str) or not v.strip():
        return "a non-empty name"
    if "/" in v or "\\" in v or v in (".", "..") or any(ord(c) < 32 or ord(c) == 127 for c in v):
        return "one directory name (no '/', '\\', '..' or control characters such as a newline)"
    limit = name_max() - len("-12345678")  # a sweep directory is NAME-<sweep id>
    if len(v.encode()) > limit:
        got = len(v.encode())
        return f"a directory name of at most {limit} bytes (the file system's limit is {name_max()}), got {got}"
    return None


def label(v: Any) -> str | None:
    """A name shown by trackers (any text on one line); where it names a directory, a safe one is derived."""
    if not isinstance(v, str) or not v.strip():
        return "a non-empty name"
    if any(ord(c) < 32 or ord(c) == 127 for c in v):
        return "a name on one line (no control characters such as a newline)"
    return None


def name_max() -> int:
    """The longest file name the file system of the working directory takes (255 on most)."""
    try:
        return int(os.pathconf(".", "PC_NAME_MAX"))
    except (OSError, ValueError):
        return 255


def model_path(v: Any) -> str | None:
    """A built-in model, a local Hugging Face model directory, or a hub id (`org/name`, fetched or
    found in the Hugging Face cache when the job starts): a local path that does not exist is refused
    before any job is launched, not after a sweep's every job has brought Ray up."""
    from rllm_sweeps.models.tiny import BUILTIN_MODELS, is_hub_id

    builtins = ", ".join(sorted("builtin:" + n for n in BUILTIN_MODELS))
    if not isinstance(v, str) or not v:
        return f"a local model directory, a hub id (org/name) or one of {builtins}"
    if v.startswith("builtin:"):
        return None if v.removeprefix("builtin:") in BUILTIN_MODELS else f"one of {builtins}"
    local = Path(v).expanduser()
    if local.is_file():
        return f"a model directory (the one that holds config.json); {local} is a file"
    if local.is_dir():
        return None if (local / "config.json").is_file() else "a Hugging Face model directory (it has no config.json)"
    if is_hub_id(v):
        return None
    return f"an existing local model directory (there is no {local}), a hub id (org/name) or one of {builtins}"


def list_of(item: Check, length: int | None = None) -> Check:
    def check(v: Any) -> str | None:
        if not isinstance(v, list | tuple) or (length is not None and len(v) != length):
            return f"a list of {length or 'any number of'} items"
        for x in v:
            if problem := item(x):
                return f"a list whose items are {problem}"
        return None

    return check


def name_or_list_of(item: Check) -> Check:
    """One name, or a list of them (rLLM writes `trainer.logger=console` as well as a list)."""
    as_list = list_of(item)

    def check(v: Any) -> str | None:
        if isinstance(v, str):
            return None if item(v) is None else f"a name or a list of names, each {item(v)}"
        return as_list(v)

    return check


# Every common leaf in conf/config.yaml has a rule here (a test keeps the two in step).
def _data_files(v: Any) -> str | None:
    """null, a path or a list of paths (what the files hold is data/check.py's)."""
    if v is None or (isinstance(v, str) and v):
        return None
    if isinstance(v, list | tuple) and all(isinstance(p, str) and p for p in v):
        return None
    return "null, a path or a list of paths ('[a.parquet,b.parquet]')"


RULES: dict[str, Check] = {
    "model.path": model_path,
    "model.lora.rank": integer(ge=1),
    "model.lora.alpha": integer(ge=1),
    "data.train_batch_size": integer(ge=1),
    "data.val_batch_size": integer(ge=1),
    "data.max_prompt_length": integer(ge=1),
    "data.max_response_length": integer(ge=1),
    "data.train_files": lambda v: _data_files(v),
    "data.val_files": lambda v: _data_files(v),
    "rollout.n": integer(ge=1),
    "rollout.n_val": integer(ge=1),
    "rollout.train.temperature": number(gt=0),
    "rollout.train.top_p": number(gt=0, le=1),
    "rollout.val.temperature": number(ge=0),
    "rollout.val.top_p": number(gt=0, le=1),
    "trainer.lr": number(gt=0),
    "trainer.weight_decay": number(ge=0),
    "trainer.adam_betas": list_of(number(ge=0, lt=1), length=2),
    "trainer.adam_eps": number(gt=0),
    "trainer.max_grad_norm": number(ge=0),
    "trainer.mini_batch_size": integer(ge=1),
    "trainer.total_epochs": integer(ge=1),
    "trainer.total_batches": integer(ge=1, nullable=True, off=-1),  # -1 (rLLM): off, as null
    "trainer.test_freq": integer(ge=0, off=-1),  # 0 or -1: validate only after the last step
    "trainer.save_freq": integer(ge=0, off=-1),  # 0: only after the last step; -1 (rLLM): never
    "trainer.val_before_train": boolean,
    "trainer.val_max_samples": integer(ge=1, nullable=True, off=-1),  # -1 (rLLM) or null: every example
    "trainer.seed": integer(ge=0),
    "trainer.logger": name_or_list_of(one_of(*LOGGERS)),
    "trainer.project_name": path_name,  # a directory of outputs/ and multirun/
    "trainer.experiment_name": label,  # the tracker's name; its directory: records/layout.py dir_name
    "trainer.resume_mode": one_of(*RESUME_MODES),
    "algorithm.adv_estimator": estimator,
    "algorithm.norm_adv_by_std_in_grpo": boolean,
    "algorithm.loss_fn": text,  # which engine implements it: config/engine_settings.py
    "algorithm.eps_clip": number(gt=0, lt=1),
    "algorithm.eps_clip_high": number(gt=0, nullable=True),  # null: eps_clip (symmetric)
    "algorithm.use_kl_loss": boolean,
    "algorithm.kl_beta": number(ge=0),
    "algorithm.loss_agg_mode": one_of(*LOSS_AGG_MODES),
    "algorithm.lr_schedule": lr_schedule,
    "algorithm.warmup_steps_ratio": number(ge=0, lt=1),
    "rllm.mask_truncated_samples": boolean,
    "rllm.rejection_sample.enable": boolean,
    "rllm.rejection_sample.multiplier": integer(ge=1),
    "rllm.rejection_sample.min_partial_solve_tasks": integer(ge=0),
    "rllm.rejection_sample.min_trajs_per_group": integer(ge=1),
    "rllm.stepwise_advantage.enable": boolean,
    "rllm.stepwise_advantage.mode": one_of("broadcast", "per_step"),
    "rllm.stepwise_advantage.normalize_by_steps": boolean,
    **{
        f"rllm.compact_filtering.{k}": boolean
        for k in (
            "enable",
            "mask_max_prompt_length_exceeded",
            "mask_max_response_length_exceeded",
            "mask_env_done",
            "mask_max_turns_exceeded",
            "mask_timeout",
            "mask_unknown",
            "mask_error",
        )
    },
    "rllm.episode_logging.log_episodes": boolean,
    "rllm.episode_logging.episode_log_dir": lambda v: (
        None if v is None or (isinstance(v, str) and v) else "null or a path"
    ),
    "resources.nodes": integer(ge=1),
    "resources.gpus_per_node": integer(ge=0),
    "resources.cpus_per_task": integer(ge=1),
    "resources.jobs_per_gpu": integer(ge=1),
    "resources.mem_gb": number(gt=0),
    "resources.time_min": integer(ge=1),
    "skyrl.engine": one_of(*ENGINES),
}


def _tracker_installed(loggers: Any) -> bool:
    import importlib.util

    loggers = [loggers] if isinstance(loggers, str) else loggers
    return "wandb" not in (loggers or []) or importlib.util.find_spec("wandb") is not None


CROSS_RULES: tuple[CrossRule, ...] = (
    CrossRule(
        ("model.lora.rank", "skyrl.jax.max_lora_rank", "skyrl.engine"),
        lambda rank, most, engine: (
            engine != "jax" or not isinstance(most, int) or not isinstance(rank, int) or rank <= most
        ),
        "skyrl.jax.max_lora_rank is the largest LoRA rank SkyRL's JAX backend allocates adapters for: raise it to at "
        "least model.lora.rank (or leave it out: it follows model.lora.rank)",
    ),
    CrossRule(
        ("trainer.logger",),
        _tracker_installed,
        "trainer.logger includes wandb, but the wandb package is not installed (pip install wandb)",
    ),
    CrossRule(
        ("data.train_batch_size", "trainer.mini_batch_size"),
        lambda batch, mini: batch % mini == 0,
        "data.train_batch_size must be a multiple of trainer.mini_batch_size",
    ),
    CrossRule(
        ("algorithm.kl_beta", "algorithm.use_kl_loss"),
        lambda beta, use_kl: not use_kl or beta > 0,
        "algorithm.use_kl_loss=true needs algorithm.kl_beta > 0",
    ),
    CrossRule(
        ("algorithm.kl_beta", "algorithm.use_kl_loss", "skyrl.train.trainer.algorithm.use_kl_in_reward"),
        lambda beta, use_kl, in_reward: use_kl or in_reward or beta == 0,
        "algorithm.kl_beta > 0 applies a KL term only with algorithm.use_kl_loss=true (or SkyRL's "
        "trainer.algorithm.use_kl_in_reward=true, whose initial coefficient it is; rLLM on verl turns the "
        "loss on by kl_beta alone): add algorithm.use_kl_loss=true",
    ),
    CrossRule(
        ("resources.gpus_per_node", "skyrl.engine"),
        lambda gpus, engine: engine == "jax" or gpus >= 1,
        "skyrl.engine=fsdp/megatron trains on GPUs: set resources.gpus_per_node >= 1",
    ),
    CrossRule(
        ("skyrl.train.trainer.max_ckpts_to_keep",),
        lambda keep: keep == -1 or (isinstance(keep, int) and not isinstance(keep, bool) and keep >= 1),
        "skyrl.train.trainer.max_ckpts_to_keep keeps the newest K checkpoints: an integer >= 1, or -1 for all",
    ),
    *GPU_TRAINER_RULES,
    *GENERATOR_RULES,
)
