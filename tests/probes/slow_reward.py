"""The toy task's reward, SLOW_REWARD_S seconds slower per call (default 0.02 s): training
steps of a known minimum length, for tests about time limits and node failures.

SLOW_REWARD_FILE, when set and the file exists, holds the delay instead: a test can slow the
jobs already running down (and speed them up again) while it does something to them."""

from __future__ import annotations

import os
import time

from rllm_sweeps.tasks.toy import letters_reward


def delay_s() -> float:
    path = os.environ.get("SLOW_REWARD_FILE")
    if path:
        try:
            return float(open(path).read().strip())
        except (OSError, ValueError):
            pass
    return float(os.environ.get("SLOW_REWARD_S", "0.02"))


def slow_reward(prompt: str, response: str, ground_truth: str) -> float:
    time.sleep(delay_s())
    return letters_reward(prompt, response, ground_truth)
