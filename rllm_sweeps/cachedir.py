"""The machine's cache directory, shared by the jobs and the CLI of one user."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Shared by the jobs of a machine: built-in models, JAX compilation cache, SkyRL's default
    tree ($RLLM_SWEEPS_CACHE; RLLM_SWEEPS_JAX_CACHE=off turns the compilation cache off)."""
    return Path(os.environ.get("RLLM_SWEEPS_CACHE", Path.home() / ".cache" / "rllm-sweeps"))
