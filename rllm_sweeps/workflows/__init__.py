"""Agent workflows: an episode = model calls (several roles sharing one policy), environments between them.

Shipped: ``single_turn`` (the default), ``multi_turn`` (a skyrl-gym environment between turns),
``solver_judge`` (solvers and a judge). docs/WORKFLOWS.md says how to write one's own.
"""

from rllm_sweeps.workflows.base import EpisodeContext, Workflow, WorkflowSettings, read_workflow
from rllm_sweeps.workflows.episode import Episode, Step, Termination, Trajectory

__all__ = [
    "Episode",
    "EpisodeContext",
    "Step",
    "Termination",
    "Trajectory",
    "Workflow",
    "WorkflowSettings",
    "read_workflow",
]
