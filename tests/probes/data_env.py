"""A user's own skyrl-gym environment, by import path (environment.env_class=tests.probes.data_env:ReplyEnv):
every reply earns 0.25 and is answered until max_turns, so a trajectory's reward is 0.25 x its turns."""

from __future__ import annotations

from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput


class ReplyEnv(BaseTextEnv):
    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.max_turns = int((extras or {}).get("max_turns", 1))  # generator.max_turns, as SkyRL passes it
        self.truth = (extras or {})["reward_spec"]["ground_truth"]

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        done = self.turns >= self.max_turns
        observations = [] if done else [{"role": "user", "content": " again"}]
        return BaseTextEnvStepOutput(observations=observations, reward=0.25, done=done, metadata={})


class DigitsEnv(BaseTextEnv):
    """One turn; the reply earns the share of its characters that are digits: a graded reward that a
    randomly initialised model's replies vary on (GSM8K's exact answers it never gets right), so that
    group filters (DAPO's dynamic sampling) find prompts with a signal."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        reward = sum(c.isdigit() for c in action) / max(len(action), 1)
        return BaseTextEnvStepOutput(observations=[], reward=reward, done=True, metadata={})
