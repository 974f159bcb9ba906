"""rLLM's episode logging (``rllm.episode_logging.log_episodes=true``): every episode a job runs, as one
JSON line of ``JOB_DIR/episodes.jsonl``, in the order the episodes end (training and validation alike).

A workflow that wraps the job's own: the loop runs it as it runs any workflow, so the loop itself
knows nothing of the log (job/train.py wraps the workflow when the setting is on)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from rllm_sweeps.workflows.base import EpisodeContext, Workflow
from rllm_sweeps.workflows.episode import Episode

EPISODES_FILE = "episodes.jsonl"


def episode_record(episode: Episode, ctx: EpisodeContext) -> dict[str, Any]:
    """The episode as plain JSON: its identity, termination, and each trajectory's steps and rewards."""
    record = dataclasses.asdict(episode)
    record["termination"] = str(episode.termination)
    record["episode_index"] = ctx.episode_index
    return record


class LoggedWorkflow(Workflow):
    """`inner`, with every episode it returns appended to `path` (one JSON object a line)."""

    def __init__(self, inner: Workflow, path: Path) -> None:
        super().__init__(inner.task, inner.settings)
        self.inner = inner
        self.path = path
        self.roles = inner.roles  # type: ignore[misc]  # the inner workflow's roles, per instance

    async def run(self, example: dict, ctx: EpisodeContext) -> Episode:
        episode = await self.inner.run(example, ctx)
        with self.path.open("a") as out:
            out.write(json.dumps(episode_record(episode, ctx), default=str) + "\n")
        return episode

    def reports_episode_metrics(self) -> bool:
        return self.inner.reports_episode_metrics()


def logged_if_asked(workflow: Workflow, plain: dict[str, Any], job_dir: str | Path) -> Workflow:
    """The job's workflow, wrapped in a LoggedWorkflow when rllm.episode_logging.log_episodes is on."""
    if not ((plain.get("rllm") or {}).get("episode_logging") or {}).get("log_episodes"):
        return workflow
    return LoggedWorkflow(workflow, Path(job_dir) / EPISODES_FILE)


__all__ = ["EPISODES_FILE", "LoggedWorkflow", "logged_if_asked"]
