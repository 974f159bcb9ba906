"""What a workflow is, and how one is built from the ``workflow`` config group.

A workflow runs one episode on one task example and returns it::

    class MyWorkflow(Workflow):
        async def run(self, example: dict, ctx: EpisodeContext) -> Episode:
            prompt, _truncated = ctx.prompt_ids(example["prompt"])
            out = await ctx.generate(prompt)                 # one model call (any role)
            text = ctx.chat.decode(out.tokens)
            reward = self.task.reward_fn(example["prompt"], text, example["ground_truth"])
            step = Step(prompt, out.tokens, out.logprobs, out.stop_reason, response_text=text)
            return ctx.episode(Trajectory("policy", [step], reward))

Every role of every episode shares one policy and one rollout client (client.py): the calls of
all episodes in flight go to the backend together. The config group names the class and its
settings (``workflow.class``, the rest: fields of the class's ``Settings`` dataclass)::

    name: single_turn
    class: rllm_sweeps.workflows.single_turn:SingleTurnWorkflow
    max_turns: 1
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from rllm_sweeps.tasks.base import Task, import_object
from rllm_sweeps.workflows.chat import ChatFormat, Messages
from rllm_sweeps.workflows.client import ModelOutput, RolloutClient
from rllm_sweeps.workflows.episode import Episode, Termination, Trajectory
from rllm_sweeps.workflows.generator import GeneratorSettings
from rllm_sweeps.workflows.stop_strings import cut_at_stop_string


@dataclass
class WorkflowSettings:
    """Settings every workflow takes; subclasses add theirs (and check them in ``problems``)."""

    max_turns: int = 1  # model calls per trajectory (SkyRL has the same setting: keymap.py)
    # role -> advantage estimator; a role absent or null uses algorithm.adv_estimator
    role_estimators: dict[str, str | None] = field(default_factory=dict)

    def parallel_calls(self) -> int:
        """Most model calls one episode has waiting at once (sizes the sampler's batch)."""
        return 1

    def problems(self) -> list[tuple[str, str]]:
        """(key under workflow., what is wrong) for each bad value."""
        from rllm_sweeps.advantages import ESTIMATORS

        out = []
        if not isinstance(self.max_turns, int) or isinstance(self.max_turns, bool) or self.max_turns < 1:
            out.append(("max_turns", f"{self.max_turns!r} is invalid: expected an integer >= 1"))
        if not isinstance(self.role_estimators, Mapping):
            out.append(
                ("role_estimators", f"{self.role_estimators!r} is invalid: expected a mapping role -> estimator")
            )
        else:
            for role, name in self.role_estimators.items():
                if name is not None and name not in ESTIMATORS:
                    out.append(
                        (f"role_estimators.{role}", f"{name!r} is invalid: expected one of {', '.join(ESTIMATORS)}")
                    )
        return out


@dataclass
class EpisodeContext:
    """What a workflow's ``run`` gets besides the example: the shared policy and the tokenizer."""

    client: RolloutClient
    chat: ChatFormat
    episode_index: int  # this episode's position in the phase (its sampler seeds)
    task_index: int
    rollout_index: int
    max_prompt_length: int
    max_response_length: int
    generator: GeneratorSettings | None = None  # SkyRL's generator settings (None: its defaults)
    _calls: int = 0

    def __post_init__(self) -> None:
        if self.generator is None:
            self.generator = GeneratorSettings(max_input_length=self.max_prompt_length)

    async def generate(self, prompt_ids: list[int], max_tokens: int | None = None) -> ModelOutput:
        """One call of the policy (any role); the episode's calls are numbered in call order. A response
        that reaches one of the phase's stop strings ends after it (stop_strings.py)."""
        call, self._calls = self._calls, self._calls + 1
        out = await self.client.generate(self.episode_index, call, prompt_ids, max_tokens)
        return cut_at_stop_string(out, self.client.sampling.stop, self.chat.tokenizer)

    def prompt_ids(self, prompt: str | Messages) -> tuple[list[int], bool]:
        """(token ids, truncated): the prompt in the task's format, left-truncated to data.max_prompt_length."""
        ids = self.chat.prompt_ids(prompt)
        limit = self.max_prompt_length
        return (ids[-limit:], True) if len(ids) > limit else (ids, False)

    def episode(self, *trajectories: Trajectory, termination: Termination = Termination.ENV_DONE) -> Episode:
        return Episode(self.task_index, self.rollout_index, list(trajectories), termination)


class Workflow:
    """Runs one episode per call of ``run``. Subclasses set ``Settings`` and ``roles``.

    Args:
        task: the task (dataset + reward).
        settings: this class's ``Settings``, from the workflow config group.
    """

    Settings: ClassVar[type[WorkflowSettings]] = WorkflowSettings
    roles: ClassVar[tuple[str, ...]] = ("policy",)  # the trajectory roles it returns (role_estimators name them)

    def __init__(self, task: Task, settings: WorkflowSettings) -> None:
        self.task = task
        self.settings = settings

    async def run(self, example: dict, ctx: EpisodeContext) -> Episode:
        raise NotImplementedError

    # Optional capability (the default suits a workflow with roles or turns).
    def reports_episode_metrics(self) -> bool:
        """Whether validation reports per-role and per-episode metrics (val/<role>_acc, turns, tokens)."""
        return True


@dataclass(frozen=True)
class WorkflowSpec:
    """The ``workflow`` config group, read: which class, with which settings."""

    name: str
    cls: type[Workflow]
    settings: WorkflowSettings

    def build(self, task: Task) -> Workflow:
        return self.cls(task, self.settings)


class WorkflowConfigError(ValueError):
    """A bad workflow config; ``problems`` holds (key, message) pairs naming the full key."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(m for _, m in problems))


def read_workflow(cfg: Mapping | None) -> WorkflowSpec:
    """The workflow of a config's ``workflow`` group (absent: the single-turn workflow)."""
    try:
        from omegaconf import OmegaConf

        if OmegaConf.is_config(cfg):
            cfg = OmegaConf.to_container(cfg, resolve=True)
    except ImportError:  # pragma: no cover
        pass
    values = dict(cfg or {"name": "single_turn", "class": "rllm_sweeps.workflows.single_turn:SingleTurnWorkflow"})
    name = str(values.pop("name", "custom"))
    target = values.pop("class", None)
    if not isinstance(target, str) or not target:
        raise WorkflowConfigError([("workflow.class", "workflow.class is missing: 'module:WorkflowClass'")])
    try:
        cls = import_object(target)
    except ValueError as err:
        raise WorkflowConfigError([("workflow.class", f"workflow.class={target!r}: {err}")]) from None
    if not (isinstance(cls, type) and issubclass(cls, Workflow)):
        raise WorkflowConfigError([("workflow.class", f"workflow.class={target!r} is not a Workflow subclass")])
    known = {f.name for f in dataclasses.fields(cls.Settings)}
    unknown = sorted(set(values) - known)
    if unknown:
        problems = [
            (f"workflow.{k}", f"workflow.{k} is not a setting of {cls.__name__} (it has {', '.join(sorted(known))})")
            for k in unknown
        ]
        raise WorkflowConfigError(problems)
    settings = cls.Settings(**values)
    problems = [(f"workflow.{k}", f"workflow.{k}={m}") for k, m in settings.problems()]
    if isinstance(settings.role_estimators, Mapping):
        for role, estimator in settings.role_estimators.items():
            if estimator is not None and role not in cls.roles:
                key = f"workflow.role_estimators.{role}"
                roles = ", ".join(cls.roles)
                problems.append((key, f"{key}: {cls.__name__} has no role {role!r} (its roles: {roles})"))
    if problems:
        raise WorkflowConfigError(problems)
    return WorkflowSpec(name, cls, settings)


__all__ = [
    "EpisodeContext",
    "Workflow",
    "WorkflowConfigError",
    "WorkflowSettings",
    "WorkflowSpec",
    "read_workflow",
]
