"""GSM8K-style math: a jsonl/parquet loader and a verifiable reward.

Accepted row formats (jsonl: one JSON object per line; parquet: columns):

* raw GSM8K: ``{"question": ..., "answer": "<reasoning> #### 42"}``;
* plain: ``{"prompt": "...", "ground_truth": "42"}``;
* verl's preprocessed parquet: ``prompt`` = list of chat messages (the last
  ``user`` message is used), ``reward_model = {"ground_truth": "42", ...}``.

Task config group example::

    name: gsm8k
    dataset:
      _target_: rllm_sweeps.tasks.math.gsm8k_dataset
      path: /data/gsm8k/train.parquet     # default: the bundled 22-problem sample
      val_path: /data/gsm8k/test.parquet  # default: split val_size rows off `path`
      val_size: 4
    reward: rllm_sweeps.tasks.math:gsm8k_reward
    chat_template: true

The reward is SkyRL-Gym's GSM8K scorer (verl's): 1.0 if the number after the
first ``#### `` marker in the response equals the ground truth (commas and
``$`` removed), else 0.0 (no format score).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

SAMPLE_PATH = Path(str(resources.files("rllm_sweeps.tasks") / "data" / "gsm8k_sample.jsonl"))  # package data
# verl's examples/data_preprocess/gsm8k.py instruction (what rLLM/SkyRL recipes train with).
INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'

try:  # SkyRL-Gym's scorer (copied from verl): the same reward as SkyRL's GSM8K env
    from skyrl_gym.envs.gsm8k.utils import compute_score as _compute_score
except ImportError:  # pragma: no cover - fallback with identical behaviour

    def _compute_score(solution_str, ground_truth, method="strict", format_score=0.0, score=1.0):
        m = re.search("#### (\\-?[0-9\\.\\,]+)", solution_str)
        if m is None:
            return 0
        answer = m.group(0).split("#### ")[1].replace(",", "").replace("$", "")
        return score if answer == ground_truth else format_score


def extract_gsm8k_answer(answer: str) -> str:
    """The final number of a GSM8K ``answer`` field (``... #### 1,234`` -> ``"1234"``)."""
    m = re.search(r"####\s*(-?[0-9.,$]+)", answer)
    if m is None:
        raise ValueError(f"no '#### <number>' in answer {answer[-80:]!r}")
    return m.group(1).replace(",", "").replace("$", "").rstrip(".")


def _read_rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise ValueError(f"math data file {str(path)!r} does not exist")
    if path.suffix == ".parquet":
        import pandas as pd

        return pd.read_parquet(path).to_dict(orient="records")
    if path.suffix in (".jsonl", ".json"):
        rows = []
        with path.open() as f:
            for i, line in enumerate(f):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        raise ValueError(f"{path}:{i + 1}: not JSON: {e}") from None
        return rows
    raise ValueError(f"math data file {str(path)!r}: expected .jsonl or .parquet")


def _to_example(row: dict, instruction: str | None, where: str) -> dict:
    if "question" in row and "answer" in row:
        question, truth = str(row["question"]), extract_gsm8k_answer(str(row["answer"]))
        prompt = f"{question} {instruction}" if instruction else question
    elif "prompt" in row and ("ground_truth" in row or "reward_model" in row):
        prompt = row["prompt"]
        if not isinstance(prompt, str):  # verl: a list of chat messages
            users = [m["content"] for m in list(prompt) if m.get("role") == "user"]
            if not users:
                raise ValueError(f"{where}: prompt has no user message")
            prompt = users[-1]
        truth = row["ground_truth"] if "ground_truth" in row else row["reward_model"]["ground_truth"]
        truth = str(truth).replace(",", "").replace("$", "")
    else:
        raise ValueError(f"{where}: expected question/answer or prompt/ground_truth fields, got {sorted(row)}")
    return {"prompt": prompt, "ground_truth": truth}


def load_math_file(path: str | Path, instruction: str | None = INSTRUCTION) -> list[dict]:
    """All rows of a jsonl/parquet file as ``{"prompt", "ground_truth"}`` examples."""
    path = Path(path).expanduser()
    return [_to_example(r, instruction, f"{path}:{i + 1}") for i, r in enumerate(_read_rows(path))]


def gsm8k_dataset(
    path: str | None = None,
    val_path: str | None = None,
    val_size: int = 4,
    size: int | None = None,
    seed: int = 0,
    instruction: str | None = INSTRUCTION,
) -> dict[str, list[dict]]:
    """Train/val examples. Without ``val_path``, ``val_size`` rows of ``path`` (shuffled with
    ``seed``) become the val split. ``size`` caps the train split."""
    rows = load_math_file(path or SAMPLE_PATH, instruction)
    if val_path:
        train, val = rows, load_math_file(val_path, instruction)
    else:
        if not 0 <= val_size < len(rows):
            raise ValueError(f"val_size={val_size} must be in [0, {len(rows)}) for {path or SAMPLE_PATH}")
        order = np.random.default_rng(seed).permutation(len(rows))
        val = [rows[int(i)] for i in order[:val_size]]
        train = [rows[int(i)] for i in order[val_size:]]
    if size is not None:
        train = train[:size]
    return {"train": train, "val": val}


def gsm8k_reward(prompt: str, response: str, ground_truth: Any) -> float:
    """1.0 if ``#### <number>`` in the response equals the ground truth, else 0.0."""
    truth = str(ground_truth).replace(",", "").replace("$", "")
    return float(_compute_score(response, truth))
