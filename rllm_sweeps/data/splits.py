"""A split (data.train_files or data.val_files) opened: its files, its rows less those longer than
data.max_prompt_length (SkyRL's PromptDataset drops them too), and what was found, said once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rllm_sweeps.data.files import DataFile, Examples


@dataclass(frozen=True)
class OpenedSplit:
    examples: Examples
    dropped: int  # rows longer than data.max_prompt_length
    rows: int  # rows in the files

    def note(self, key: str, max_prompt_length: int) -> str:
        formats = "; ".join(f.describe() for f in self.examples.files)
        dropped = (
            f"; {self.dropped:,} of {self.rows:,} rows longer than data.max_prompt_length={max_prompt_length} "
            "tokens dropped (as SkyRL does)"
            if self.dropped
            else ""
        )
        return f"data: {key}: {formats}{dropped}"


def open_split(
    files: list[DataFile], default_env: str, max_prompt_length: int, tokenizer: Any, model_dir: Path
) -> OpenedSplit:
    from rllm_sweeps.data.lengths import fitting_rows

    kept, start = [], 0
    for f in files:
        kept.append(np.flatnonzero(fitting_rows(f, tokenizer, model_dir, max_prompt_length)) + start)
        start += len(f.rows)
    indices = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
    return OpenedSplit(Examples(files, indices, default_env), dropped=start - len(indices), rows=start)


__all__ = ["OpenedSplit", "open_split"]
