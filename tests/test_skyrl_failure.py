"""A step that fails inside SkyRL's code names SkyRL's function, this project's caller and the
settings it works under (training/skyrl_failure.py), on real SkyRL code raising for real."""

from __future__ import annotations

import dataclasses

import pytest

from rllm_sweeps.config.load import load_config
from rllm_sweeps.training.dynamic_sampling import DynamicSampler
from rllm_sweeps.training.settings import LoopSettings
from rllm_sweeps.training.skyrl_failure import skyrl_origin
from rllm_sweeps.workflows.episode import Episode, Step, Trajectory


def episode(task_index: int, reward: float) -> Episode:
    step = Step(prompt_ids=[1, 2], response_ids=[3, 4], logprobs=[-0.1, -0.2], stop_reason="stop")
    return Episode(
        task_index=task_index, rollout_index=0, trajectories=[Trajectory(role="solver", steps=[step], reward=reward)]
    )


def test_a_failure_inside_skyrl_names_its_function_the_projects_caller_and_the_callers_settings():
    cfg = load_config(["skyrl.train.trainer.algorithm.dynamic_sampling.type=filter"], notify=lambda _: None)
    # A strategy SkyRL does not know, past the config's checks: SkyRL's handle_dynamic_sampling raises.
    settings = dataclasses.replace(LoopSettings.from_config(cfg), dynamic_sampling_type="bogus")
    with pytest.raises(ValueError, match="Invalid dynamic sampling type: bogus") as raised:
        DynamicSampler(settings, seed=(0,)).add([episode(0, 1.0), episode(0, 0.0)])
    line = skyrl_origin(raised.value, settings)
    assert line is not None
    assert line.startswith("raised in SkyRL's handle_dynamic_sampling (skyrl/train/utils/trainer_utils.py:")
    assert ", called from DynamicSampler.add (rllm_sweeps/training/dynamic_sampling.py:" in line
    assert "skyrl.train.trainer.algorithm.dynamic_sampling.type='bogus'" in line
    assert "skyrl.train.trainer.algorithm.dynamic_sampling.max_sample_batches=" in line


def test_a_failure_outside_skyrl_has_no_skyrl_origin():
    try:
        raise RuntimeError("the project's own")
    except RuntimeError as err:
        assert skyrl_origin(err, None) is None
