"""A generated table kept inside a hand-written doc, between two marker lines (the settings table in
docs/CONFIG.md, the submitit and hydra-optuna-sweeper field tables in docs/SLURM.md and docs/OPTUNA.md)."""

from __future__ import annotations


def between_markers(doc: str, begin: str, end: str, text: str) -> str:
    """`doc` with what lies between the line `begin` and `end` replaced by `text` (ending in a newline)."""
    head, _, rest = doc.partition(begin)
    _, _, tail = rest.partition(end)
    return f"{head}{begin}\n{text}{end}{tail}"


__all__ = ["between_markers"]
