"""The single-turn workflow (rLLM's "simple math"): one call, the task's reward on the response.

The default (``workflow=single_turn``): what the loop did before workflows, token for token.
"""

from __future__ import annotations

from dataclasses import dataclass

from rllm_sweeps.workflows.base import EpisodeContext, Workflow, WorkflowSettings
from rllm_sweeps.workflows.episode import Episode, Step, Termination, Trajectory


@dataclass
class SingleTurnSettings(WorkflowSettings):
    def problems(self) -> list[tuple[str, str]]:
        out = super().problems()
        if self.max_turns != 1:
            out.append(("max_turns", f"{self.max_turns!r} is invalid: the single-turn workflow makes one call (1)"))
        return out


class SingleTurnWorkflow(Workflow):
    Settings = SingleTurnSettings
    roles = ("policy",)

    async def run(self, example: dict, ctx: EpisodeContext) -> Episode:
        prompt, truncated = ctx.prompt_ids(example["prompt"])
        out = await ctx.generate(prompt)
        text = ctx.chat.decode(out.tokens)
        reward = score(self.task, example, text)
        step = Step(prompt, out.tokens, out.logprobs, out.stop_reason, response_text=text, reward=reward)
        termination = Termination.MAX_RESPONSE_LENGTH if out.stop_reason == "length" else Termination.ENV_DONE
        episode = ctx.episode(Trajectory("policy", [step], reward), termination=termination)
        episode.prompt_truncated = truncated
        return episode

    def reports_episode_metrics(self) -> bool:
        return False  # one role, one turn: val_reward_mean says it all


def score(task, example: dict, response: str) -> float:
    """The task's reward of a response; a non-finite reward is the task's bug, said as such."""
    import math

    if task.environments is not None:  # a dataset by path: one step of the example's environment
        return task.environments.reward(example, response)
    reward = float(task.reward_fn(example["prompt"], response, example["ground_truth"]))
    if not math.isfinite(reward):
        raise ValueError(f"task {task.name!r}: reward {reward} for prompt {example['prompt']!r}")
    return reward


__all__ = ["SingleTurnSettings", "SingleTurnWorkflow", "score"]
