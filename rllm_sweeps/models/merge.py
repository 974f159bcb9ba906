"""A PEFT LoRA adapter merged into its base model: one Hugging Face checkpoint that
``AutoModelForCausalLM.from_pretrained`` and vLLM load without PEFT.

transformers loads the base model (its own dtype), PEFT applies the adapter and merges it
(``merge_and_unload``), and the base model's tokenizer (with its chat template) is saved beside.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from rllm_sweeps.training.policy_export import ADAPTER_CONFIG


def adapter_base_model(adapter_dir: Path) -> str:
    """The base model path the adapter's config names."""
    return str(json.loads((adapter_dir / ADAPTER_CONFIG).read_text())["base_model_name_or_path"])


def merge_adapter(adapter_dir: Path, out: Path, base_model: str | os.PathLike | None = None) -> Path:
    """Write `out`: `base_model` (default: the one the adapter names) with the adapter merged, and
    its tokenizer. Written beside and renamed: `out` is complete or absent."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = str(base_model or adapter_base_model(adapter_dir))
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model = AutoModelForCausalLM.from_pretrained(base, dtype="auto")
        merged = PeftModel.from_pretrained(model, str(adapter_dir)).merge_and_unload()
        merged.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(base).save_pretrained(tmp)  # the chat template with it
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


__all__ = ["adapter_base_model", "merge_adapter"]
