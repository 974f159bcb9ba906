"""Small data files in the formats users bring (SkyRL's, verl's, rLLM's and its verl copy, plain), written by tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

QUESTIONS = [
    ("Tom has 3 apples and buys 2 more. How many?", "5"),
    ("What is 7 times 6?", "42"),
    ("Ann had 10 pens and lost 4. How many are left?", "6"),
    ("What is 9 plus 8?", "17"),
    ("What is 20 minus 5?", "15"),
    ("What is 3 times 3?", "9"),
    ("What is 12 divided by 4?", "3"),
    ("What is 8 plus 8?", "16"),
]


def skyrl_rows(qs=QUESTIONS, env_class: str | None = "gsm8k") -> list[dict[str, Any]]:
    """SkyRL's examples/gsm8k/gsm8k_dataset.py rows."""
    rows = []
    for i, (q, a) in enumerate(qs):
        row = {"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": q}]}
        if env_class is not None:
            row["env_class"] = env_class
        row |= {"reward_spec": {"method": "rule", "ground_truth": a}, "extra_info": {"split": "train", "index": i}}
        rows.append(row)
    return rows


def verl_rows(qs=QUESTIONS) -> list[dict[str, Any]]:
    """verl's examples/data_preprocess/gsm8k.py rows."""
    return [
        {
            "data_source": "openai/gsm8k",
            "prompt": [{"role": "user", "content": q}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": a},
            "extra_info": {"split": "train", "index": i},
        }
        for i, (q, a) in enumerate(qs)
    ]


def rllm_rows(qs=QUESTIONS) -> list[dict[str, Any]]:
    """rLLM's DatasetRegistry rows (examples/gsm8k/prepare_gsm8k_data.py)."""
    return [{"question": q, "ground_truth": a, "data_source": "gsm8k"} for q, a in qs]


def rllm_verl_copy_rows(qs=QUESTIONS) -> list[dict[str, Any]]:
    """The *_verl.parquet copy DatasetRegistry.register_dataset writes beside them (apply_verl_postprocessing)."""
    return [
        {
            "prompt": [{"role": "user", "content": "placeholder"}],
            "reward_model": {"style": "rule", "ground_truth": None},
            "extra_info": row,
        }
        for row in rllm_rows(qs)
    ]


def plain_rows(qs=QUESTIONS) -> list[dict[str, Any]]:
    return [{"prompt": q, "ground_truth": a} for q, a in qs]


def write_parquet(path: Path, rows: list[dict[str, Any]], schema: pa.Schema | None = None) -> Path:
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    import json

    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
