"""The environments of a dataset by path: skyrl-gym's, by registered name or by import path, made by
skyrl-gym's own ``make`` with ``environment.skyrl_gym.<name>`` as their config and the row's extras, as
SkyRL's generator makes them (skyrl/train/generators/skyrl_gym_generator.py)."""

from __future__ import annotations

import dataclasses
import math
import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# What an environment's config names tells what it needs (skyrl_gym/envs/*/env.py: Text2SQLEnvConfig.db_path,
# SearchEnvConfig.search_url): a field ending so is a place that must be given before a job can run.
PATH_SUFFIX, URL_SUFFIX = "_path", "_url"
CONFIG_KEY = "environment.skyrl_gym"  # SkyRL's key of each environment's env_config (SkyRLGymConfig)


@dataclass(frozen=True)
class EnvNeed:
    """One setting an environment reads that must be given: a directory (``path``) or a server (``url``)."""

    env_class: str
    field: str
    kind: str  # "path" | "url"

    @property
    def key(self) -> str:
        return f"{CONFIG_KEY}.{self.env_class}.{self.field}"

    def problem(self, value: Any) -> str | None:
        """Why ``value`` does not meet the need (None: it does)."""
        if value is None or value == "":
            what = "a directory" if self.kind == "path" else "the server's URL"
            return f"env_class {self.env_class!r} reads {self.key}, which is not set: set it to {what}"
        if self.kind == "path" and not os.path.isdir(os.path.expanduser(str(value))):
            return (
                f"env_class {self.env_class!r} reads {self.key}={value!r}, which is not a directory: set it to "
                "the directory the environment reads"
            )
        return None


def env_needs(env_class: str) -> tuple[EnvNeed, ...]:
    """The settings a registered environment reads that must be given, from its env_config's dataclass
    (the type its ``__init__`` takes as ``env_config``); none for an environment that reads no config."""
    import skyrl_gym

    from rllm_sweeps.tasks.base import import_object

    entry = skyrl_gym.registry[env_class].entry_point
    cls = import_object(entry) if isinstance(entry, str) else entry
    try:
        hint = typing.get_type_hints(cls.__init__).get("env_config")
    except Exception:  # annotations that do not resolve: nothing to derive
        return ()
    configs = [t for t in (typing.get_args(hint) or (hint,)) if dataclasses.is_dataclass(t)]
    return tuple(
        EnvNeed(env_class, f.name, "path" if f.name.endswith(PATH_SUFFIX) else "url")
        for config in configs
        for f in dataclasses.fields(config)
        if f.name.endswith((PATH_SUFFIX, URL_SUFFIX))
    )


def env_problem(env_class: str, configs: Mapping[str, Any] | None = None) -> str | None:
    """What is wrong with an env_class, or None: a skyrl-gym registry id whose needs ``configs``
    (environment.skyrl_gym) meets, or a BaseTextEnv as module:Class."""
    import skyrl_gym

    if ":" in env_class:
        from skyrl_gym.envs.base_text_env import BaseTextEnv

        from rllm_sweeps.tasks.base import import_object

        try:
            cls = import_object(env_class)
        except ValueError as err:
            return f"env_class {env_class!r}: {err}"
        if not (isinstance(cls, type) and issubclass(cls, BaseTextEnv)):
            return f"env_class {env_class!r} is not a skyrl_gym BaseTextEnv subclass"
        return None
    if env_class not in skyrl_gym.registry:
        usable = ", ".join(sorted(skyrl_gym.registry))
        return f"unknown env_class {env_class!r}: skyrl-gym has {usable} (or a BaseTextEnv as 'module:Class')"
    config = (configs or {}).get(env_class) or {}
    for need in env_needs(env_class):
        if (problem := need.problem(config.get(need.field))) is not None:
            return problem
    return None


@dataclass(frozen=True)
class DataEnvironments:
    """How a dataset's examples get their environment (Task.environments)."""

    default: str  # environment.env_class
    configs: Mapping[str, Any] = field(default_factory=dict)  # environment.skyrl_gym

    def make(self, example: Mapping[str, Any], max_turns: int) -> Any:
        """The example's environment: its env_class, its extras, the max turns among them (as SkyRL)."""
        import skyrl_gym
        from omegaconf import OmegaConf
        from skyrl_gym.envs.registration import EnvSpec

        env_class = str(example.get("env_class") or self.default)
        extras = {**example["extras"], "max_turns": max_turns}
        config = OmegaConf.create(dict(self.configs.get(env_class) or {}))
        spec = EnvSpec(id=env_class, entry_point=env_class) if ":" in env_class else env_class
        return skyrl_gym.make(spec, env_config=config, extras=extras)

    def reward(self, example: Mapping[str, Any], response: str) -> float:
        """One step of the example's environment on a response (a single-call workflow's reward)."""
        env = self.make(example, max_turns=1)
        try:
            env.init(_messages(example["prompt"]))
            reward = float(env.step(response)["reward"])
        finally:
            env.close()
        if not math.isfinite(reward):
            raise ValueError(f"environment {example.get('env_class')!r} gave reward {reward}")
        return reward


def _messages(prompt: Any) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)


__all__ = ["DataEnvironments", "EnvNeed", "env_needs", "env_problem"]
