"""The environments of a dataset by path: skyrl-gym's, by registered name or by import path, made by
skyrl-gym's own ``make`` with ``environment.skyrl_gym.<name>`` as their config and the row's extras, as
SkyRL's generator makes them (skyrl/train/generators/skyrl_gym_generator.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# skyrl-gym's environments that need what a job here cannot have, with what that is.
NEEDS: dict[str, str] = {
    "search": "a retrieval server (environment.skyrl_gym.search.search_url)",
    "searchcode": "a retrieval server and a code sandbox",
    "text2sql": "the text2sql database files (environment.skyrl_gym.text2sql.db_path) and their rows' db_id",
    "lcb": "a code sandbox (it runs the model's programs against the tests)",
    "rlm": "a language-model callback and a code REPL (SkyRL's RLM generator provides them)",
}


def env_problem(env_class: str) -> str | None:
    """What is wrong with an env_class, or None: a skyrl-gym registry id or a BaseTextEnv as module:Class."""
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
    if env_class in NEEDS:
        return f"env_class {env_class!r} needs {NEEDS[env_class]}, which a job here cannot have"
    if env_class not in skyrl_gym.registry:
        usable = ", ".join(sorted(k for k in skyrl_gym.registry if k not in NEEDS))
        return f"unknown env_class {env_class!r}: skyrl-gym has {usable} (or a BaseTextEnv as 'module:Class')"
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


__all__ = ["NEEDS", "DataEnvironments", "env_problem"]
