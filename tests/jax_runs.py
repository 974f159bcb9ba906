"""Small trainings on one real SkyRL JaxBackend (CPU, the built-in tiny model), shared by the test
modules that compare runs differing by one setting: each run has its own LoRA adapter in it."""

from __future__ import annotations

from rllm_sweeps.config.load import load_config
from rllm_sweeps.training.settings import LoopSettings

# Small shapes, the same for every run (one compilation per kind of call).
SMALL = [
    "data.train_batch_size=4",
    "trainer.mini_batch_size=4",
    "rollout.n=4",
    "data.val_batch_size=4",
    "task.dataset.val_size=4",
    "trainer.total_batches=2",
]


def settings(*overrides: str) -> tuple[LoopSettings, object]:
    cfg = load_config([*SMALL, *overrides], notify=lambda _: None)
    return LoopSettings.from_config(cfg), cfg


def tiny_backend(max_lora_adapters: int) -> tuple[object, object]:
    """(JaxBackend on the built-in tiny model sized for SMALL's runs, its tokenizer)."""
    from transformers import AutoTokenizer

    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path
    from rllm_sweeps.training.jax_backend import make_jax_backend

    base, _ = settings()
    model_dir = resolve_model_path("builtin:tiny-qwen3", cache_dir())
    backend = make_jax_backend(model_dir, base, max_lora_adapters=max_lora_adapters)
    return backend, AutoTokenizer.from_pretrained(str(model_dir))
