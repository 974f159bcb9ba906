"""A toy multi-turn task: guess a hidden letter; a wrong guess is answered with the letter.

Prompt: a few filler words, then ``"guess"``; the hidden letter (ground truth) is drawn from
``letters`` and appears nowhere in the prompt. :class:`GuessLetterEnv` (a skyrl-gym
``BaseTextEnv``) scores a reply as ``toy.letters_reward`` does (the share of its characters equal
to the letter). A fully right reply ends the episode with reward 1; otherwise the environment
answers ``" letter <c>"`` and the model replies again, until ``max_turns``; the last reply's score is
the reward. One turn can only guess (a policy that always says one letter earns ``1/len(letters)``);
two turns can read the answer and copy it (reward 1): more turns, more to learn.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from rllm_sweeps.tasks.toy import FILLER, letters_reward


def guess_dataset(
    size: int = 1024, val_size: int = 32, seed: int = 0, letters: str = "abcd", max_filler: int = 3
) -> dict[str, list[dict]]:
    """``size`` train and ``val_size`` val examples ``{"prompt", "ground_truth"}`` (the hidden letter)."""
    if not letters or not letters.isalpha():
        raise ValueError(f"letters must be a non-empty string of letters, got {letters!r}")
    rng = np.random.default_rng(seed)

    def example(i: int | None) -> dict:
        words = [FILLER[int(k)] for k in rng.integers(0, len(FILLER), size=int(rng.integers(0, max_filler + 1)))]
        letter = letters[i % len(letters)] if i is not None else letters[int(rng.integers(0, len(letters)))]
        return {"prompt": " ".join([*words, "guess"]), "ground_truth": letter}

    return {"train": [example(None) for _ in range(size)], "val": [example(i) for i in range(val_size)]}


class GuessLetterEnv(BaseTextEnv):
    """Guess the hidden letter (``extras["reward_spec"]["ground_truth"]``); a miss reveals it."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        extras = extras or {}
        self.letter = str(extras["reward_spec"]["ground_truth"])
        self.max_turns = int(extras.get("max_turns", 2))  # SkyRL's generator passes its max_turns so

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        score = letters_reward("", action, self.letter)
        if score == 1.0 or self.turns >= self.max_turns:
            return BaseTextEnvStepOutput(observations=[], reward=score, done=True, metadata={"turns": self.turns})
        reveal = [{"role": "user", "content": f" letter {self.letter}"}]
        return BaseTextEnvStepOutput(observations=reveal, reward=0.0, done=False, metadata={})

    def get_metrics(self) -> dict[str, Any]:
        return {"turns": self.turns}
