"""Toy task a random-init tiny model learns in minutes on 2 CPUs.

Prompt: a few filler words, then ``"letter <c>"`` for a target letter ``c``
drawn from a small alphabet (``letters``); the letter is the prompt's last
token. Reward: the fraction of the response's non-whitespace characters equal
to ``c``, in [0, 1] (an empty response scores 0). The reward is dense (each right
character counts), so a random policy already gets a little signal (about 0.01
for the built-in tiny model); a policy that emits one fixed letter earns about
``1/len(letters)``, one that copies the letter from the prompt earns 1. Tokens
that merely contain the letter (the tiny tokenizer has ``"ay"``, ``" ha"``)
earn partial credit and are local optima the policy can get stuck in.
"""

from __future__ import annotations

import numpy as np

FILLER = (
    "the a and of to in is it for on with as at by be this are from or have not but "
    "what all were when we there can one each which do how if will up out many then"
).split()


def _prompt(rng: np.random.Generator, letter: str, max_filler: int) -> str:
    k = int(rng.integers(0, max_filler + 1))
    words = [FILLER[int(i)] for i in rng.integers(0, len(FILLER), size=k)]
    return " ".join([*words, f"letter {letter}"])


def letters_dataset(
    size: int = 256,
    val_size: int = 32,
    seed: int = 0,
    letters: str = "abcd",
    max_filler: int = 3,
) -> dict[str, list[dict]]:
    """``size`` train and ``val_size`` val prompts (val prompts never appear in train)."""
    if not letters or not letters.isalpha():
        raise ValueError(f"letters must be a non-empty string of letters, got {letters!r}")
    rng = np.random.default_rng(seed)
    val: list[dict] = []
    seen: set[str] = set()
    for i in range(val_size):
        letter = letters[i % len(letters)]
        for _ in range(100):
            p = _prompt(rng, letter, max_filler)
            if p not in seen:
                break
        seen.add(p)
        val.append({"prompt": p, "ground_truth": letter})
    train: list[dict] = []
    while len(train) < size:
        letter = letters[int(rng.integers(0, len(letters)))]
        p = _prompt(rng, letter, max_filler)
        if p in seen:
            continue
        train.append({"prompt": p, "ground_truth": letter})
    return {"train": train, "val": val}


def letters_reward(prompt: str, response: str, ground_truth: str) -> float:
    """Fraction of the response's non-whitespace characters equal to ``ground_truth``."""
    chars = [c for c in response if not c.isspace()]
    if not chars:
        return 0.0
    return sum(c == ground_truth for c in chars) / len(chars)
