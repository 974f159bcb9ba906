"""Log-probabilities of one fixed response, as the engine computes them (SkyRL's JaxBackend: the loop's
own forward, training/policy.py) and as transformers computes them (with PEFT for an adapter): what the
export tests compare."""

from __future__ import annotations

from pathlib import Path

import numpy as np

PROMPT, RESPONSE = "What is 3 + 4?", "The answer is 7."
# float32 tiny model: the engine's and transformers' values agree to ~1e-6 (measured); bf16 would need ~1e-2.
ATOL = 1e-4


def fixed_tokens(model_dir: str | Path) -> tuple[list[int], int]:
    """(prompt + response tokens, prompt length), the prompt in the model's chat template."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    prompt = tok.apply_chat_template([{"role": "user", "content": PROMPT}], add_generation_prompt=True, tokenize=False)
    prompt_ids = tok(prompt)["input_ids"]
    return prompt_ids + tok(RESPONSE)["input_ids"], len(prompt_ids)


def hf_logprobs(model, tokens: list[int], n_prompt: int) -> np.ndarray:
    """A transformers (or PEFT) model's log-prob of each response token."""
    import torch

    ids = torch.tensor([tokens])
    with torch.no_grad():
        logits = model(ids).logits[0].float()
    lp = torch.log_softmax(logits[:-1], -1).gather(-1, ids[0, 1:, None])[:, 0]
    return lp[n_prompt - 1 :].numpy()


def adapter_logprobs(adapter_dir: Path, base: str | Path, tokens: list[int], n_prompt: int) -> np.ndarray:
    """The base model (float32) with the PEFT adapter, as a user loads it."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    return hf_logprobs(PeftModel.from_pretrained(model, str(adapter_dir)), tokens, n_prompt)


def merged_logprobs(model_dir: Path, tokens: list[int], n_prompt: int) -> np.ndarray:
    """A whole checkpoint, loaded as a user loads it (float32)."""
    import torch
    from transformers import AutoModelForCausalLM

    return hf_logprobs(AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32), tokens, n_prompt)


def engine_logprobs(job_dir: Path, checkpoint: Path, tokens: list[int], n_prompt: int) -> tuple[np.ndarray, np.ndarray]:
    """(untrained, trained): the loop's forward (Policy.current_logprobs) on a JaxBackend of the job's
    model and settings, before and after loading the job's training checkpoint `checkpoint`."""
    from omegaconf import OmegaConf

    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path
    from rllm_sweeps.training.datums import Datum
    from rllm_sweeps.training.jax_backend import make_jax_backend
    from rllm_sweeps.training.policy import Policy
    from rllm_sweeps.training.settings import LoopSettings

    cfg = OmegaConf.load(job_dir / "config.yaml")
    settings = LoopSettings.from_config(cfg)
    model_dir = resolve_model_path(str(cfg.model.path), cache_dir())
    backend = make_jax_backend(model_dir, settings, train_micro_batch_size=1, sample_max_num_sequences=1)
    policy = Policy(backend, "policy", job_dir.parent / "engine-check")
    policy.create(settings)
    n = len(tokens) - 1
    weights = [0.0] * (n_prompt - 1) + [1.0] * (n - n_prompt + 1)
    datum = Datum(tokens[:-1], tokens[1:], weights, [0.0] * n, [0.0] * n, n - n_prompt + 1, 0)
    untrained = np.asarray(policy.current_logprobs([datum])[0])[n_prompt - 1 :]
    policy.load(checkpoint, load_optimizer=False)
    trained = np.asarray(policy.current_logprobs([datum])[0])[n_prompt - 1 :]
    return untrained, trained
