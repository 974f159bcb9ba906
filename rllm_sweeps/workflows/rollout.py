"""Run a phase's episodes: ``n`` episodes per example, all in flight at once over one client.

An episode whose workflow or environment raises is recorded (Termination.ERROR, no reward, not
trained on) and the others go on. A phase in which every episode failed raises the first error:
that is a bug (a reward function that always raises), not an unlucky episode. A failure of the
backend itself (whatever ``backend.sample`` raised, or ``SampleFailed``) always raises.
"""

from __future__ import annotations

from collections.abc import Sequence

from rllm_sweeps.workflows.base import EpisodeContext, Workflow
from rllm_sweeps.workflows.chat import ChatFormat
from rllm_sweeps.workflows.client import RolloutClient, SampleFailed
from rllm_sweeps.workflows.episode import Episode, Termination
from rllm_sweeps.workflows.generator import GeneratorSettings


def run_episodes(
    workflow: Workflow,
    examples: Sequence[dict],
    n: int,
    client: RolloutClient,
    chat: ChatFormat,
    *,
    first_episode: int = 0,
    first_task_index: int,
    max_prompt_length: int,
    max_response_length: int,
    generator: GeneratorSettings | None = None,
) -> list[Episode]:
    """``n`` episodes of each example, in (example, rollout) order. ``first_episode``: the seed index
    of the first one (its position in the phase); ``first_task_index``: the first example's id."""
    contexts = [
        EpisodeContext(
            client=client,
            chat=chat,
            episode_index=first_episode + i * n + j,
            task_index=first_task_index + i,
            rollout_index=j,
            max_prompt_length=max_prompt_length,
            max_response_length=max_response_length,
            generator=generator,
        )
        for i in range(len(examples))
        for j in range(n)
    ]
    failures: list[BaseException] = []

    async def one(ctx: EpisodeContext, example: dict) -> Episode:
        try:
            return await workflow.run(example, ctx)
        except Exception as err:  # recorded on the episode; the phase goes on
            if err is client.failure or isinstance(err, SampleFailed):
                raise  # the backend's failure, not the episode's
            failures.append(err)
            failed = ctx.episode(termination=Termination.ERROR)
            failed.error = f"{type(err).__name__}: {err}".splitlines()[0][:500]
            return failed

    episodes = client.run_all([one(ctx, examples[k // n]) for k, ctx in enumerate(contexts)])
    if failures and len(failures) == len(episodes):
        raise failures[0]
    return episodes


__all__ = ["run_episodes"]
