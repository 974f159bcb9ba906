"""Which rows fit data.max_prompt_length (SkyRL drops the longer ones), in tokens as the loop tokenizes prompts
(workflows/chat.py).

Tokenizing a million prompts, and rendering their chat template, is most of the check's time, so both are
skipped where they cannot change the answer: with a byte-level BPE tokenizer (each token covers at least one
byte of the text: Qwen's, Llama 3's, GPT's) a prompt has at most as many tokens as its templated text has
bytes, and that text's bytes are bounded column-wise from its contents' (data/template_bytes.py), so a row
whose bound is within the limit is kept unrendered and uncounted; only the others are rendered, and tokenized
where their rendered bytes do not decide. Kept in the cache directory per (file, tokenizer), each row's
count or its bound, so later jobs of a sweep count nothing again and a smaller limit counts only the rows the
bound no longer decides."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rllm_sweeps.data.files import DataFile, datasets_cache
from rllm_sweeps.data.template_bytes import content_bytes, row_bounds

# A cached entry: >= 0, the row's tokens; < 0, not counted and at most (-entry - 1) tokens.
BATCH = 4096  # prompts rendered (and tokenized) at a time


def tokenizer_id(model_dir: Path) -> str:
    """Which tokenizer: its directory and its files' sizes and times (a rebuilt model counts again)."""
    parts = [str(model_dir.resolve())]
    for f in sorted(model_dir.glob("tokenizer*")) + sorted(model_dir.glob("*template*")):
        st = f.stat()
        parts.append(f"{f.name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.blake2b("|".join(parts).encode(), digest_size=8).hexdigest()


@dataclass(frozen=True)
class ByteBound:
    """A text has at most as many tokens as bytes, measured after this Unicode normalization (None: as is)."""

    normalization: str | None


def byte_bound(tokenizer: Any) -> ByteBound | None:
    """How a text's bytes bound its tokens, or None when they do not (a normalizer or pre-tokenizer that adds
    text, such as a prefix space or Metaspace's marker, or no fast tokenizer)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    tree = json.loads(backend.to_str())
    normalizer = tree.get("normalizer")
    if normalizer is not None and normalizer.get("type") not in ("NFC", "NFKC"):  # those are measured after
        return None
    pre = tree.get("pre_tokenizer") or {}
    parts = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    byte_level = [p for p in parts if p.get("type") == "ByteLevel"]
    if tree.get("model", {}).get("type") != "BPE" or not byte_level:
        return None
    if any(p.get("type") not in ("ByteLevel", "Split", "Digits", "Punctuation") for p in parts):
        return None  # e.g. Metaspace, which prepends a marker
    if any(p.get("add_prefix_space") for p in byte_level):
        return None  # a space before each piece between special tokens
    return ByteBound(normalizer["type"] if normalizer else None)


def _bytes(texts: list[str], form: str | None) -> np.ndarray:
    import pyarrow as pa

    return content_bytes(pa.array(texts, pa.large_string()), form)


def fitting_rows(file: DataFile, tokenizer: Any, model_dir: Path, limit: int) -> np.ndarray:
    """A mask of the file's rows whose prompt (chat template applied where the tokenizer has one) has at most
    ``limit`` tokens."""
    from rllm_sweeps.workflows.chat import ChatFormat

    chat = ChatFormat(tokenizer, chat_template=True)
    path = datasets_cache() / "prompt_lengths" / f"{file.rows._fingerprint}-{tokenizer_id(model_dir)}.npy"
    if path.is_file():
        entries = np.load(path, mmap_mode="r")
        undecided = np.flatnonzero(entries < -1 - limit)
        if len(undecided) == 0:
            return _fits(entries, limit)
        entries, at = np.array(entries), 0
        for prompts in file.prompts(BATCH, undecided):
            entries[undecided[at : at + len(prompts)]] = _count(chat, chat.prompt_texts(prompts))
            at += len(prompts)
    else:
        entries = _first_pass(file, chat, byte_bound(tokenizer), limit)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{np.random.default_rng().integers(1 << 30)}.tmp.npy")
    np.save(tmp, entries)
    tmp.replace(path)  # atomic: concurrent jobs never read half a file
    return _fits(entries, limit)


def _first_pass(file: DataFile, chat: Any, bound: ByteBound | None, limit: int) -> np.ndarray:
    entries = np.empty(len(file.rows), dtype=np.int32)
    if bound is not None:  # most rows decided from the contents' bytes, the template not rendered for them
        most = row_bounds(file, chat, bound.normalization)
        decided = most <= limit
        entries[decided] = -1 - most[decided]
        rest = np.flatnonzero(~decided)
        at = 0
        for prompts in file.prompts(BATCH, rest if len(rest) < len(most) else None):
            texts = chat.prompt_texts(prompts)
            entries[rest[at : at + len(texts)]] = _bounded_or_counted(chat, texts, bound, limit)
            at += len(texts)
        return entries
    at = 0
    for prompts in file.prompts(batch_size=BATCH):
        texts = chat.prompt_texts(prompts)
        entries[at : at + len(texts)] = _count(chat, texts)
        at += len(texts)
    return entries


def _bounded_or_counted(chat: Any, texts: list[str], bound: ByteBound, limit: int) -> np.ndarray:
    """Each rendered text's entry: its byte bound where that decides the limit, else its tokens."""
    most = _bytes(texts, bound.normalization)
    out = -1 - most.astype(np.int32)
    over = np.flatnonzero(most > limit)  # the bound does not decide these: count them
    if len(over):
        out[over] = _count(chat, [texts[i] for i in over])
    return out


def _count(chat: Any, texts: list[str]) -> np.ndarray:
    ids = chat.tokenizer(texts, add_special_tokens=False)["input_ids"]
    return np.fromiter((len(x) for x in ids), dtype=np.int32, count=len(ids))


def _fits(entries: np.ndarray, limit: int) -> np.ndarray:
    return np.where(entries >= 0, entries <= limit, entries >= -1 - limit)


def load_tokenizer(model_path: str) -> tuple[Any, Path]:
    """The model's tokenizer and directory (a built-in model is built once, as the job does)."""
    from transformers import AutoTokenizer

    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path

    model_dir = resolve_model_path(model_path, cache_dir())
    return AutoTokenizer.from_pretrained(str(model_dir)), model_dir


__all__ = ["ByteBound", "byte_bound", "fitting_rows", "load_tokenizer", "tokenizer_id"]
