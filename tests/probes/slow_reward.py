"""The toy task's reward, SLOW_REWARD_S seconds slower per call (default 0.02 s): training
steps of a known minimum length, for tests about time limits and node failures."""

from __future__ import annotations

import os
import time

from rllm_sweeps.tasks.toy import letters_reward


def slow_reward(prompt: str, response: str, ground_truth: str) -> float:
    time.sleep(float(os.environ.get("SLOW_REWARD_S", "0.02")))
    return letters_reward(prompt, response, ground_truth)
