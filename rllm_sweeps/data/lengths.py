"""Prompt lengths in tokens, as the loop tokenizes prompts (workflows/chat.py), for SkyRL's rule that rows
longer than data.max_prompt_length are dropped. Counted once per (file, tokenizer) and kept in the cache
directory, so the jobs of a sweep, and a sweep over data.max_prompt_length, count nothing again."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from rllm_sweeps.data.files import DataFile, datasets_cache


def tokenizer_id(model_dir: Path) -> str:
    """Which tokenizer: its directory and its files' sizes and times (a rebuilt model counts again)."""
    parts = [str(model_dir.resolve())]
    for f in sorted(model_dir.glob("tokenizer*")) + sorted(model_dir.glob("*template*")):
        st = f.stat()
        parts.append(f"{f.name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


def prompt_lengths(file: DataFile, tokenizer: Any, model_dir: Path) -> np.ndarray:
    """Tokens of each row's prompt (chat template applied where the tokenizer has one), memory-mapped."""
    from rllm_sweeps.workflows.chat import ChatFormat

    path = datasets_cache() / "prompt_lengths" / f"{file.rows._fingerprint}-{tokenizer_id(model_dir)}.npy"
    if path.is_file():
        return np.load(path, mmap_mode="r")
    chat = ChatFormat(tokenizer, chat_template=True)
    lengths = np.empty(len(file.rows), dtype=np.int32)
    at = 0
    for prompts in file.prompts():
        texts = [chat.prompt_text(p) for p in prompts]
        ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
        lengths[at : at + len(ids)] = [len(x) for x in ids]
        at += len(ids)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{np.random.default_rng().integers(1 << 30)}.tmp.npy")
    np.save(tmp, lengths)
    tmp.replace(path)  # atomic: concurrent jobs never read half a file
    return lengths


def load_tokenizer(model_path: str) -> tuple[Any, Path]:
    """The model's tokenizer and directory (a built-in model is built once, as the job does)."""
    from transformers import AutoTokenizer

    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path

    model_dir = resolve_model_path(model_path, cache_dir())
    return AutoTokenizer.from_pretrained(str(model_dir)), model_dir


__all__ = ["load_tokenizer", "prompt_lengths", "tokenizer_id"]
