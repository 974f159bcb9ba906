"""SkyRL's generator settings as the config reads them: generator.max_input_length is its own setting (no longer
one with the prompt's limit), the stop strings and multi-turn flags reach the loop with SkyRL's defaults, and a
bad value is one line naming the key, before anything runs."""

from __future__ import annotations

import pytest

from rllm_sweeps.config.load import load_config
from rllm_sweeps.problems import ConfigError
from rllm_sweeps.training.jax_backend import default_micro_batch, micro_batch_for
from rllm_sweeps.training.settings import LoopSettings


def settings(*overrides: str) -> LoopSettings:
    return LoopSettings.from_config(load_config(list(overrides), notify=lambda _: None))


def test_max_input_length_and_max_prompt_length_are_two_settings_as_in_skyrl():
    # SkyRL's text2sql and search scripts set them differently; once one key, they were refused as a conflict.
    s = settings("trainer.max_prompt_length=64", "generator.max_input_length=400")
    assert (s.max_prompt_length, s.max_input_length, s.generator.max_input_length) == (64, 400, 400)
    # Unset, it is trainer.max_prompt_length (SkyRLTrainConfig.__post_init__)
    assert settings("trainer.max_prompt_length=64").generator.max_input_length == 64
    # A multi-turn sequence may hold the longer limit plus a response: what micro batches are sized for
    assert default_micro_batch(s) == micro_batch_for(s.mini_batch_size * s.n, 400 + s.max_response_length)


def test_skyrls_generator_settings_reach_the_loop_with_skyrls_defaults():
    default = settings()
    assert (default.stop, default.val_stop) == (None, None)
    assert default.use_conversation_multi_turn and default.append_eos_after_stop
    assert not default.step_wise_trajectories
    s = settings(
        "generator.sampling_params.stop=['</sql>','</solution>']",
        "generator.eval_sampling_params.stop=['</answer>']",
        "generator.use_conversation_multi_turn=false",
        "generator.append_eos_token_after_stop_str_in_multi_turn=false",
    )
    assert s.stop == ("</sql>", "</solution>") and s.val_stop == ("</answer>",)
    assert not s.generator.use_conversation_multi_turn and not s.generator.append_eos_after_stop


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("generator.max_input_length=0", "skyrl.train.generator.max_input_length (a multi-turn conversation's limit"),
        ("generator.sampling_params.stop=['']", "skyrl.train.generator.sampling_params.stop takes a list of non-empty"),
        ("generator.sampling_params.logprobs=5", "SkyRL takes null, 0 or 1"),
    ],
)
def test_a_bad_generator_value_is_refused_naming_the_key(override, message):
    with pytest.raises(ConfigError) as err:
        load_config([override], notify=lambda _: None)
    assert message in str(err.value)


def test_step_wise_trajectories_of_raw_text_turns_are_refused_as_skyrls_generator_refuses_them():
    with pytest.raises(ConfigError) as err:
        load_config(
            ["generator.step_wise_trajectories=true", "generator.use_conversation_multi_turn=false"],
            notify=lambda _: None,
        )
    assert "needs skyrl.train.generator.use_conversation_multi_turn=true" in str(err.value)
