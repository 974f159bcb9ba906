"""The RL loop on one accelerator: steps/s, sampled and trained tokens/s, phase shares, and
forward_backward's achieved TFLOP/s.

Same loop, same backend (SkyRL's JaxBackend) as every job; here without Hydra and Ray so it
runs on a bare GPU image (see docs/BENCHMARKS.md for the device command). The model is
`builtin:qwen3-0.5b-random` (about 0.45 B parameters, random init, built locally).

    python bench/gpu_loop.py [--model builtin:qwen3-0.5b-random] [--steps 12] [--round-trip] [KEY=VALUE ...]

FLOPs of forward_backward, LoRA: 2*N per token forward and 2*N per token backward (the
activation gradients through the frozen weights; the adapters' own gradients are
negligible at rank 32), N = every parameter of the model (the input embedding's
lookup costs no multiply, but at a 320-token vocabulary it is 0.07% of N). Tokens are
those of the trained sequences (prompt + response, no padding): the achieved rate counts
useful work only, so padding and recompilation show up as a lower figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BACKEND_TIMES = ("time_sample_s", "time_forward_backward_s", "time_optim_s", "time_sync_s")
GPU_DEFAULTS = [
    "data.train_batch_size=32",
    "rollout.n=8",
    "trainer.mini_batch_size=32",
    "data.max_response_length=128",
    "data.max_prompt_length=64",
    "data.val_batch_size=64",
    "model.lora.rank=32",
    "model.lora.alpha=32",
]


def load_config(overrides: list[str]):
    """conf/config.yaml + the toy task + overrides, with OmegaConf alone (no Hydra needed)."""
    from omegaconf import OmegaConf

    from rllm_sweeps.config.native import register_resolvers

    register_resolvers()  # conf/'s derived defaults (algorithm.kl_beta)
    cfg = OmegaConf.load(REPO / "conf" / "config.yaml")
    cfg.pop("defaults")
    cfg.pop("hydra")
    task = OmegaConf.load(REPO / "conf" / "task" / "toy_letters.yaml")
    cfg = OmegaConf.merge(cfg, {"task": task})
    return OmegaConf.merge(cfg, OmegaConf.from_dotlist(overrides))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="builtin:qwen3-0.5b-random")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "rllm-sweeps"))
    parser.add_argument(
        "--micro-batch", type=int, help="sequences per forward_backward call (default: default_micro_batch)"
    )
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument(
        "--round-trip",
        action="store_true",
        help="publish the sampler's weights through save_sampler_checkpoint after every step (the old way)",
    )
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()

    import logging

    import jax
    import skyrl.utils.log  # noqa: F401  (sets the "skyrl" logger to DEBUG on import)

    logging.getLogger("skyrl").setLevel(logging.WARNING)

    from rllm_sweeps.models import resolve_model_path
    from rllm_sweeps.tasks import load_task
    from rllm_sweeps.training.jax_backend import enable_jax_compilation_cache, make_jax_backend
    from rllm_sweeps.training.loop import LoopHooks, RLTrainer
    from rllm_sweeps.training.settings import LoopSettings

    cfg = load_config([*GPU_DEFAULTS, f"trainer.total_batches={args.steps}", *args.overrides])
    settings = LoopSettings.from_config(cfg)
    t0 = time.perf_counter()
    model_dir = resolve_model_path(args.model, Path(args.cache_dir))
    t_build = time.perf_counter() - t0
    enable_jax_compilation_cache(Path(args.cache_dir) / "jax")
    t0 = time.perf_counter()
    backend = make_jax_backend(model_dir, settings, max_lora_adapters=2, train_micro_batch_size=args.micro_batch)
    t_backend = time.perf_counter() - t0

    import dataclasses

    from transformers import AutoTokenizer

    from rllm_sweeps.engines import JaxEngine

    engine = JaxEngine().traits
    if args.round_trip:
        engine = dataclasses.replace(engine, sampler_shares_trained_weights=False)
    steps: list[dict] = []
    trainer = RLTrainer(
        settings,
        backend,
        load_task(cfg.task),
        AutoTokenizer.from_pretrained(str(model_dir)),
        Path(args.cache_dir) / "gpu-bench-work",
        hooks=LoopHooks(on_step_end=steps.append),
        engine=engine,
    )
    t0 = time.perf_counter()
    trainer.fit()
    t_fit = time.perf_counter() - t0

    later = steps[2:]  # after compilation of every call shape
    wall = sum(r["time_step_s"] for r in later)
    n_params = _parameters(model_dir)
    fb_flops = sum(4 * n_params * r["tokens_trained"] for r in later)
    figures = {
        "device": str(jax.devices()[0]),
        "model": args.model,
        "parameters": n_params,
        "sequences_per_step": settings.train_batch_size * settings.n,
        "micro_batch": backend.config.train_micro_batch_size,
        "sampler_round_trip": args.round_trip,
        "steps_per_s": len(later) / wall,
        "sampled_tokens_per_s": sum(r["tokens_sampled"] for r in later) / wall,
        "trained_tokens_per_s": sum(r["tokens_trained"] for r in later) / wall,
        "outside_backend_share": statistics.mean(
            (r["time_step_s"] - sum(r[k] for k in BACKEND_TIMES)) / r["time_step_s"] for r in later
        ),
        "median_step_s": statistics.median(r["time_step_s"] for r in later),
        "phase_share": {k: sum(r[k] for r in later) / wall for k in BACKEND_TIMES},
        "forward_backward_tflops": fb_flops / sum(r["time_forward_backward_s"] for r in later) / 1e12,
        "first_step_s": steps[0]["time_step_s"],
        "model_build_s": t_build,
        "backend_init_s": t_backend,
        "fit_s": t_fit,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


def _parameters(model_dir: Path) -> int:
    from safetensors import safe_open

    total = 0
    for f in model_dir.glob("*.safetensors"):
        with safe_open(str(f), "np") as st:
            for key in st.keys():
                total += _prod(st.get_slice(key).get_shape())
    return total


def _prod(shape: list[int]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


if __name__ == "__main__":
    main()
