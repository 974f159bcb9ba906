"""What SkyRL's generator settings that the workflows implement take (workflows/generator.py), checked
before launch: SkyRL's own config checks neither their types nor (until its generator starts) their
combinations."""

from __future__ import annotations

from typing import Any

from rllm_sweeps.config.cross_rule import CrossRule
from rllm_sweeps.native_keys import SKYRL_TRAIN_PREFIX

_G = SKYRL_TRAIN_PREFIX + "generator."
MAX_INPUT_LENGTH = _G + "max_input_length"
STOP_KEYS = (_G + "sampling_params.stop", _G + "eval_sampling_params.stop")
CONVERSATION = _G + "use_conversation_multi_turn"
APPEND_EOS = _G + "append_eos_token_after_stop_str_in_multi_turn"
STEP_WISE = _G + "step_wise_trajectories"


def _stop_strings(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(s, str) and s for s in value))


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


GENERATOR_RULES: tuple[CrossRule, ...] = (
    CrossRule(
        (MAX_INPUT_LENGTH,),
        lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 1),
        f"{MAX_INPUT_LENGTH} (a multi-turn conversation's limit before each turn) takes an integer >= 1, "
        "or null for data.max_prompt_length",
    ),
    *(
        CrossRule((key,), _stop_strings, f"{key} takes a list of non-empty stop strings, e.g. ['</sql>'], or null")
        for key in STOP_KEYS
    ),
    *(CrossRule((key,), _flag, f"{key} takes true or false") for key in (CONVERSATION, APPEND_EOS, STEP_WISE)),
    CrossRule(
        (STEP_WISE, CONVERSATION),
        lambda step_wise, conversation: not step_wise or conversation,
        f"{STEP_WISE}=true needs {CONVERSATION}=true: SkyRL's generator refuses step-wise trajectories of "
        "raw-text turns (`step_wise_trajectories` doesn't support `use_conversation_multi_turn=False`)",
    ),
)

__all__ = ["GENERATOR_RULES", "MAX_INPUT_LENGTH", "STOP_KEYS"]
