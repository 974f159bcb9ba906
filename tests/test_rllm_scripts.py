"""rLLM's SkyRL-backend command lines (rllm-org/rllm PR #407: simple math, solver-judge and its Modal
variant; tests/data/rllm_skyrl/) compose and validate with `skyrl.engine=fsdp`, removing only what
belongs to other backends or tools, each named below with why. Every rLLM setting they use is judged by
config/setting_effect.py's rule; the episodes rLLM's episode logging asks for are written by the job
(workflows/episode_log.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from config_problems import problems

from rllm_sweeps.config.load import load_config
from rllm_sweeps.problems import ConfigError

SCRIPTS = Path(__file__).parent / "data" / "rllm_skyrl"
# The Python entry point each script runs, in this project's words (its workflow).
ENTRY_POINT = {
    "run_skyrl_simple_math": [],
    "run_skyrl_solver_judge": ["workflow=solver_judge"],
    "run_skyrl_solver_judge_modal": ["workflow=solver_judge"],
}
# What is removed, and why: not a setting of SkyRL 0.4 nor of rLLM's SkyRL backend (verl's data loader
# has data.val_max_samples); the Modal script's trackers: rLLM's own UI, and wandb, not installed here
# (replaced by the console, as for SkyRL's examples).
REMOVED = {"trainer.val_max_samples": "unknown key", "trainer.logger": "wandb"}


def problems_or_none(overrides: list[str]) -> dict[str, str]:
    """The problems of `overrides` by key (none when they validate)."""
    try:
        load_config(overrides, notify=lambda _: None)
    except ConfigError as err:
        return {i.key: i.message for i in err.issues}
    return {}


def script(name: str) -> list[str]:
    return [line for line in (SCRIPTS / f"{name}.txt").read_text().splitlines() if line and not line.startswith("#")]


@pytest.mark.slow  # composes through Hydra and SkyRL
@pytest.mark.parametrize("name", sorted(ENTRY_POINT))
def test_rllms_skyrl_backend_command_line_validates_with_only_other_tools_settings_removed(name):
    typed = [*script(name), *ENTRY_POINT[name], "skyrl.engine=fsdp"]
    found = problems_or_none(typed)
    assert set(found) <= set(REMOVED), found
    for key, why in found.items():
        assert REMOVED[key] in why, why
    kept = [w for w in typed if w.split("=", 1)[0] not in found]
    kept += ["trainer.logger=console"] if "trainer.logger" in found else []
    notes: list[str] = []
    cfg = load_config(kept, notify=notes.append)
    assert cfg.trainer.total_batches == 100 or name.endswith("modal")
    assert cfg.model.path.startswith("Qwen/") and cfg.skyrl.engine == "fsdp"
    assert cfg.rllm.rejection_sample.min_trajs_per_group == 1
    assert any("rllm.rejection_sample.min_trajs_per_group=1 changes nothing" in n for n in notes), notes
    assert any("critic" in n for n in notes) or "critic" not in " ".join(typed)
    if name != "run_skyrl_simple_math":
        assert cfg.rllm.episode_logging.log_episodes is True


def test_rllm_settings_that_would_change_what_runs_are_refused_with_the_reason():
    found = problems(
        [
            "rllm.rejection_sample.enable=true",
            "rllm.compact_filtering.enable=true",
            "rllm.rejection_sample.min_trajs_per_group=2",
        ]
    )
    assert "dynamic_sampling.type=filter" in found["rllm.rejection_sample.enable"]
    assert "termination reason" in found["rllm.compact_filtering.enable"]
    assert "groups of any size" in found["rllm.rejection_sample.min_trajs_per_group"]


def test_rllm_mask_truncated_samples_is_skyrls_overlong_filtering():
    cfg = load_config(["rllm.mask_truncated_samples=true"], notify=lambda _: None)
    assert cfg.skyrl.train.generator.apply_overlong_filtering is True
    notes: list[str] = []
    load_config(["rllm.stepwise_advantage.mode=per_step"], notify=notes.append)  # rLLM makes it broadcast
    assert any("turns per_step into broadcast" in n for n in notes), notes


def test_episode_logging_writes_every_episode_as_a_json_line_of_the_job_directory(tmp_path):
    from rllm_sweeps.workflows.base import EpisodeContext, Workflow
    from rllm_sweeps.workflows.episode import Episode, Step, Trajectory
    from rllm_sweeps.workflows.episode_log import EPISODES_FILE, LoggedWorkflow, logged_if_asked

    class Fixed(Workflow):
        async def run(self, example, ctx):
            step = Step(prompt_ids=[1], response_ids=[2, 3], logprobs=[-0.1, -0.2], reward=1.0)
            return Episode(
                task_index=ctx.task_index,
                rollout_index=ctx.rollout_index,
                trajectories=[Trajectory(role="policy", steps=[step], reward=1.0)],
            )

    inner = Fixed(task=None, settings=None)
    assert logged_if_asked(inner, {"rllm": {"episode_logging": {"log_episodes": False}}}, tmp_path) is inner
    workflow = logged_if_asked(inner, {"rllm": {"episode_logging": {"log_episodes": True}}}, tmp_path)
    assert isinstance(workflow, LoggedWorkflow)
    ctx = EpisodeContext(
        client=None,
        chat=None,
        episode_index=3,
        task_index=1,
        rollout_index=2,
        max_prompt_length=8,
        max_response_length=8,
    )
    episode = asyncio.run(workflow.run({}, ctx))
    assert episode.trajectories[0].reward == 1.0
    lines = (tmp_path / EPISODES_FILE).read_text().splitlines()
    record = json.loads(lines[0])
    assert len(lines) == 1 and record["task_index"] == 1 and record["rollout_index"] == 2
    assert record["episode_index"] == 3 and record["trajectories"][0]["steps"][0]["response_ids"] == [2, 3]
