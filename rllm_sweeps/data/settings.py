"""What a dataset by path is made of, read once from a config: one hashable record (checks are cached on it)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rllm_sweeps.plain_tree import plain_get_or_none

# SkyRL's own default environment (EnvironmentConfig.env_class), for a config without SkyRL's tree.
DEFAULT_ENV = "gsm8k"


def as_paths(value: Any) -> tuple[str, ...]:
    """data.train_files as users write it: one path or a list of them (verl takes both)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


@dataclass(frozen=True)
class DataSettings:
    """data.train_files / val_files (SkyRL's data files: keymap.py), the environment settings, and
    what a prompt's length is measured with."""

    train_files: tuple[str, ...]
    val_files: tuple[str, ...]
    env_class: str  # environment.env_class: the environment of rows without an env_class of their own
    env_configs_json: str  # environment.skyrl_gym, as JSON (hashable): each environment's env_config
    max_prompt_length: int
    model_path: str  # the tokenizer's model (prompt lengths)

    @property
    def env_configs(self) -> dict[str, Any]:
        return json.loads(self.env_configs_json)

    @classmethod
    def from_plain(cls, plain: Mapping[str, Any]) -> DataSettings | None:
        """The settings of a resolved plain config; None when the job trains on its task (no data.train_files)."""
        train = plain_get_or_none(plain, "data.train_files")
        if train is None:
            return None
        environment = plain_get_or_none(plain, "skyrl.train.environment") or {}
        return cls(
            train_files=as_paths(train),
            val_files=as_paths(plain_get_or_none(plain, "data.val_files")),
            env_class=str(environment.get("env_class") or DEFAULT_ENV),
            env_configs_json=json.dumps(environment.get("skyrl_gym") or {}, sort_keys=True, default=str),
            max_prompt_length=int(plain_get_or_none(plain, "data.max_prompt_length")),
            model_path=str(plain_get_or_none(plain, "model.path")),
        )


def data_by_path(plain: Mapping[str, Any]) -> bool:
    return plain_get_or_none(plain, "data.train_files") is not None


__all__ = ["DEFAULT_ENV", "DataSettings", "as_paths", "data_by_path"]
