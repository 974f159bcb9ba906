"""Stop strings (SkyRL's ``generator.sampling_params.stop`` / ``eval_sampling_params.stop``), applied to a
sampled response: cut after the first stop string, the stop string kept, ``stop_reason`` "stop".

SkyRL hands its stop strings to vLLM with ``include_stop_str_in_output=True``
(skyrl/backends/skyrl_train/inference_servers/engine_utils.py): the response ends with the first
stop string, which stays in it. The loop applies them itself, on every engine, rather than passing
them to ``backend.sample``: SkyRL 0.4.0's JAX sampler (skyrl/tx/utils/generator.py) asserts that
stop tokens and stop strings are never both set, and the loop always stops at the tokenizer's
end-of-turn tokens; the JAX sampler itself only finds stop strings after the whole sequence is
sampled. Cutting a response sampled to its end at its first stop string gives the distribution of
a sampler that stopped there (sampling is left to right), with the same log-probabilities. The
position is found by SkyRL's own ``find_string_stop_position`` (the JAX sampler's), so the cut is the
one SkyRL's JAX engine makes: the first token whose decoded text completes a stop string.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rllm_sweeps.workflows.client import ModelOutput


def cut_at_stop_string(out: ModelOutput, stop: Sequence[str] | None, tokenizer: Any) -> ModelOutput:
    """``out`` ended after its first stop string (kept), or unchanged when it has none."""
    if not stop or not out.tokens:
        return out
    from skyrl.tx.utils.generator import find_string_stop_position

    end = find_string_stop_position(list(out.tokens), tokenizer, list(stop))
    if end is None:
        return out
    tokens = list(out.tokens[:end])
    text = tokenizer.decode(tokens, skip_special_tokens=False)
    matched = min((s for s in stop if s in text), key=text.index)  # the stop string that ended it
    return replace(out, tokens=tokens, logprobs=list(out.logprobs[:end]), stop_reason="stop", stop_string=matched)


__all__ = ["cut_at_stop_string"]
