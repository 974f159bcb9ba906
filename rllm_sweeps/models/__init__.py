"""Model helpers: the built-in tiny model and model path resolution."""

from rllm_sweeps.models.tiny import BUILTIN_MODELS, build_tiny_model, resolve_model_path

__all__ = ["BUILTIN_MODELS", "build_tiny_model", "resolve_model_path"]
