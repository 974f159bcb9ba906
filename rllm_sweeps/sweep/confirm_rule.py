"""The confirmation stage's rule, pure: which points it re-runs and which one it then selects.

sweep/confirm.py applies it to a sweep's records; bench/search_peers.py applies the same functions
to simulated searches (issue 47), so what the bench measures is this rule, not a copy of it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from rllm_sweeps.report.confirm_stats import confirm


def top_points[K: Hashable](means: Mapping[K, float], top: int, maximize: bool = True) -> list[K]:
    """The `top` points by their search mean (best first); ties keep the mapping's order (plan order)."""
    sign = -1.0 if maximize else 1.0
    return sorted(means, key=lambda k: sign * means[k])[:top]  # sorted is stable


def confirmed_best(replicates: Mapping[str, Sequence[float]], maximize: bool = True) -> str | None:
    """The point the stage selects: the best mean over its fresh seeds (report/confirm_stats.py's ranking)."""
    winner = confirm(replicates, maximize=maximize).winner
    return winner.name if winner is not None else None
