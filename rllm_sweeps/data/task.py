"""A job's task when its data comes by path: the files' examples and their environments' rewards."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rllm_sweeps.data.environments import DataEnvironments
from rllm_sweeps.data.files import DataFile
from rllm_sweeps.data.settings import DataSettings
from rllm_sweeps.tasks.base import Task


def _no_reward(prompt: str, response: str, ground_truth: Any) -> float:
    raise RuntimeError("a dataset by path is scored by its environments (Task.environments), not a reward function")


def files_task(settings: DataSettings) -> Task:
    """The task of data.train_files / data.val_files (checked before launch: check.py)."""
    from rllm_sweeps.data.lengths import load_tokenizer
    from rllm_sweeps.data.splits import open_split

    tokenizer, model_dir = load_tokenizer(settings.model_path)
    splits = [
        open_split(
            [DataFile.open(p) for p in paths], settings.env_class, settings.max_prompt_length, tokenizer, model_dir
        ).examples
        for paths in (settings.train_files, settings.val_files)
    ]
    return Task(
        name=Path(settings.train_files[0]).stem,
        train=splits[0],  # type: ignore[arg-type]  # a Sequence read on demand, not a list
        val=splits[1],  # type: ignore[arg-type]
        reward_fn=_no_reward,
        chat_template=True,  # SkyRL applies the chat template to every prompt
        environments=DataEnvironments(settings.env_class, settings.env_configs),
    )


def job_task(plain: dict[str, Any]) -> Task:
    """The job's task: its data by path when data.train_files is set, else the task config group."""
    from rllm_sweeps.tasks import load_task

    settings = DataSettings.from_plain(plain)
    return load_task(plain["task"]) if settings is None else files_task(settings)


def job_workflow(workflow: dict[str, Any] | None, plain: dict[str, Any]) -> dict[str, Any] | None:
    """The workflow group a job runs. With data by path the environment is the data's: the default single-turn
    workflow becomes SkyRL's generator loop (the multi-turn workflow), one turn or workflow.max_turns."""
    from rllm_sweeps.data.settings import data_by_path

    if not data_by_path(plain) or not workflow or workflow.get("name") != "single_turn":
        return workflow
    return {
        "name": "environment",
        "class": "rllm_sweeps.workflows.multi_turn:MultiTurnWorkflow",
        "max_turns": workflow.get("max_turns", 1),
        "role_estimators": workflow.get("role_estimators", {}),
    }


def workflow_problems(plain: Mapping) -> list[tuple[str, str]]:
    """(key, message) of each problem of a plain config's ``workflow`` group (validation)."""
    from rllm_sweeps.workflows.base import WorkflowConfigError, read_workflow

    try:
        read_workflow(job_workflow(plain.get("workflow"), dict(plain)))
    except WorkflowConfigError as err:
        return err.problems
    return []


__all__ = ["files_task", "job_task", "job_workflow", "workflow_problems"]
