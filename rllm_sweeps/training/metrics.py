"""What a training step and a validation report: the ``train`` and ``val`` records of metrics.jsonl.

:func:`train_metrics` builds a step's from a :class:`StepOutcome` (its episodes, groups,
advantages, one :class:`MiniBatchStats` per optimizer step, its :class:`StepTimes`);
:func:`val_metrics` a validation's. Per-role and per-episode metrics are the workflows' own
(workflows/metrics.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rllm_sweeps.records.result import PHASES, phase_metric
from rllm_sweeps.training.datums import Datum
from rllm_sweeps.training.dynamic_sampling import SampledBatch
from rllm_sweeps.training.episodes import GroupKey, ScoredTrajectory
from rllm_sweeps.training.kl_reward import RewardKL
from rllm_sweeps.training.reward_shaping import Shaping
from rllm_sweeps.training.settings import LoopSettings
from rllm_sweeps.training.timers import PhaseTimer
from rllm_sweeps.workflows.episode import Episode, Trajectory
from rllm_sweeps.workflows.metrics import episode_metrics


@dataclass
class MiniBatchStats:
    """One optimizer step's numbers."""

    loss: float  # the backend's objective (mean_seq_loss)
    is_ratio_mean: float  # importance ratio train / sampler on the trained tokens
    clip_frac: float  # share of those ratios outside the clip range
    logprob_diff_abs_mean: float
    tokens: int  # input tokens of the datums
    kl: float | None = None  # mean log-ratio to the reference (with a KL penalty)
    grad_norm: float | None = None  # where the backend reports it

    @classmethod
    def measure(cls, out: Any, datums: Sequence[Datum], low: float, high: float, kl: float | None) -> MiniBatchStats:
        """The stats of ``forward_backward``'s output ``out`` on ``datums`` (clip range [low, high])."""
        ratio, clipped, diff = ratio_stats(out, datums, low, high)
        return cls(mean_seq_loss(out, datums), ratio, clipped, diff, sum(len(d.inputs) for d in datums), kl)


@dataclass(frozen=True)
class StepTimes:
    """Seconds of a step's phases (``other``: the rest of the step, rewards and sync included)."""

    sample: float  # in backend.sample
    forward_backward: float
    optim: float
    reward: float  # the workflow's own time: rewards, environments
    sync: float  # publishing the weights to the sampler
    ref_forward: float  # the KL reference's forward passes
    step: float

    @classmethod
    def from_timer(cls, timer: PhaseTimer) -> StepTimes:
        """From the step's timer: phases ``rollout`` (with ``sample`` inside it), ``forward_backward``,
        ``optim``, ``ref_forward``, ``sync``."""
        return cls(
            sample=timer["sample"],
            forward_backward=timer["forward_backward"],
            optim=timer["optim"],
            reward=timer["rollout"] - timer["sample"],
            sync=timer["sync"],
            ref_forward=timer["ref_forward"],
            step=timer.elapsed(),
        )

    def phase_seconds(self) -> dict[str, float]:
        """The step's seconds by result.json's phases (records/result.py's PHASES)."""
        other = self.step - self.sample - self.forward_backward - self.optim
        return dict(zip(PHASES, (self.sample, self.forward_backward, self.optim, other), strict=True))


@dataclass
class StepOutcome:
    """What one training step did."""

    step: int  # 1-based
    epoch: int
    lr: float
    episodes: list[Episode]  # every episode rolled out
    groups: Mapping[GroupKey, list[Trajectory]]  # what was trained on
    scored: list[ScoredTrajectory]
    updates: list[MiniBatchStats]  # one per optimizer step
    times: StepTimes
    shaping: Shaping | None = None
    sampled: SampledBatch | None = None  # with dynamic sampling
    reward_kl: RewardKL | None = None  # with the KL in the reward
    skipped: str | None = None  # why the step trained on nothing


