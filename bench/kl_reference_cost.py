"""What the KL reference costs (issue 44): the reference adapter's forward (one per batch for the KL in
the reward, one per mini batch for the KL loss), and the GPU trainer's KL-loss route (SkyRL's KL term as
a custom loss: a forward for the current log-probs too), against plain PPO. SkyRL's JAX backend on the
default config's tiny model, one backend, one adapter per route from the same seed, steps alternating
(the first step of each, which compiles, left out): the routes side by side in one run.

    .venv/bin/python bench/kl_reference_cost.py            # 6 steps each
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

KL_LOSS = ("algorithm.use_kl_loss=true", "algorithm.kl_beta=0.1")
KL_REWARD = ("skyrl.train.trainer.algorithm.use_kl_in_reward=true", "algorithm.kl_beta=0.1")


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

    own = JaxEngine().traits
    gpu_route = dataclasses.replace(own, kl_loss_in_advantages=False)  # SkyRL's GPU trainer's KL-loss route
    routes = {  # name: (overrides, engine traits)
        "plain ppo": ((), own),
        "kl in reward": (KL_REWARD, own),
        "kl loss (jax)": (KL_LOSS, own),
        "kl loss (gpu)": (KL_LOSS, gpu_route),
    }
    base = [f"trainer.total_batches={args.steps + 1}"]
    cfgs = {name: load_config([*base, *o], notify=lambda _: None) for name, (o, _) in routes.items()}
    first = LoopSettings.from_config(cfgs["plain ppo"])
    model_dir = resolve_model_path(str(cfgs["plain ppo"].model.path), cache_dir())
    backend = make_jax_backend(model_dir, first, max_lora_adapters=2 * len(routes) + 1)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    steps: dict[str, list[float]] = {name: [] for name in routes}
    refs: dict[str, list[float]] = {name: [] for name in routes}
    with tempfile.TemporaryDirectory() as tmp:
        trainers = {
            name: RLTrainer(
                LoopSettings.from_config(cfgs[name]),
                backend,
                load_task(cfgs[name].task),
                tokenizer,
                Path(tmp) / str(i),
                model_id=f"m{i}",
                engine=engine,
            )
            for i, (name, (_, engine)) in enumerate(routes.items())
        }
        for step in range(args.steps + 1):
            for name, trainer in trainers.items():
                m = trainer.train_step()
                if step > 0:
                    steps[name].append(m["time_step_s"])
                    refs[name].append(m.get("time_ref_forward_s", 0.0))
    per_step = first.train_batch_size // first.mini_batch_size
    shape = f"{per_step} mini batches a step, {first.train_batch_size} prompts x {first.n}"
    print(f"median of {args.steps} steps ({shape})")
    plain = statistics.median(steps["plain ppo"])
    for name in routes:
        step_s, ref_s = statistics.median(steps[name]), statistics.median(refs[name])
        print(
            f"{name:14s}: step {step_s:.3f} s (x{step_s / plain:.2f} plain ppo), "
            f"reference forwards {ref_s:.3f} s ({ref_s / step_s:.0%} of its step)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
