"""Each row's templated prompt's bytes, bounded from above without rendering the chat template per row.

A chat template wraps each message's content in text that depends on the messages' roles, not on what they
say (Qwen's ``<|im_start|>user\\n{content}<|im_end|>\\n``). So for one sequence of roles the templated text has
a fixed number of bytes besides the contents: found by rendering that sequence once with marker contents, and
trusted only where two renderings with markers of different lengths each hold every marker once, in order,
and add the same bytes (the contents go in verbatim; a template that trims or cuts a content only makes the
text shorter). A row's bound is then that overhead plus its contents' bytes, computed column-wise by Arrow for
a million rows in well under a second, where rendering jinja takes about 12 us a row. Rows of another shape
(messages with fields besides role and content, rLLM's verl copy, a template that rewrites contents) get no
bound and are rendered as before (data/lengths.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from rllm_sweeps.data.files import DataFile

UNBOUNDED = np.iinfo(np.int64).max
MAX_MESSAGES = 64  # rows with more messages are rendered: the shapes matrix stays small


def content_bytes(texts: Any, normalization: str | None) -> np.ndarray:
    """Bytes of each text of an Arrow string array after ``normalization`` (None: as is)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = texts.cast(pa.large_string())
    if normalization is not None:
        arr = pc.utf8_normalize(arr, normalization)
    return pc.binary_length(arr).to_numpy(zero_copy_only=False).astype(np.int64)


def row_bounds(file: DataFile, chat: Any, normalization: str | None) -> np.ndarray:
    """Per row, at most how many bytes its templated prompt has (after ``normalization``), or UNBOUNDED."""
    import pyarrow as pa

    n = len(file.rows)
    if file.rllm_copy:
        return np.full(n, UNBOUNDED, dtype=np.int64)
    column = file.rows.data.table.column(file.spec.prompt).combine_chunks()
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        if column.null_count:
            return np.full(n, UNBOUNDED, dtype=np.int64)
        overhead = _overhead(chat, ("user",), normalization)
        if overhead is None:
            return np.full(n, UNBOUNDED, dtype=np.int64)
        return content_bytes(column, normalization) + overhead
    return _message_bounds(column, chat, normalization, n)


def _message_bounds(column: Any, chat: Any, normalization: str | None, n: int) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    unbounded = np.full(n, UNBOUNDED, dtype=np.int64)
    if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
        return unbounded
    item = column.type.value_type
    if not pa.types.is_struct(item) or sorted(item.field(i).name for i in range(item.num_fields)) != [
        "content",
        "role",
    ]:
        return unbounded  # other fields (a tool call, a name) may reach the template
    if column.null_count:
        return unbounded
    messages = column.flatten()
    contents, roles = messages.field("content"), messages.field("role")
    if contents.null_count or roles.null_count:
        return unbounded
    parent = pc.list_parent_indices(column).to_numpy()
    offsets = column.offsets.to_numpy()
    sizes = np.diff(offsets)
    longest = int(sizes.max(initial=0))
    if longest > MAX_MESSAGES:
        return unbounded
    contents_total = np.bincount(parent, weights=content_bytes(contents, normalization), minlength=n)
    # Each row's roles as a row of codes (-1 past its last message): its shape, one template rendering each.
    encoded = pc.dictionary_encode(roles)
    names = encoded.dictionary.to_pylist()
    codes = np.full((n, max(longest, 1)), -1, dtype=np.int16)
    position = np.arange(len(parent)) - np.repeat(offsets[:-1], sizes)
    codes[parent, position] = encoded.indices.to_numpy()
    shapes, shape_of_row = np.unique(codes, axis=0, return_inverse=True)
    overheads = np.array(
        [_overhead_or_unbounded(chat, tuple(names[c] for c in shape if c >= 0), normalization) for shape in shapes],
        dtype=np.int64,
    )
    per_row = overheads[shape_of_row.reshape(-1)]
    return np.where(per_row == UNBOUNDED, UNBOUNDED, per_row + contents_total.astype(np.int64))


def _overhead_or_unbounded(chat: Any, roles: tuple[str, ...], normalization: str | None) -> int:
    overhead = _overhead(chat, roles, normalization)
    return UNBOUNDED if overhead is None else overhead


def _overhead(chat: Any, roles: tuple[str, ...], normalization: str | None) -> int | None:
    """The bytes the template adds to contents of these roles, or None when it does not insert them verbatim."""
    added = set()
    for width in (0, 7):  # markers of two lengths: the overhead must not depend on the contents
        markers = [f"\u27e6{i}{'x' * width}\u27e7" for i in range(len(roles))]
        try:
            text = chat.prompt_text([{"role": r, "content": m} for r, m in zip(roles, markers, strict=True)])
        except Exception:  # a template that refuses this sequence of roles: render rows one by one, as before
            return None
        at = 0
        for m in markers:
            found = text.find(m, at)
            if found < 0 or text.count(m) != 1:
                return None
            at = found + len(m)
        added.add(_bytes(text, normalization) - sum(_bytes(m, normalization) for m in markers))
    return added.pop() if len(added) == 1 else None


def _bytes(text: str, normalization: str | None) -> int:
    import unicodedata

    return len((unicodedata.normalize(normalization, text) if normalization else text).encode())


__all__ = ["UNBOUNDED", "content_bytes", "row_bounds"]
