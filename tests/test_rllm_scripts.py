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
from omegaconf import OmegaConf

from rllm_sweeps.config.load import load_config
from rllm_sweeps.problems import ConfigError

SCRIPTS = Path(__file__).parent / "data" / "rllm_skyrl"
# The Python entry point each script runs, in this project's words (its workflow).
ENTRY_POINT = {
    "run_skyrl_simple_math": [],
    "run_skyrl_solver_judge": ["workflow=solver_judge"],
    "run_skyrl_solver_judge_modal": ["workflow=solver_judge"],
}
# What is removed, and why: the Modal script's trackers: rLLM's own UI, and wandb, not installed here
# (replaced by the console, as for SkyRL's examples). trainer.val_max_samples (PR #407's skyrl.yaml) stays.
REMOVED = {"trainer.logger": "wandb"}
# What runs on CPU in place of the cluster's values (everything else is the script's, as typed).
ON_CPU = {
    "trainer.policy.model.path": "builtin:tiny-qwen3",
    "trainer.placement.policy_num_gpus_per_node": None,  # GPU counts: a CPU job
    "trainer.placement.ref_num_gpus_per_node": None,
    "rllm.trainer.total_batches": 2,  # 100 steps -> 2
    "data.train_batch_size": 4,  # 32 prompts -> 4
    "data.val_batch_size": 4,
    "data.max_prompt_length": 128,  # 2048 tokens -> 128 (the judge's prompt holds the solutions)
    "data.max_response_length": 8,  # 1024 -> 8
}


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


@pytest.mark.slow  # trains on SkyRL's real JAX backend
def test_rllms_solver_judge_script_as_typed_trains_two_steps_on_the_jax_engine_on_cpu(tmp_path):
    """PR #407's test_skyrl_solver_judge.sh with only the model, GPU counts, sizes and steps scaled to a CPU
    (ON_CPU); its data: the solver-judge workflow's local toy task. trainer.val_max_samples=8 validates on 8."""
    from transformers import AutoTokenizer

    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.data.task import job_task, job_workflow
    from rllm_sweeps.engines import JaxEngine
    from rllm_sweeps.models import resolve_model_path
    from rllm_sweeps.training.jax_backend import make_jax_backend
    from rllm_sweeps.training.loop import RLTrainer
    from rllm_sweeps.training.settings import LoopSettings
    from rllm_sweeps.workflows import read_workflow

    typed = []
    for line in script("run_skyrl_solver_judge"):
        key = line.split("=", 1)[0]
        if key in ON_CPU:
            typed += [] if ON_CPU[key] is None else [f"{key}={ON_CPU[key]}"]
        else:
            typed.append(line)
    cfg = load_config([*typed, *ENTRY_POINT["run_skyrl_solver_judge"], "skyrl.engine=jax"], notify=lambda _: None)
    assert (
        cfg.trainer.val_max_samples == 8
        and cfg.rollout.n == 4
        and cfg.trainer.experiment_name == ("skyrl_solver_judge_test")
    )
    plain = OmegaConf.to_container(cfg, resolve=True)
    settings = LoopSettings.from_config(cfg)
    task = job_task(plain)
    workflow = read_workflow(job_workflow(plain.get("workflow"), plain)).build(task)
    model_dir = resolve_model_path(str(cfg.model.path), cache_dir())
    backend = make_jax_backend(model_dir, settings, parallel_calls=2)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    trainer = RLTrainer(settings, backend, task, tokenizer, tmp_path, engine=JaxEngine().traits, workflow=workflow)
    steps: list[dict] = []
    trainer.hooks.on_step_end = steps.append
    trainer.fit()
    assert [m["step"] for m in steps] == [1, 2]
    assert all(m["tokens_sampled"] > 0 for m in steps)
    assert trainer.state.val_history and trainer.state.val_history[-1]["step"] == 2
