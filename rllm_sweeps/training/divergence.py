"""A non-finite number in training is the end of the run, said where it first appeared.

Once a loss or a gradient is NaN or infinite, the optimizer writes it into the weights and every
later sample, loss and reward is meaningless: a job that went on would report "completed" with a
broken model, and a sweep would rank it among the others. The loop checks each quantity as it is
produced, in the order a step produces them (the rewards the workflow set, the sampler's
log-probabilities, each mini batch's loss and ratios before its optimizer step, its gradient norm
after it; a validation's rewards) and raises :class:`Diverged` at the first that is not finite. The
step's aggregated metrics are not checked: there NaN also stands for "none" (no update in a step
whose groups were all filtered, no response). The job records it as failed with the
``diverged`` kind (records/status.py), the step, the quantity and the fix to try (result.json's
``divergence``: records/result.py's ``Divergence``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

from rllm_sweeps.records.result import Divergence


class Diverged(RuntimeError):
    """Training produced a non-finite number; ``divergence`` says where."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.message())
        self.divergence = divergence


def first_non_finite(quantities: Iterable[tuple[str, object]]) -> tuple[str, float] | None:
    """The first (name, value) whose value is a number that is not finite (None, ints, text: skipped)."""
    for name, value in quantities:
        if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and not math.isfinite(value):
            return name, float(value)
    return None


def check_finite(quantities: Iterable[tuple[str, object]], step: int, where: str) -> None:
    """Raise :class:`Diverged` at the first non-finite quantity of ``quantities``."""
    found = first_non_finite(quantities)
    if found is not None:
        raise Diverged(Divergence(step, found[0], str(found[1]), where))


__all__ = ["Divergence", "Diverged", "check_finite", "first_non_finite"]
