"""A tiny random-init Qwen3 + byte-level BPE tokenizer, built locally (no model hub), and the
built-in models (``builtin:<name>``: the tiny ones, and a real one from a GGUF file, gguf.py).

``build_tiny_model(out_dir)`` writes a complete Hugging Face model directory
(``config.json``, ``model.safetensors``, ``tokenizer.json`` + config, chat
template) that SkyRL's JAX backend and ``transformers`` load like any checkpoint.
The build is deterministic: same recipe + seed -> same weights and tokenizer.

``resolve_model_path("builtin:tiny-qwen3", cache_dir)`` builds it once into
``cache_dir/models/tiny-qwen3-<hash of the recipe>`` (atomically: build in a
temporary directory, then rename; safe when several processes race).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from rllm_sweeps.models.gguf import SMOLLM2_135M_INSTRUCT_RECIPE, build_from_gguf, distribution_version

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# Everything that determines the built files. Changing any value changes the
# cache directory name (the hash), so stale builds are never reused.
TINY_QWEN3_RECIPE: dict = {
    "format": 1,
    "model": {
        "vocab_size": 320,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "tie_word_embeddings": False,
        "max_position_embeddings": 2048,
        "initializer_range": 0.02,
    },
    # Random init with std 0.02 everywhere caps the logits at about +-1: the final
    # RMSNorm fixes the hidden norm and LoRA does not touch lm_head, so such a
    # model can never become confident. A wider lm_head lets LoRA steer it.
    "lm_head_std": 0.15,
}

# A random-init Qwen3 of about 0.45 B parameters (Qwen3-0.6B's body with the tiny
# vocabulary), for GPU throughput measurements without a model hub.
QWEN3_05B_RANDOM_RECIPE: dict = {
    **TINY_QWEN3_RECIPE,
    "model": {
        **TINY_QWEN3_RECIPE["model"],
        "hidden_size": 1024,
        "intermediate_size": 3072,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "dtype": "bfloat16",
    },
    "lm_head_std": 0.02,
}

# The tiny model as published checkpoints are: its weights saved in bfloat16, so config.json's dtype
# says bfloat16 and SkyRL's JAX engine computes in it (the tiny model itself is saved in float32, and
# so, whatever its model config says, is qwen3-0.5b-random: save_pretrained writes the weights' dtype).
TINY_QWEN3_BF16_RECIPE: dict = {**TINY_QWEN3_RECIPE, "save_dtype": "bfloat16"}

BUILTIN_MODELS: dict[str, dict] = {
    "tiny-qwen3": TINY_QWEN3_RECIPE,
    "tiny-qwen3-bf16": TINY_QWEN3_BF16_RECIPE,
    "qwen3-0.5b-random": QWEN3_05B_RANDOM_RECIPE,
    # a real pretrained model, from a GGUF file a package ships (models/gguf.py)
    "smollm2-135m-instruct": SMOLLM2_135M_INSTRUCT_RECIPE,
}


def _corpus() -> list[str]:
    """Small fixed corpus for the BPE merges: English filler, letters, numbers, math."""
    words = (
        "the a an and of to in is it that for on with as was at by be this are from or "
        "have not but what all were when we there can one each which she do how their "
        "if will up other about out many then them these so some her would make like "
        "write say repeat letter letters answer question number total how many more "
        "apples books pens cars dogs cats boxes has had buys sells gives left each day"
    ).split()
    lines = []
    for i in range(200):
        w = [words[(i * 7 + j * 13) % len(words)] for j in range(8)]
        lines.append(" ".join(w) + ".")
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    for ch in alphabet:
        lines.append(f"letter {ch}: {ch} {ch}{ch} {ch * 4} {ch.upper()}")
    for i in range(100):
        a, b = (i * 17) % 90 + 3, (i * 29) % 40 + 2
        lines.append(f"Q: {a} + {b} = ? A: {a} + {b} = {a + b}. #### {a + b}")
        lines.append(f"{a} * {b} = {a * b}; {a} - {b} = {a - b}")
    return lines


def _build_tokenizer(vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        additional_special_tokens=["<|im_start|>"],
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tiny_model(out_dir: Path, seed: int = 0, recipe: dict | None = None) -> Path:
    """Build the tiny Qwen3 model + tokenizer into ``out_dir`` (created) and return it."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    recipe = recipe or TINY_QWEN3_RECIPE
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = _build_tokenizer(recipe["model"]["vocab_size"])
    if len(tokenizer) > recipe["model"]["vocab_size"]:
        raise RuntimeError(f"tokenizer has {len(tokenizer)} tokens > vocab_size {recipe['model']['vocab_size']}")
    config = Qwen3Config(
        **recipe["model"],
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config).to(torch.float32).eval()
    with torch.no_grad():
        gen = torch.Generator().manual_seed(seed + 1)
        w = model.lm_head.weight
        w.copy_(torch.randn(w.shape, generator=gen) * recipe["lm_head_std"])
    model = model.to(getattr(torch, recipe.get("save_dtype", "float32")))
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    (out_dir / "rllm_sweeps_recipe.json").write_text(json.dumps({"seed": seed, **recipe}, indent=2, sort_keys=True))
    return out_dir


