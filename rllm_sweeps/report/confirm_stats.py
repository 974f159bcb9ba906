"""The confirmation stage's statistics: the top configs re-run with fresh seeds, ranked by
mean with a confidence interval, and whether the winner's lead over the runner-up is more
than seed noise (Welch's t-test, scipy's: the replicates' variances need not be equal).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ConfirmedConfig:
    """One config's seed replicates: mean and its confidence interval (None with one seed)."""

    name: str
    values: tuple[float, ...]
    mean: float
    ci: tuple[float, float] | None


@dataclass(frozen=True)
class Confirmation:
    ranking: tuple[ConfirmedConfig, ...]  # best first
    p_value: float | None  # winner against runner-up, two-sided; None without two seeds each
    alpha: float

    @property
    def winner(self) -> ConfirmedConfig | None:
        return self.ranking[0] if self.ranking else None

    @property
    def significant(self) -> bool:
        """Whether the winner's lead over the runner-up is significant at `alpha`."""
        return self.p_value is not None and self.p_value < self.alpha


def confirmed(name: str, values: Sequence[float], confidence: float = 0.95) -> ConfirmedConfig:
    from scipy import stats

    mean = statistics.fmean(values)
    if len(values) < 2:
        return ConfirmedConfig(name, tuple(values), mean, None)
    sem = stats.sem(values)
    if sem == 0:
        return ConfirmedConfig(name, tuple(values), mean, (mean, mean))
    low, high = stats.t.interval(confidence, len(values) - 1, loc=mean, scale=sem)
    return ConfirmedConfig(name, tuple(values), mean, (float(low), float(high)))


def confirm(
    replicates: Mapping[str, Sequence[float]],
    maximize: bool = True,
    confidence: float = 0.95,
    alpha: float = 0.05,
) -> Confirmation:
    """Rank configs (name -> their seeds' final metric) by mean; test the winner against the runner-up.

    Configs without a value are left out; ties keep the order of `replicates` (the search's ranking).
    """
    from scipy import stats

    rows = [confirmed(name, values, confidence) for name, values in replicates.items() if values]
    ranking = tuple(sorted(rows, key=lambda r: -r.mean if maximize else r.mean))
    p_value: float | None = None
    if len(ranking) >= 2 and min(len(ranking[0].values), len(ranking[1].values)) >= 2:
        first, second = ranking[0].values, ranking[1].values
        if statistics.pvariance(first) == 0 and statistics.pvariance(second) == 0:
            # No seed noise at all (Welch's t is undefined): any difference is certain, none is none.
            p_value = 0.0 if ranking[0].mean != ranking[1].mean else 1.0
        else:
            p_value = float(stats.ttest_ind(first, second, equal_var=False).pvalue)
    return Confirmation(ranking, p_value, alpha)
