"""Per-role and per-episode metrics of a phase's episodes (names: rllm_sweeps/records/metrics.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rllm_sweeps.records.metrics import ROLE_METRIC_STATS, role_metric
from rllm_sweeps.workflows.episode import Episode, Termination


def episode_metrics(episodes: Sequence[Episode], prefix: str = "val_") -> dict[str, float]:
    """``<prefix><role>_acc`` / ``_reward_mean`` for each role, and per episode: model calls
    (turns), policy tokens, the share not finished by the environment (truncated), the share failed."""
    if not episodes:
        return {}
    by_role: dict[str, list] = {}
    for e in episodes:
        for t in e.trajectories:
            by_role.setdefault(t.role, []).append(t)
    metrics: dict[str, float] = {}
    for role, trajs in sorted(by_role.items()):
        values = {"acc": np.mean([t.is_correct for t in trajs]), "reward_mean": np.mean([t.reward for t in trajs])}
        for stat in ROLE_METRIC_STATS:
            metrics[role_metric(role, stat, prefix)] = float(values[stat])
    ok = [e for e in episodes if e.termination != Termination.ERROR]
    metrics[f"{prefix}turns_mean"] = float(np.mean([e.turns for e in ok])) if ok else 0.0
    metrics[f"{prefix}tokens_mean"] = (
        float(np.mean([sum(t.response_tokens for t in e.trajectories) for e in ok])) if ok else 0.0
    )
    metrics[f"{prefix}truncated_frac"] = float(
        np.mean([e.termination not in (Termination.ENV_DONE, Termination.ERROR) for e in episodes])
    )
    metrics[f"{prefix}error_frac"] = float(np.mean([e.termination == Termination.ERROR for e in episodes]))
    return metrics


__all__ = ["episode_metrics"]
