"""Prototype: does the RL loop learn the toy task on CPU in a couple of minutes?

Builds the built-in tiny model, runs ``RLTrainer`` on the task of conf/config.yaml
(the ``task`` default group) with the JAX backend on CPU, prints per-step reward
and timings and the first vs last validation reward.

    .venv/bin/python bench/proto_learn.py                 # default lr
    .venv/bin/python bench/proto_learn.py --lr 2e-5       # 100x smaller
    .venv/bin/python bench/proto_learn.py --set trainer.total_batches=10 --no-jax-cache
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

T_START = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lr", type=float, default=None, help="override trainer.lr")
    ap.add_argument("--seed", type=int, default=None, help="override trainer.seed")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a train.py override (repeatable)")
    ap.add_argument(
        "--cache-dir",
        default=os.environ.get("RLLM_SWEEPS_CACHE", str(Path.home() / ".cache" / "rllm-sweeps")),
        help="built models + JAX compilation cache (default: $RLLM_SWEEPS_CACHE or ~/.cache/rllm-sweeps, as jobs)",
    )
    ap.add_argument("--no-jax-cache", action="store_true", help="do not use the persistent JAX compilation cache")
    ap.add_argument("--sample-max-num-sequences", type=int, default=None, help="JaxBackendConfig override")
    ap.add_argument("--train-micro-batch-size", type=int, default=None, help="JaxBackendConfig override")
    ap.add_argument("--json", default=None, help="write the summary + per-step metrics here")
    ap.add_argument("--quiet", action="store_true", help="no per-step lines")
    args = ap.parse_args()

    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from rllm_sweeps.config.load import load_config

    # The config a job would run with (composed and validated as train.py does).
    overrides = list(args.set)
    if args.lr is not None:
        overrides.append(f"trainer.lr={args.lr}")
    if args.seed is not None:
        overrides.append(f"trainer.seed={args.seed}")
    cfg = load_config(overrides)

    cache_dir = Path(args.cache_dir)
    t = time.perf_counter()
    import jax
    import skyrl.utils.log  # noqa: F401  (configures the "skyrl" logger at DEBUG on import)

    from rllm_sweeps.engines import JaxEngine
    from rllm_sweeps.models import resolve_model_path
    from rllm_sweeps.tasks import load_task
    from rllm_sweeps.training.jax_backend import enable_jax_compilation_cache, make_jax_backend
    from rllm_sweeps.training.loop import LoopHooks, RLTrainer
    from rllm_sweeps.training.settings import LoopSettings

    logging.getLogger("skyrl").setLevel(logging.WARNING)
    if not args.no_jax_cache:
        enable_jax_compilation_cache(cache_dir / "jax")
    t_import = time.perf_counter() - t

    settings = LoopSettings.from_config(cfg)
    t = time.perf_counter()
    model_dir = resolve_model_path(cfg.model.path, cache_dir)
    t_model = time.perf_counter() - t
    task = load_task(cfg.task)

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    t = time.perf_counter()
    backend = make_jax_backend(
        model_dir,
        settings,
        sample_max_num_sequences=args.sample_max_num_sequences,
        train_micro_batch_size=args.train_micro_batch_size,
    )
    t_backend = time.perf_counter() - t

    steps: list[dict] = []
    vals: list[dict] = []

    def on_step(m: dict) -> None:
        steps.append(m)
        if not args.quiet:
            print(
                f"step {m['step']:3d}  reward {m['reward_mean']:.3f} ±{m['reward_std']:.3f}  loss {m['loss']:+.4f}"
                f"  gnorm {m['grad_norm']:.3f}  len {m['response_length_mean']:.1f}"
                f"  | sample {m['time_sample_s']:.3f}s fb {m['time_forward_backward_s']:.3f}s"
                f" optim {m['time_optim_s']:.3f}s other {m['time_other_s']:.3f}s",
                flush=True,
            )

    def on_val(m: dict) -> None:
        vals.append(m)
        print(f"val  @ step {m['step']:3d}: reward {m['val_reward_mean']:.3f}  ({m['time_val_s']:.2f}s)", flush=True)

    with tempfile.TemporaryDirectory(prefix="proto_learn-") as work:
        trainer = RLTrainer(
            settings, backend, task, tokenizer, work, hooks=LoopHooks(on_step, on_val), engine=JaxEngine().traits
        )
        t = time.perf_counter()
        trainer.setup()
        t_setup = time.perf_counter() - t
        t = time.perf_counter()
        trainer.fit()
        t_fit = time.perf_counter() - t

    rewards = [v["val_reward_mean"] for v in vals]
    summary = {
        "steps": trainer.state.step,
        "total_steps": trainer.total_steps,
        "val_reward_first": rewards[0] if rewards else float("nan"),
        "val_reward_last": rewards[-1] if rewards else float("nan"),
        "val_reward_best": max(rewards) if rewards else float("nan"),
        "time_fit_s": t_fit,
    }
    first3 = sum(m["time_step_s"] for m in steps[:1])
    later = [m["time_step_s"] for m in steps[1:]]
    summary.update(
        {
            "lr": settings.lr,
            "seed": settings.seed,
            "jax_cache": not args.no_jax_cache,
            "jax_backend": jax.default_backend(),
            "time_import_s": t_import,
            "time_model_build_s": t_model,
            "time_backend_init_s": t_backend,
            "time_create_model_and_first_sync_s": t_setup,
            "time_first_step_s": first3,
            "time_later_step_mean_s": sum(later) / len(later) if later else float("nan"),
            "time_val_first_s": vals[0]["time_val_s"] if vals else float("nan"),
            "time_val_later_mean_s": sum(v["time_val_s"] for v in vals[1:]) / max(1, len(vals) - 1),
            "time_total_s": time.perf_counter() - T_START,
        }
    )
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in summary.items()}, indent=1))
    print(
        f"val reward first {summary['val_reward_first']:.3f} -> last {summary['val_reward_last']:.3f}"
        f"  (lr {settings.lr:g}, {summary['steps']} steps, total {summary['time_total_s']:.1f}s)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "steps": steps, "vals": vals}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
