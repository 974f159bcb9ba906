"""What a task is, and how one is built from the ``task`` config group.

A task is a dataset, ``{"train": [...], "val": [...]}`` where every example is a
``{"prompt": str, "ground_truth": Any}`` dict, plus a reward function
``reward(prompt: str, response: str, ground_truth) -> float`` importable as
``"module:function"``. The task config group looks like::

    name: toy_letters
    dataset:                       # Hydra-style call: _target_ + keyword arguments
      _target_: rllm_sweeps.tasks.toy.letters_dataset
      size: 256
      val_size: 32
    reward: rllm_sweeps.tasks.toy:letters_reward
    chat_template: false           # optional (default true): wrap prompts in the
                                   # tokenizer's chat template before sampling
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict


class Example(TypedDict):
    prompt: str
    ground_truth: Any


RewardFn = Callable[[str, str, Any], float]


@dataclass
class Task:
    name: str
    train: list[Example]
    val: list[Example]
    reward_fn: RewardFn
    chat_template: bool = True
    # A dataset by path (rllm_sweeps/data/): each example's skyrl-gym environment gives its reward.
    environments: Any = None  # data.environments.DataEnvironments

    def __post_init__(self) -> None:
        for split, rows in (("train", self.train), ("val", self.val)):
            if not isinstance(rows, list):
                continue  # a dataset by path, read on demand: checked before launch (data/check.py)
            for i, row in enumerate(rows):
                if not isinstance(row, Mapping) or "prompt" not in row or "ground_truth" not in row:
                    raise ValueError(f"task {self.name!r}: {split}[{i}] needs 'prompt' and 'ground_truth'")
        if not self.train:
            raise ValueError(f"task {self.name!r}: empty train split")


def import_object(path: str) -> Any:
    """Import ``"pkg.module:attr"`` (or the Hydra-style ``"pkg.module.attr"``)."""
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"cannot import {path!r}: expected 'module:function'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"cannot import {path!r}: {e}") from e
    try:
        obj = module
        for part in attr.split("."):
            obj = getattr(obj, part)
    except AttributeError as e:
        raise ValueError(f"cannot import {path!r}: module {module_name!r} has no {attr!r}") from e
    return obj


def load_task(task_cfg: Mapping) -> Task:
    """Build a :class:`Task` from the ``task`` config group (a dict or DictConfig)."""
    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(task_cfg, DictConfig):
            task_cfg = OmegaConf.to_container(task_cfg, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    cfg = dict(task_cfg)
    for key in ("name", "dataset", "reward"):
        if key not in cfg:
            raise ValueError(f"task config needs a {key!r} key; got {sorted(cfg)}")
    ds_cfg = dict(cfg["dataset"])
    target = ds_cfg.pop("_target_", None)
    if not target:
        raise ValueError("task.dataset needs a _target_ (the dataset function)")
    data = import_object(target)(**ds_cfg)
    if not isinstance(data, Mapping) or "train" not in data or "val" not in data:
        raise ValueError(f"{target} must return {{'train': [...], 'val': [...]}}")
    reward_fn = import_object(cfg["reward"])
    if not callable(reward_fn):
        raise ValueError(f"task.reward {cfg['reward']!r} is not callable")
    return Task(
        name=str(cfg["name"]),
        train=list(data["train"]),
        val=list(data["val"]),
        reward_fn=reward_fn,
        chat_template=bool(cfg.get("chat_template", True)),
    )
