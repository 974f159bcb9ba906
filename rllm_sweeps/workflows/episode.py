"""What a workflow returns: an Episode of Trajectories of Steps (rLLM's episode types).

    Episode (one run of a workflow on one task; id "task:rollout")
      -> Trajectory (one role's part: "solver", "judge", "policy"; its reward)
           -> Step (one model call: prompt tokens, response tokens + log-probs, the observation
                    tokens that followed it before the next call)

The loop trains on trajectories: each becomes one or more token sequences where only the
response tokens carry loss (prompt and observation tokens are masked out), all with the
trajectory's advantage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Termination(StrEnum):
    """Why an episode ended (rLLM's termination reasons, the ones this loop produces)."""

    ENV_DONE = "env_done"  # the workflow or its environment finished the episode
    MAX_TURNS = "max_turns"  # workflow.max_turns model calls without the environment saying done
    MAX_RESPONSE_LENGTH = "max_response_length"  # the last response hit data.max_response_length
    MAX_PROMPT_LENGTH = "max_prompt_length"  # the conversation outgrew the context: no room for another turn
    ERROR = "error"  # the workflow or environment raised: recorded, reward 0, nothing trained


@dataclass
class Step:
    """One model call and what followed it."""

    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]  # the sampler's log-prob of each response token
    stop_reason: str = "stop"  # the sampler's: "stop" (an end-of-turn token) or "length"
    observation_ids: list[int] = field(default_factory=list)  # environment tokens appended after the response
    response_text: str = ""
    reward: float = 0.0  # the environment's reward for this step

    @property
    def full_ids(self) -> list[int]:
        """The conversation after this step: the next step's prompt when the workflow continues it."""
        return self.prompt_ids + self.response_ids + self.observation_ids


@dataclass
class Trajectory:
    """One role's steps in an episode and its (outcome) reward."""

    role: str
    steps: list[Step] = field(default_factory=list)
    reward: float = 0.0
    correct: bool | None = None  # None: reward >= 1 (what `<role>_acc` counts)
    step_wise: bool = False  # each step its own training sequence (SkyRL's step_wise_trajectories)

    @property
    def is_correct(self) -> bool:
        return self.reward >= 1.0 if self.correct is None else self.correct

    @property
    def response_tokens(self) -> int:
        return sum(len(s.response_ids) for s in self.steps)


@dataclass
class Episode:
    """One workflow run on one task; `task_index` and `rollout_index` make its id."""

    task_index: int
    rollout_index: int
    trajectories: list[Trajectory] = field(default_factory=list)
    termination: Termination = Termination.ENV_DONE
    error: str | None = None  # the exception's last line, for Termination.ERROR
    prompt_truncated: bool = False  # the first prompt was cut to data.max_prompt_length

    @property
    def id(self) -> str:
        return f"{self.task_index}:{self.rollout_index}"

    @property
    def turns(self) -> int:
        """Model calls in the episode (all roles)."""
        return sum(len(t.steps) for t in self.trajectories)

    @property
    def trainable(self) -> bool:
        """Failed episodes are recorded, not trained on."""
        return self.termination != Termination.ERROR


__all__ = ["Episode", "Step", "Termination", "Trajectory"]