def train_metrics(o: StepOutcome, settings: LoopSettings, *, per_episode: bool) -> dict[str, Any]:
    """A step's metrics (``per_episode``: the workflow's per-role and per-episode ones, ``train_*``).

    ``reward_*`` are the rewards trained on (after dynamic sampling and the overlong penalty). With
    SkyRL's trainer settings on, SkyRL's metrics of them (its names, ``/`` as ``_``):
    ``dynamic_sampling_{batches,kept_groups,dropped_groups}``, ``overlong_filtered``,
    ``overlong_penalized``, ``num_zero_variance_filtered`` (SkyRL's
    ``reward/num_zero_variance_filtered``), ``avg_kl``, ``avg_kl_max``, ``kl_loss_coef``."""
    s = settings
    rewards = np.array([t.trajectory.reward for t in o.scored], dtype=np.float64)
    adv = np.array([t.advantage for t in o.scored], dtype=np.float64)
    steps = [st for e in o.episodes for tr in e.trajectories for st in tr.steps]
    resp_lens = np.array([len(st.response_ids) for st in steps])
    t = o.times
    metrics: dict[str, Any] = {
        "step": o.step,
        "epoch": o.epoch,
        "lr": o.lr,
        "reward_mean": _mean_or_nan(rewards),
        "reward_std": float(rewards.std()) if len(rewards) else math.nan,
        "reward_max": float(rewards.max()) if len(rewards) else math.nan,
        "frac_groups_all_equal": _mean_or_nan([_all_equal(g) for g in o.groups.values()]),
        "advantage_abs_mean": _mean_or_nan(np.abs(adv)),
        "loss": _mean_or_nan([u.loss for u in o.updates]),
        "grad_norm": _mean_or_nan([u.grad_norm for u in o.updates if u.grad_norm is not None]),
        "is_ratio_mean": _mean_or_nan([u.is_ratio_mean for u in o.updates]),
        "clip_frac": _mean_or_nan([u.clip_frac for u in o.updates]),
        "logprob_diff_abs_mean": _mean_or_nan([u.logprob_diff_abs_mean for u in o.updates]),
        "response_length_mean": float(resp_lens.mean()) if len(steps) else math.nan,
        "frac_stopped": float(np.mean([st.stop_reason == "stop" for st in steps])) if steps else math.nan,
        "prompts_truncated": sum(e.prompt_truncated for e in o.episodes if e.rollout_index == 0),
        "tokens_sampled": int(resp_lens.sum()),
        "tokens_trained": int(sum(u.tokens for u in o.updates)),
        **{phase_metric(phase): seconds for phase, seconds in t.phase_seconds().items()},
        "time_reward_s": t.reward,
        "time_sync_s": t.sync,
        "time_step_s": t.step,
    }
    if per_episode:
        metrics.update(episode_metrics(o.episodes, prefix="train_"))
    if s.update_epochs_per_batch > 1:
        metrics["optimizer_steps"] = len(o.updates)
    if s.kl_active:
        metrics["kl"] = _mean_or_nan([u.kl for u in o.updates])
    if s.needs_reference:
        metrics["time_ref_forward_s"] = t.ref_forward
    if o.sampled is not None:
        metrics["dynamic_sampling_batches"] = o.sampled.sample_batches
        metrics["dynamic_sampling_kept_groups"] = o.sampled.kept_groups
        metrics["dynamic_sampling_dropped_groups"] = o.sampled.dropped_groups
    if o.shaping is not None:
        if s.apply_overlong_filtering:
            metrics["overlong_filtered"] = o.shaping.overlong_filtered
        if s.overlong_buffer_len is not None:
            metrics["overlong_penalized"] = o.shaping.overlong_penalized
        if s.zero_variance_filter:
            metrics["num_zero_variance_filtered"] = o.shaping.zero_variance_filtered
    if o.skipped is not None:
        metrics["skipped"] = o.skipped  # a step that trained on nothing, and why
    if o.reward_kl is not None:
        metrics.update(avg_kl=o.reward_kl.avg_kl, avg_kl_max=o.reward_kl.avg_kl_max, kl_loss_coef=o.reward_kl.coef)
    return metrics


def val_metrics(step: int, episodes: Sequence[Episode], seconds: float, *, per_episode: bool) -> dict[str, Any]:
    """A validation's metrics: the mean trajectory reward and its spread, response lengths."""
    trajectories = [t for e in episodes for t in e.trajectories]
    r = np.array([t.reward for t in trajectories]) if trajectories else np.array([math.nan])
    lengths = [len(st.response_ids) for t in trajectories for st in t.steps]
    metrics: dict[str, Any] = {
        "step": step,
        "val_reward_mean": float(r.mean()),
        "val_reward_std": float(r.std()),
        "val_response_length_mean": float(np.mean(lengths)) if lengths else math.nan,
        "val_num_samples": len(trajectories),
        "time_val_s": seconds,
    }
    if per_episode:
        metrics.update(episode_metrics(episodes, prefix="val_"))
    return metrics


def mean_seq_loss(out: Any, datums: Sequence[Datum]) -> float:
    """The backend's objective: mean over sequences of (sum of token losses / response tokens).

    SkyRL's GPU trainer returns no per-token losses for RL losses; it reports the objective
    (already reduced by the loop's scaling) as a metric."""
    if out.loss_fn_outputs and "elementwise_loss" not in out.loss_fn_outputs[0]:
        return float((out.metrics or {}).get("total_loss:sum", math.nan))
    per_seq = []
    for d, o in zip(datums, out.loss_fn_outputs, strict=True):
        el = np.asarray(o["elementwise_loss"]["data"])[d.trained_positions()]
        per_seq.append(float(el.sum()) / max(d.trained_tokens, 1))
    return float(np.mean(per_seq)) if per_seq else 0.0


def ratio_stats(out: Any, datums: Sequence[Datum], low: float, high: float) -> tuple[float, float, float]:
    """(mean importance ratio, fraction outside [low, high], mean |logp_train - logp_sample|)."""
    diffs = []
    for d, o in zip(datums, out.loss_fn_outputs, strict=True):
        sl = d.trained_positions()
        diffs.append(np.asarray(o["logprobs"]["data"])[sl] - np.asarray(d.logprobs)[sl])
    if not diffs:
        return 1.0, 0.0, 0.0
    diff = np.concatenate(diffs)
    ratio = np.exp(diff)
    return float(ratio.mean()), float(np.mean((ratio < low) | (ratio > high))), float(np.abs(diff).mean())


def _mean_or_nan(xs: Sequence[float] | np.ndarray) -> float:
    return float(np.mean(xs)) if len(xs) else math.nan


def _all_equal(group: Sequence[Trajectory]) -> bool:
    rewards = [t.reward for t in group]
    return max(rewards) == min(rewards)


__all__ = [
    "MiniBatchStats",
    "StepOutcome",
    "StepTimes",
    "mean_seq_loss",
    "ratio_stats",
    "train_metrics",
    "val_metrics",
]
