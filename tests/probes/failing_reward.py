"""A reward function with a bug: what a user's broken reward code looks like."""


def broken_reward(prompt: str, response: str, ground_truth: str) -> float:
    raise ZeroDivisionError("bug in the user's reward function")
