"""The solver-judge workflow (rLLM's examples/solver_judge): solvers answer, a judge picks one.

Per episode, one policy plays both roles: ``workflow.n_solutions`` solver calls on the task's
prompt, sampled together, then one judge call whose prompt shows the prompt and the numbered
solutions and which answers with a number. Rewards per trajectory: a solver gets the task's
reward of its answer; the judge gets the reward of the solution it picked (0 when it names
none). A trajectory is right (``val_<role>_acc``) when its reward is at least
``workflow.correct_reward``. Trajectories group by (task, role) across the ``rollout.n`` episodes:
the solver group holds ``n_solutions x rollout.n`` of them, the judge group ``rollout.n``.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from rllm_sweeps.workflows.base import EpisodeContext, Workflow, WorkflowSettings
from rllm_sweeps.workflows.episode import Episode, Step, Termination, Trajectory
from rllm_sweeps.workflows.single_turn import score


@dataclass
class SolverJudgeSettings(WorkflowSettings):
    n_solutions: int = 2
    judge_prompt: str = "{prompt}{solutions} pick"  # {prompt}: the task's; {solutions}: each as solution_format
    solution_format: str = " {index} {solution}"
    correct_reward: float = 1.0  # a trajectory with at least this reward is right

    def parallel_calls(self) -> int:
        return self.n_solutions

    def problems(self) -> list[tuple[str, str]]:
        out = super().problems()
        if self.max_turns != 1:
            out.append(("max_turns", f"{self.max_turns!r} is invalid: each role makes one call (1)"))
        if not isinstance(self.n_solutions, int) or isinstance(self.n_solutions, bool) or self.n_solutions < 1:
            out.append(("n_solutions", f"{self.n_solutions!r} is invalid: expected an integer >= 1"))
        for key, fields in (
            ("judge_prompt", ("{prompt}", "{solutions}")),
            ("solution_format", ("{index}", "{solution}")),
        ):
            value = getattr(self, key)
            if not isinstance(value, str) or any(f not in value for f in fields):
                out.append((key, f"{value!r} is invalid: expected a string with {' and '.join(fields)}"))
        if not isinstance(self.correct_reward, int | float) or isinstance(self.correct_reward, bool):
            out.append(("correct_reward", f"{self.correct_reward!r} is invalid: expected a number"))
        return out


def picked(judge_text: str, n: int) -> int | None:
    """The 0-based solution the judge names: the first number in 1..n of its reply."""
    for m in re.finditer(r"\d+", judge_text):
        if 1 <= int(m.group()) <= n:
            return int(m.group()) - 1
    return None


class SolverJudgeWorkflow(Workflow):
    Settings = SolverJudgeSettings
    roles = ("solver", "judge")

    async def run(self, example: dict, ctx: EpisodeContext) -> Episode:
        s: SolverJudgeSettings = self.settings  # type: ignore[assignment]
        prompt, truncated = ctx.prompt_ids(example["prompt"])
        outs = await asyncio.gather(*(ctx.generate(prompt) for _ in range(s.n_solutions)))
        solvers = []
        for out in outs:
            text = ctx.chat.decode(out.tokens)
            reward = score(self.task, example, text)
            step = Step(prompt, out.tokens, out.logprobs, out.stop_reason, response_text=text, reward=reward)
            solvers.append(Trajectory("solver", [step], reward, correct=reward >= s.correct_reward))

        shown = "".join(
            s.solution_format.format(index=i + 1, solution=t.steps[0].response_text.strip())
            for i, t in enumerate(solvers)
        )
        judge_ids, _ = ctx.prompt_ids(s.judge_prompt.format(prompt=example["prompt"], solutions=shown))
        out = await ctx.generate(judge_ids)
        text = ctx.chat.decode(out.tokens)
        choice = picked(text, s.n_solutions)
        reward = solvers[choice].reward if choice is not None else 0.0
        right = choice is not None and bool(solvers[choice].correct)
        judge = Trajectory("judge", [Step(judge_ids, out.tokens, out.logprobs, out.stop_reason, response_text=text)])
        judge.reward, judge.correct = reward, right
        judge.steps[0].reward = reward
        truncated_any = any(t.steps[0].stop_reason == "length" for t in [*solvers, judge])
        termination = Termination.MAX_RESPONSE_LENGTH if truncated_any else Termination.ENV_DONE
        episode = ctx.episode(*solvers, judge, termination=termination)
        episode.prompt_truncated = truncated
        return episode


__all__ = ["SolverJudgeSettings", "SolverJudgeWorkflow", "picked"]
