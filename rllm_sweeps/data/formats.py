"""The row formats a dataset by path may have, told apart by its columns, and one row read as an example.

- SkyRL's: ``prompt`` (chat messages) and ``reward_spec`` (``ground_truth`` in it), maybe ``env_class``,
  ``extra_info``, ``data_source``; the environment's extras are every column but ``prompt`` and ``env_class``
  (as SkyRL's ``PromptDataset`` passes them);
- verl's: ``prompt`` (chat messages) and ``reward_model`` (``ground_truth`` in it), maybe ``data_source``,
  ``extra_info``, ``ability``;
- rLLM's: ``question`` and ``ground_truth`` (maybe ``data_source``): the rows ``DatasetRegistry`` writes;
- plain: ``prompt`` (text or chat messages) and ``ground_truth``: what ``task=gsm8k`` reads.

The formats without ``reward_spec`` get one built from their ground truth (the shipped skyrl-gym environments
read it there; ``aime`` reads ``reward_model``, which is filled likewise).
rLLM's verl copy of a registered dataset (``*_verl.parquet``) is verl's format with a placeholder prompt and a
null ground truth: its rows are rLLM's rows, kept whole in ``extra_info``, and are read as such.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

# A row's own environment (SkyRL's env_class column); absent or null: environment.env_class.
ENV_CLASS = "env_class"


class DataFormat(enum.Enum):
    SKYRL = "SkyRL's"
    VERL = "verl's"
    RLLM = "rLLM's"
    PLAIN = "plain"


@dataclass(frozen=True)
class FormatSpec:
    format: DataFormat
    prompt: str  # the column the prompt comes from
    truth: tuple[str, ...]  # the ground truth's path in a row (column, then struct fields)


SPECS: tuple[FormatSpec, ...] = (
    FormatSpec(DataFormat.SKYRL, "prompt", ("reward_spec", "ground_truth")),
    FormatSpec(DataFormat.VERL, "prompt", ("reward_model", "ground_truth")),
    FormatSpec(DataFormat.RLLM, "question", ("ground_truth",)),
    FormatSpec(DataFormat.PLAIN, "prompt", ("ground_truth",)),
)
BY_FORMAT = {s.format: s for s in SPECS}
KNOWN = (
    "SkyRL's (prompt as chat messages + reward_spec), verl's (prompt + reward_model), "
    "rLLM's (question + ground_truth) or plain (prompt + ground_truth)"
)


class FormatError(ValueError):
    """The columns fit no format; the message names what is missing."""


def detect(columns: Collection[str]) -> FormatSpec:
    """The format of a file with these columns; FormatError names what is missing."""
    if "prompt" in columns:
        for column, fmt in (("reward_spec", DataFormat.SKYRL), ("reward_model", DataFormat.VERL)):
            if column in columns:
                return BY_FORMAT[fmt]
        if "ground_truth" in columns:
            return BY_FORMAT[DataFormat.PLAIN]
        raise FormatError(
            "missing column 'reward_spec' (SkyRL's format), 'reward_model' (verl's) or 'ground_truth' (plain rows)"
        )
    if "question" in columns:
        if "ground_truth" in columns:
            return BY_FORMAT[DataFormat.RLLM]
        raise FormatError("missing column 'ground_truth' (rLLM's question/ground_truth rows)")
    got = ", ".join(sorted(columns)) or "none"
    raise FormatError(f"no 'prompt' or 'question' column (got {got}): expected {KNOWN}")


def _at(row: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = row
    for part in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def is_rllm_verl_copy(row: Mapping[str, Any]) -> bool:
    """rLLM's verl copy: no ground truth of its own, the registered row whole in extra_info."""
    info = row.get("extra_info")
    return (
        _at(row, ("reward_model", "ground_truth")) is None
        and isinstance(info, Mapping)
        and "ground_truth" in info
        and ("question" in info or "prompt" in info)
    )


def ground_truth(spec: FormatSpec, row: Mapping[str, Any]) -> Any:
    if spec.format is DataFormat.VERL and is_rllm_verl_copy(row):
        return row["extra_info"]["ground_truth"]
    return _at(row, spec.truth)


def to_example(spec: FormatSpec, row: Mapping[str, Any], default_env: str) -> dict[str, Any]:
    """One row as the workflows' example: ``prompt`` (text or chat messages), ``ground_truth``,
    ``env_class`` and ``extras`` (what the environment gets, as SkyRL's generator passes it)."""
    row = dict(row)
    if spec.format is DataFormat.VERL and is_rllm_verl_copy(row):
        return to_example(BY_FORMAT[DataFormat.RLLM], dict(row["extra_info"]), default_env)
    truth = ground_truth(spec, row)
    prompt = row.pop(spec.prompt)
    if not isinstance(prompt, str | list):
        prompt = str(prompt)
    env_class = row.pop(ENV_CLASS, None) or default_env
    extras = row
    # Every shipped skyrl-gym environment reads its ground truth from reward_spec (aime: reward_model).
    extras.setdefault("reward_spec", {"method": "rule", "ground_truth": truth})
    extras.setdefault("reward_model", {"style": "rule", "ground_truth": truth})
    extras.setdefault("extra_info", {})
    return {"prompt": prompt, "ground_truth": truth, ENV_CLASS: env_class, "extras": extras}


__all__ = ["BY_FORMAT", "ENV_CLASS", "SPECS", "DataFormat", "FormatError", "FormatSpec", "detect", "to_example"]
