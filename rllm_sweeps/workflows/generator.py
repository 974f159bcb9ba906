"""SkyRL's generator settings for the turns of an episode (skyrl/train/generators/skyrl_gym_generator.py,
``agent_loop``), as the workflows implement them; defaults are SkyRL's ``GeneratorConfig``'s.

- ``max_input_length``: the conversation's limit before each turn (SkyRL: ``len(input_ids) >
  max_input_length`` ends the episode); it defaults to SkyRL's prompt limit (``data.max_prompt_length``,
  the key map's twin), the first prompt's own limit.
- ``use_conversation_multi_turn``: true, each response and observation is a chat message
  (observations in the chat template); false, observations are raw text continuing the one
  assistant message, and a response's end-of-sequence token is dropped before them.
- ``append_eos_token_after_stop_str_in_multi_turn``: in conversation style, a response that ends at a
  stop string gets the end-of-sequence token after it, not trained (SkyRL masks it: TurnOutput).
- ``step_wise_trajectories``: each turn is its own training sequence, its prompt the chat template
  applied to the conversation so far; every step takes the trajectory's advantage (SkyRL computes it
  on the last step and gives it to the others).
"""

from __future__ import annotations

from dataclasses import dataclass


def input_limit(max_prompt_length: int, max_input_length: int | None) -> int:
    """SkyRL's max_input_length, which defaults to its prompt limit (SkyRLTrainConfig.__post_init__)."""
    return max_prompt_length if max_input_length is None else max_input_length


def longest_sequence(max_prompt_length: int, max_input_length: int | None, max_response_length: int) -> int:
    """The most tokens a training sequence holds: the longer of the first prompt's limit and the conversation's
    limit before a turn, plus one response (what the memory estimate and the micro batch are sized for)."""
    return max(max_prompt_length, input_limit(max_prompt_length, max_input_length)) + max_response_length


@dataclass(frozen=True)
class GeneratorSettings:
    """How an episode's turns are put together (the loop's LoopSettings fill it)."""

    max_input_length: int
    use_conversation_multi_turn: bool = True
    append_eos_after_stop: bool = True
    step_wise_trajectories: bool = False

    def added_eos(self, stop_string: str | None, response: list[int], eos: int | None) -> list[int]:
        """The end-of-sequence token SkyRL appends after a response cut at a stop string (conversation style)."""
        if not (self.use_conversation_multi_turn and self.append_eos_after_stop) or stop_string is None:
            return []
        return [] if eos is None or (response and response[-1] == eos) else [eos]

    def continued(self, response: list[int], logprobs: list[float], eos: int | None) -> tuple[list[int], list[float]]:
        """A response that the next turn continues: raw-text style drops its final end-of-sequence token
        (the assistant message goes on); conversation style keeps it."""
        if self.use_conversation_multi_turn or eos is None or not response or response[-1] != eos:
            return response, logprobs
        return response[:-1], logprobs[:-1]


__all__ = ["GeneratorSettings", "input_limit", "longest_sequence"]
