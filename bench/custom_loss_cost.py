"""What a policy loss costs through the custom-loss route (issue 27): PPO computed by SkyRL's JAX
backend itself against the same PPO through the route the loop takes for the losses that backend
lacks (training/custom_loss.py: a forward for the current log-probs, SkyRL's loss and gradient in
torch, then forward_backward). One backend, two adapters from the same seed, steps alternating.

    .venv/bin/python bench/custom_loss_cost.py            # 6 steps each
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=6)
    args = ap.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import tempfile

    from transformers import AutoTokenizer

    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.engines import JaxEngine
    from rllm_sweeps.models import resolve_model_path
    from rllm_sweeps.tasks import load_task
    from rllm_sweeps.training.jax_backend import make_jax_backend
    from rllm_sweeps.training.loop import RLTrainer
    from rllm_sweeps.training.settings import LoopSettings

    cfg = load_config([f"trainer.total_batches={args.steps}"], notify=lambda _: None)
    settings = LoopSettings.from_config(cfg)
    model_dir = resolve_model_path(str(cfg.model.path), cache_dir())
    backend = make_jax_backend(model_dir, settings, max_lora_adapters=3)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    own = JaxEngine().traits
    routes = {"engine's ppo": own, "custom route": dataclasses.replace(own, losses=("importance_sampling",))}
    times: dict[str, list[float]] = {name: [] for name in routes}
    steps: dict[str, list[float]] = {name: [] for name in routes}
    with tempfile.TemporaryDirectory() as tmp:
        trainers = {
            name: RLTrainer(
                settings, backend, load_task(cfg.task), tokenizer, Path(tmp) / str(i), model_id=f"m{i}", engine=engine
            )
            for i, (name, engine) in enumerate(routes.items())
        }
        for step in range(args.steps + 1):  # the first step of each compiles: left out
            for name, trainer in trainers.items():
                m = trainer.train_step()
                if step > 0:
                    times[name].append(m["time_forward_backward_s"])
                    steps[name].append(m["time_step_s"])
    per_step = settings.train_batch_size // settings.mini_batch_size
    for name in routes:
        fb, step_s = statistics.median(times[name]), statistics.median(steps[name])
        print(f"{name:13s}: forward_backward {fb:.3f} s, step {step_s:.3f} s (median of {args.steps} steps, ", end="")
        print(f"{per_step} optimizer steps each)")
    a, b = (statistics.median(times[n]) for n in routes)
    c, d = (statistics.median(steps[n]) for n in routes)
    print(f"custom route / engine's own: forward_backward x{b / a:.2f}, whole step x{d / c:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