def recipe_hash(recipe: dict, seed: int = 0) -> str:
    """Short stable hash of what a build produces: recipe, seed, tokenizer corpus, chat template (a
    GGUF recipe: the recipe and the version of the package that ships the file)."""
    if recipe.get("source") == "gguf":
        made = {**recipe, "version": distribution_version(recipe)}
    else:
        made = {"seed": seed, **recipe, "corpus": _corpus(), "special": SPECIAL_TOKENS, "chat_template": CHAT_TEMPLATE}
    return hashlib.sha256(json.dumps(made, sort_keys=True).encode()).hexdigest()[:10]


def build_builtin(out_dir: Path, recipe: dict) -> Path:
    """Build a built-in model's directory from its recipe: a GGUF file's conversion, or a tiny model."""
    if recipe.get("source") == "gguf":
        return build_from_gguf(out_dir, recipe)
    return build_tiny_model(out_dir, seed=0, recipe=recipe)


def builtin_dir(name: str, cache_dir: Path) -> Path:
    """Where built-in model ``name`` is (or will be) built: ``cache_dir/models/<name>-<recipe hash>``."""
    return Path(cache_dir).expanduser() / "models" / f"{name}-{recipe_hash(BUILTIN_MODELS[name])}"


def resolve_model_path(path: str, cache_dir: Path) -> Path:
    """Turn ``model.path`` into a local model directory.

    ``builtin:<name>`` (see ``BUILTIN_MODELS``) is built once into
    ``cache_dir/models/<name>-<recipe hash>``; anything else must be an existing
    local directory (there is no model hub here).
    """
    if path.startswith("builtin:"):
        name = path.removeprefix("builtin:")
        if name not in BUILTIN_MODELS:
            raise ValueError(
                f"unknown built-in model {path!r}; known: {sorted('builtin:' + n for n in BUILTIN_MODELS)}"
            )
        recipe = BUILTIN_MODELS[name]
        final = builtin_dir(name, cache_dir)
        models_dir = final.parent
        if (final / "config.json").is_file():
            return final
        models_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=models_dir))
        try:
            build_builtin(tmp, recipe)
            os.chmod(tmp, 0o755)  # mkdtemp makes it private; the cache may be shared
            try:
                os.rename(tmp, final)  # atomic; fails if another process won the race
            except OSError:
                if not (final / "config.json").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return final
    local = Path(path).expanduser()
    if not local.is_dir() and is_hub_id(path):
        return _from_hub(path)
    if not local.is_dir():
        raise ValueError(
            f"model.path={path!r} is not an existing local directory nor a hub id (org/name); "
            f"use a local Hugging Face checkpoint directory, a hub id, or one of "
            f"{sorted('builtin:' + n for n in BUILTIN_MODELS)}"
        )
    if not (local / "config.json").is_file():
        raise ValueError(f"model.path={path!r} has no config.json: not a Hugging Face model directory")
    return local.resolve()


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def is_hub_id(path: str) -> bool:
    """`org/name` as the Hugging Face hub writes it (a path that exists locally is a path)."""
    return bool(_HUB_ID.fullmatch(path)) and not path.startswith((".", "~")) and ".." not in path


def _from_hub(repo_id: str) -> Path:
    """A hub model's local snapshot: the Hugging Face cache, or a download where the hub is reachable
    (HF_HUB_OFFLINE=1: the cache only)."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id=repo_id))
    except Exception as err:  # offline, unknown repo, gated: one message saying what to do
        raise ValueError(
            f"model.path={repo_id!r}: the hub model is neither in the Hugging Face cache nor downloadable here "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); download it first "
            f"(huggingface-cli download {repo_id}) or give a local directory"
        ) from err
