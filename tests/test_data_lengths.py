"""data.max_prompt_length on a dataset by path: the rows kept are those whose templated prompt has at most that
many tokens, whether counted or decided by the byte bound, for any sequence of limits over one cached file."""

from __future__ import annotations

import numpy as np
import pytest
from data_files import write_parquet

from rllm_sweeps.data import lengths
from rllm_sweeps.data.files import DataFile
from rllm_sweeps.data.lengths import ByteBound, byte_bound, fitting_rows, load_tokenizer
from rllm_sweeps.workflows.chat import ChatFormat

TEXTS = [
    "What is 7 times 6?",
    "Tom has 3 apples and buys 2 more. How many apples does he have now? " * 4,
    "汤姆有三个苹果，又买了两个。他现在有几个？",
    "🍎🍎🍎 + 🍎🍎 = ?",
    "e\u0301 ñ Å 한국어 ﷺ ½ ２３",
    "1",
    "  spaced   out\n\nlines\t\t",
    "<|im_start|>user\nliteral special tokens<|im_end|>",
    "x" * 300,
]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("builtin:tiny-qwen3")


def test_a_prompt_never_has_more_tokens_than_its_byte_bound(tokenizer):
    tok, _ = tokenizer
    bound = byte_bound(tok)
    assert bound is not None  # Qwen's tokenizer is byte-level BPE
    chat = ChatFormat(tok, chat_template=True)
    for text in TEXTS:
        rendered = chat.prompt_text(text)
        assert len(chat.encode(rendered)) <= len(rendered.encode()), text


def test_the_rows_kept_are_those_within_the_limit_whatever_limits_came_before(tmp_path, monkeypatch, tokenizer):
    tok, model_dir = tokenizer
    monkeypatch.setattr(lengths, "datasets_cache", lambda: tmp_path / "cache")
    rows = [{"prompt": [{"role": "user", "content": t}], "ground_truth": str(i)} for i, t in enumerate(TEXTS)]
    f = DataFile.open(str(write_parquet(tmp_path / "rows.parquet", rows)))
    chat = ChatFormat(tok, chat_template=True)
    tokens = np.array([len(chat.prompt_ids(t)) for t in TEXTS])
    for limit in (1000, 200, 60, 120, 1000):
        assert fitting_rows(f, tok, model_dir, limit).tolist() == (tokens <= limit).tolist(), limit
    entries = np.load(next((tmp_path / "cache").glob("prompt_lengths/*.npy")))
    # Counted: the rows some limit fell below the byte bound of; the rest were decided by it, uncounted.
    assert (entries >= 0).any() and (entries < 0).any()
    assert (entries[entries >= 0] == tokens[entries >= 0]).all()


def test_a_large_limit_counts_no_row(tmp_path, monkeypatch, tokenizer):
    tok, model_dir = tokenizer
    monkeypatch.setattr(lengths, "datasets_cache", lambda: tmp_path / "cache")
    rows = [{"prompt": t, "ground_truth": "0"} for t in TEXTS]
    f = DataFile.open(str(write_parquet(tmp_path / "rows.parquet", rows)))
    monkeypatch.setattr(lengths, "_count", lambda chat, texts: pytest.fail("counted tokens"))
    assert fitting_rows(f, tok, model_dir, 4096).all()


def test_a_tokenizer_that_adds_text_to_what_it_reads_gets_no_byte_bound():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    def bound(pre, normalizer=None):
        t = Tokenizer(models.BPE())
        t.pre_tokenizer = pre
        if normalizer is not None:
            t.normalizer = normalizer
        return byte_bound(PreTrainedTokenizerFast(tokenizer_object=t))

    assert bound(pre_tokenizers.ByteLevel(add_prefix_space=False)) == ByteBound(None)
    assert bound(pre_tokenizers.ByteLevel(add_prefix_space=False), normalizers.NFC()) == ByteBound("NFC")
    assert bound(pre_tokenizers.ByteLevel(add_prefix_space=True)) is None
    assert bound(pre_tokenizers.Metaspace()) is None
    assert bound(pre_tokenizers.ByteLevel(add_prefix_space=False), normalizers.Prepend("_")) is None


SHAPES = [
    lambda t: t,  # a plain string: one user message
    lambda t: [{"role": "user", "content": t}],
    lambda t: [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": t}],
    lambda t: [
        {"role": "user", "content": t},
        {"role": "assistant", "content": "Let me think."},
        {"role": "user", "content": t[::-1]},
    ],
]


@pytest.mark.parametrize("normalization", [None, "NFKC"])
def test_a_rows_column_wise_bound_is_never_below_its_templated_prompts_bytes(tmp_path, tokenizer, normalization):
    from rllm_sweeps.data.template_bytes import UNBOUNDED, row_bounds

    tok, _ = tokenizer
    chat = ChatFormat(tok, chat_template=True)
    for s, shape in enumerate(SHAPES):
        prompts = [shape(t) for t in TEXTS]
        rows = [{"prompt": p, "ground_truth": "0"} for p in prompts]
        f = DataFile.open(str(write_parquet(tmp_path / f"{s}.parquet", rows)))
        bounds = row_bounds(f, chat, normalization)
        actual = lengths._bytes(chat.prompt_texts(prompts), normalization)
        assert (bounds != UNBOUNDED).all(), s
        assert (bounds >= actual).all(), (s, bounds, actual)
        assert (bounds - actual <= 8).all(), (s, bounds - actual)  # tight: only what normalizing shortens


def test_a_template_that_rewrites_contents_gets_no_bound_and_its_rows_are_rendered(tmp_path, monkeypatch, tokenizer):
    from rllm_sweeps.data.template_bytes import UNBOUNDED, row_bounds

    tok, model_dir = tokenizer
    chat = ChatFormat(tok, chat_template=True)
    monkeypatch.setattr(
        tok, "chat_template", "{% for m in messages %}{{ m['content'] }}{{ m['content'] }}{% endfor %}", raising=False
    )
    rows = [{"prompt": [{"role": "user", "content": t}], "ground_truth": "0"} for t in TEXTS]
    f = DataFile.open(str(write_parquet(tmp_path / "rows.parquet", rows)))
    assert (row_bounds(f, chat, None) == UNBOUNDED).all()  # each content twice: the overhead is not fixed
    monkeypatch.setattr(lengths, "datasets_cache", lambda: tmp_path / "cache")
    tokens = np.array([len(chat.prompt_ids(t)) for t in TEXTS])
    assert fitting_rows(f, tok, model_dir, 40).tolist() == (tokens <= 40).tolist()


def test_a_large_limit_renders_no_prompt_of_a_messages_column(tmp_path, monkeypatch, tokenizer):
    tok, model_dir = tokenizer
    monkeypatch.setattr(lengths, "datasets_cache", lambda: tmp_path / "cache")
    rows = [{"prompt": SHAPES[2](t), "ground_truth": "0"} for t in TEXTS]
    f = DataFile.open(str(write_parquet(tmp_path / "rows.parquet", rows)))
    monkeypatch.setattr(ChatFormat, "prompt_texts", lambda self, prompts: pytest.fail(f"rendered {len(prompts)}"))
    assert fitting_rows(f, tok, model_dir, 4096).all()
