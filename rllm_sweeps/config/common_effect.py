"""Common keys whose value changes nothing in some configurations (a sweep over one of them there runs
identical jobs: sweep/idle_dimensions.py refuses it, as a native setting setting_effect.py calls unused).

    unused_common(key, plain) -> why it changes nothing in the resolved config `plain`, or None
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rllm_sweeps.plain_tree import plain_get_or_none

# The policy losses with no clip: the ratio is used as it is (training/custom_loss.py, SkyRL's registry).
UNCLIPPED_LOSSES = frozenset({"importance_sampling"})


def greedy_validation(plain: dict[str, Any]) -> str | None:
    if plain_get_or_none(plain, "rollout.val.temperature") == 0:
        return "validation is greedy (rollout.val.temperature=0): it takes the most likely token whatever its top_p"
    return None


def unclipped_loss(plain: dict[str, Any]) -> str | None:
    loss = plain_get_or_none(plain, "algorithm.loss_fn")
    if loss in UNCLIPPED_LOSSES:
        return f"the {loss} policy loss has no clip (algorithm.loss_fn={loss})"
    return None


RULES: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "rollout.val.top_p": greedy_validation,
    "algorithm.eps_clip": unclipped_loss,
    "algorithm.eps_clip_high": unclipped_loss,
}


def unused_common(key: str, plain: dict[str, Any]) -> str | None:
    """Why common key `key` changes nothing in `plain` (None: it may change something)."""
    rule = RULES.get(key)
    return None if rule is None else rule(plain)


__all__ = ["RULES", "unused_common"]
