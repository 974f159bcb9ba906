"""A reward function with a bug: what a user's broken reward code looks like."""


def broken_reward(prompt: str, response: str, ground_truth: str) -> float:
    raise ZeroDivisionError("bug in the user's reward function")


def out_of_memory_reward(prompt: str, response: str, ground_truth: str) -> float:
    """An allocation XLA cannot make (4 TiB): JAX raises RESOURCE_EXHAUSTED, as it does when a job's GPU
    memory runs out (the way a job on a GPU shared past its memory dies)."""
    import jax.numpy as jnp

    return float(jnp.ones((2**40,), dtype=jnp.float32).sum())
