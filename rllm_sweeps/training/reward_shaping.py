"""What happens to a step's rewards and loss masks between the rollout and the advantages.

In SkyRL's order (skyrl/train/trainer.py):

1. overlong filtering (``rllm.mask_truncated_samples``, SkyRL's generator setting of the same
   meaning): a trajectory whose last response was cut at the length limit carries no loss (SkyRL's
   ``apply_overlong_filtering``);
2. DAPO's overlong buffer penalty (``trainer.algorithm.overlong_buffer_len`` and
   ``overlong_buffer_penalty_factor``, the settings SkyRL's DAPO example adds): a response longer
   than ``max_response_length - overlong_buffer_len`` loses ``factor x excess / buffer_len``
   of reward, at most ``factor`` (its ``apply_dapo_soft_overlong_punishment``; not in the
   installed SkyRL 0.4.0, so the formula is written here: DAPO's eq. 13);
3. the zero-variance filter (``trainer.algorithm.zero_variance_filter``): the groups whose live
   responses all got the same reward (within ``zero_variance_filter_tol``) carry no loss
   (SkyRL's ``zero_variance_filter``).

Masked trajectories still count in their group's advantage statistics (as in SkyRL, where the
mask only zeroes their loss); the loop leaves them out of the update.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rllm_sweeps.training.episodes import GroupKey
from rllm_sweeps.training.settings import CONFIG_KEYS, LoopSettings
from rllm_sweeps.workflows.episode import Trajectory


@dataclass(frozen=True)
class Shaping:
    """What shaping did to one step's trajectories."""

    masked: frozenset[int]  # id() of the trajectories that carry no loss
    overlong_filtered: int  # trajectories masked for being cut at the length limit
    overlong_penalized: int  # trajectories whose reward the overlong buffer lowered
    zero_variance_filtered: int  # groups masked for having no reward signal

    def why_all_masked(self, settings: LoopSettings) -> str:
        """Why a step whose every trajectory shaping masked has nothing to train on."""
        causes = []
        if self.overlong_filtered:
            causes.append(
                f"{self.overlong_filtered} cut at data.max_response_length={settings.max_response_length} by "
                f"overlong filtering ({CONFIG_KEYS['apply_overlong_filtering']})"
            )
        if self.zero_variance_filtered:
            causes.append(
                f"{self.zero_variance_filtered} groups without a reward signal by "
                "trainer.algorithm.zero_variance_filter"
            )
        return "every reply's loss is masked (" + "; ".join(causes) + "): nothing to train on"


def overlong_penalty(response_tokens: int, max_response_length: int, buffer_len: int, factor: float) -> float:
    """DAPO's soft overlong punishment of one response (<= 0)."""
    expected = max_response_length - buffer_len
    excess = response_tokens - expected
    if excess <= 0 or buffer_len <= 0:
        return 0.0
    return min(excess / buffer_len * factor, factor) * -1.0


def shape_rewards(groups: Mapping[GroupKey, list[Trajectory]], settings: LoopSettings) -> Shaping:
    """Apply 1-3 above to ``groups`` in place (rewards) and say which trajectories carry no loss."""
    s = settings
    trajectories = [t for group in groups.values() for t in group]
    masked: set[int] = set()

    overlong = 0
    if s.apply_overlong_filtering:
        from skyrl.train.generators.utils import apply_overlong_filtering

        masks = apply_overlong_filtering(
            [[1] * max(t.response_tokens, 1) for t in trajectories],
            [t.steps[-1].stop_reason if t.steps else "stop" for t in trajectories],
        )
        cut = {id(t) for t, mask in zip(trajectories, masks, strict=True) if not any(mask)}
        overlong = len(cut)
        masked |= cut

    penalized = 0
    if s.overlong_buffer_len is not None:
        for t in {id(t): t for t in trajectories}.values():  # once each (``replace`` repeats some)
            longest = max((len(step.response_ids) for step in t.steps), default=0)
            penalty = overlong_penalty(
                longest, s.max_response_length, s.overlong_buffer_len, s.overlong_buffer_penalty_factor
            )
            if penalty:
                t.reward += penalty
                penalized += 1

    zero_variance = 0
    if s.zero_variance_filter:
        from skyrl.train.utils.trainer_utils import zero_variance_filter

        uids = [str(i) for i, group in enumerate(groups.values()) for _ in group]
        kept = set(
            zero_variance_filter(
                [t.reward for t in trajectories],
                uids,
                loss_masks=[[0] if id(t) in masked else [1] for t in trajectories],
                tol=s.zero_variance_filter_tol,
            )
        )
        dropped = {uids[i] for i in range(len(trajectories)) if i not in kept}
        zero_variance = len(dropped)
        masked |= {id(t) for i, t in enumerate(trajectories) if i not in kept}

    return Shaping(frozenset(masked), overlong, penalized, zero_variance)


__all__ = ["Shaping", "overlong_penalty", "shape_rewards"]
