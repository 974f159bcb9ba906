"""From episodes to training data: groups by (task, role), advantages per group, token sequences.

    episodes -> group_trajectories -> {(task, role): [trajectories]}      (rLLM's task_id:trajectory_name)
             -> assign_advantages (algorithm.adv_estimator, or workflow.role_estimators[role])
             -> trajectory_sequences: one sequence per run of steps that continue each other
             -> mini_batches (data.train_batch_size / trainer.mini_batch_size of them, over trajectories)
             -> datums (datums.py): next-token examples, loss only on the policy's own tokens

A trajectory's steps continue each other when a step's prompt is the previous step's prompt +
response + observation (a multi-turn conversation): they become one sequence, whose observation
tokens carry no loss. A step that starts afresh (a judge reading several solutions) starts a new
sequence, and so does every step of a step-wise trajectory (SkyRL's ``step_wise_trajectories``). Every
sequence of a trajectory takes the trajectory's advantage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rllm_sweeps.advantages import batch_normalize, compute_group_advantages
from rllm_sweeps.workflows.episode import Episode, Trajectory

GroupKey = tuple[int, str]  # (task index, role)


@dataclass
class TrainSequence:
    """One token sequence to train on: ``mask`` is 1 on tokens the policy sampled."""

    tokens: list[int]
    mask: list[int]
    logprobs: list[float]  # the sampler's log-prob on sampled tokens, 0 elsewhere
    advantage: float
    group: int  # index of its (task, role) group in the step

    @property
    def trained_tokens(self) -> int:
        return sum(self.mask)


@dataclass
class ScoredTrajectory:
    trajectory: Trajectory
    advantage: float
    group: int


def group_trajectories(episodes: Sequence[Episode]) -> dict[GroupKey, list[Trajectory]]:
    """Trajectories of trainable episodes by (task, role), in first-seen order (groups of any size)."""
    groups: dict[GroupKey, list[Trajectory]] = {}
    for episode in episodes:
        if not episode.trainable:
            continue
        for traj in episode.trajectories:
            groups.setdefault((episode.task_index, traj.role), []).append(traj)
    return groups


def assign_advantages(
    groups: Mapping[GroupKey, list[Trajectory]],
    estimator: str,
    role_estimators: Mapping[str, str | None] | None = None,
    *,
    norm_adv_by_std_in_grpo: bool = True,
    penalties: Mapping[int, float] | None = None,
) -> list[ScoredTrajectory]:
    """One advantage per trajectory, from its group; each role's groups with the role's estimator
    (a batch-level estimator sees that role's trajectories as the batch). Order: the groups'.
    ``penalties``: subtracted from the rewards the estimator sees, by ``id()`` of the trajectory
    (SkyRL's KL in the reward; the trajectories' own rewards, the ones reported, stay)."""
    role_estimators = role_estimators or {}
    penalties = penalties or {}
    keys = list(groups)
    by_role: dict[str, list[int]] = {}
    for i, (_, role) in enumerate(keys):
        by_role.setdefault(role, []).append(i)
    advantages: dict[int, np.ndarray] = {}
    for role, indices in by_role.items():
        members = [groups[keys[i]] for i in indices]
        adv = compute_group_advantages(
            [[t.reward - penalties.get(id(t), 0.0) for t in g] for g in members],
            role_estimators.get(role) or estimator,
            norm_adv_by_std_in_grpo=norm_adv_by_std_in_grpo,
            lengths=[[t.response_tokens for t in g] for g in members],
        )
        advantages.update(zip(indices, adv, strict=True))
    return [
        ScoredTrajectory(traj, float(a), i)
        for i, key in enumerate(keys)
        for traj, a in zip(groups[key], advantages[i], strict=True)
    ]


def batch_normalized(scored: Sequence[ScoredTrajectory]) -> list[ScoredTrajectory]:
    """SkyRL's ``advantage_batch_normalize``: the advantages z-scored over the batch's tokens."""
    adv = batch_normalize([t.advantage for t in scored], [t.trajectory.response_tokens for t in scored])
    return [ScoredTrajectory(t.trajectory, float(a), t.group) for t, a in zip(scored, adv, strict=True)]


def trajectory_sequences(traj: Trajectory, advantage: float, group: int) -> list[TrainSequence]:
    """The trajectory's steps as token sequences (continuing steps merged; observations masked)."""
    sequences: list[TrainSequence] = []
    current: TrainSequence | None = None
    for step in traj.steps:
        if current is None or traj.step_wise or step.prompt_ids != current.tokens:  # a fresh prompt: a new sequence
            n = len(step.prompt_ids)
            current = TrainSequence(list(step.prompt_ids), [0] * n, [0.0] * n, advantage, group)
            sequences.append(current)
        current.tokens += step.response_ids + step.observation_ids
        current.mask += [1] * len(step.response_ids) + [0] * len(step.observation_ids)
        current.logprobs += [float(x) for x in step.logprobs] + [0.0] * len(step.observation_ids)
    return [s for s in sequences if s.trained_tokens > 0]  # nothing sampled: nothing to train on


def mini_batches(items: Sequence, count: int) -> list[list]:
    """``count`` consecutive chunks whose sizes differ by at most one (none empty): the number of
    optimizer steps is the user's (batch / mini batch), whatever the number of trajectories."""
    count = max(1, min(count, len(items)))
    bounds = np.linspace(0, len(items), count + 1).round().astype(int)
    return [list(items[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


__all__ = [
    "ScoredTrajectory",
    "TrainSequence",
    "assign_advantages",
    "batch_normalized",
    "group_trajectories",
    "mini_batches",
    "trajectory_sequences",
]
