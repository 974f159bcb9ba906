"""Aligned plain-text tables through rich: the same text on a terminal, under pytest and in a log.

    print("\n".join(text_table([["#", "status"], ["0", "completed"]], right={0})))

No colour, no borders, columns two spaces apart, trailing blanks stripped; the console is wide
enough that only `max_width` ever cuts a cell (with '…'), never the terminal's width.
"""

from __future__ import annotations

import io
from collections.abc import Collection, Mapping, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text


def text_table(
    rows: Sequence[Sequence[str]], right: Collection[int] = (), max_width: Mapping[int, int] | None = None
) -> list[str]:
    """`rows[0]` is the header; columns in `right` are right-aligned; a cell of column i wider than
    `max_width[i]` is cut to it, ending in '…'."""
    table = Table(box=None, pad_edge=False, header_style="")
    for i, head in enumerate(rows[0]):
        justify = "right" if i in right else "left"
        width = (max_width or {}).get(i)
        table.add_column(Text(head), justify=justify, no_wrap=True, overflow="ellipsis", max_width=width)
    for row in rows[1:]:
        table.add_row(*map(Text, row))  # Text: a cell's '[...]' or ':x:' is not rich markup or emoji
    console = Console(file=io.StringIO(), width=1_000_000, color_system=None, force_terminal=False, force_jupyter=False)
    with console.capture() as capture:
        console.print(table)
    return [line.rstrip() for line in capture.get().splitlines()]


__all__ = ["text_table"]
