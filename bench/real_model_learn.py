"""Does a real pretrained model learn? SmolLM2-135M-Instruct (``builtin:smollm2-135m-instruct``, a
bf16 checkpoint as published) trained with GRPO on the default task, reward before and after, over
seeds (issue 54).

Each seed is one real job (``train.py``: SkyRL's JAX engine on whatever device JAX finds: the CPU
here, the GPU on a GPU machine), run one after another. Prints each seed's validation reward at every
validation, its mean train reward over the first and the last 5 steps, its seconds per step, and
the means over the seeds. Exits non-zero if any job fails or any loss or gradient norm is not finite.

    .venv/bin/python bench/real_model_learn.py                        # seeds 0 1 2, 20 steps
    .venv/bin/python bench/real_model_learn.py --seeds 0 --steps 10
    .venv/bin/python bench/real_model_learn.py --model builtin:tiny-qwen3-bf16
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The default task (toy_letters: the prompt ends "letter c", the reward is the share of the
# response's characters equal to c), small batches: 8 prompts x 4 samples a step, two optimizer
# steps of 4 prompts, greedy validation on the task's 32 held-out prompts every 10 steps.
SETTINGS = [
    "data.train_batch_size=8",
    "trainer.mini_batch_size=4",
    "rollout.n=4",
    "trainer.save_freq=-1",
]


def run_seed(model: str, seed: int, steps: int, test_freq: int, out: Path, extra: list[str]) -> dict:
    job = out / f"seed{seed}"
    cmd = [sys.executable, str(ROOT / "train.py"), f"model.path={model}", f"trainer.seed={seed}"]
    cmd += [f"trainer.total_batches={steps}", f"trainer.test_freq={test_freq}", *SETTINGS, *extra]
    cmd += [f"hydra.run.dir={job}"]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    records = (job / "metrics.jsonl").read_text().splitlines() if proc.returncode == 0 else []
    lines = [json.loads(line) for line in records]
    train = [r for r in lines if r["kind"] == "train"]
    vals = [(r["step"], r["val_reward_mean"]) for r in lines if r["kind"] == "val"]
    finite = all(math.isfinite(r["loss"]) and math.isfinite(r["grad_norm"]) for r in train)
    return {
        "seed": seed,
        "rc": proc.returncode,
        "error": proc.stdout[-1500:] + proc.stderr[-1500:] if proc.returncode else "",
        "vals": vals,
        "first_train": statistics.mean(r["reward_mean"] for r in train[:5]) if train else float("nan"),
        "last_train": statistics.mean(r["reward_mean"] for r in train[-5:]) if train else float("nan"),
        "s_per_step": statistics.median(r["time_step_s"] for r in train[1:]) if len(train) > 1 else float("nan"),
        "finite": finite,
        "wall_s": wall,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="builtin:smollm2-135m-instruct")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--test-freq", type=int, default=10)
    ap.add_argument("--set", action="append", default=[], help="another override for every job")
    ap.add_argument("--out", type=Path, default=None, help="keep the jobs here (default: a temporary directory)")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = ap.parse_args()

    import jax  # the device the jobs will train on (each job is its own process)

    device = f"{jax.default_backend()} ({jax.devices()[0].device_kind})"
    print(f"{args.model}: {args.steps} steps x {len(args.seeds)} seeds on {device}; settings: {' '.join(SETTINGS)}")
    out = args.out or Path(tempfile.mkdtemp(prefix="real-model-learn-"))
    results = []
    for seed in args.seeds:
        r = run_seed(args.model, seed, args.steps, args.test_freq, out, args.set)
        results.append(r)
        if r["rc"]:
            print(f"seed {seed}: FAILED (rc {r['rc']})\n{r['error']}")
            continue
        vals = "  ".join(f"step {s}: {v:.3f}" for s, v in r["vals"])
        print(
            f"seed {seed}: val_reward {vals} | train reward first 5 steps {r['first_train']:.3f}, last 5 "
            f"{r['last_train']:.3f} | {r['s_per_step']:.2f} s/step, job {r['wall_s']:.0f} s | "
            f"losses and grad norms finite: {r['finite']}"
        )
    ok = [r for r in results if not r["rc"]]
    if ok:
        before = statistics.mean(r["vals"][0][1] for r in ok)
        after = statistics.mean(r["vals"][-1][1] for r in ok)
        print(
            f"mean over {len(ok)} seeds: val_reward {before:.3f} before -> {after:.3f} after {args.steps} steps "
            f"(x{after / before:.1f})"
            if before > 0
            else f"mean: val_reward {before:.3f} -> {after:.3f}"
        )
    if args.json:
        args.json.write_text(json.dumps({"model": args.model, "device": device, "runs": results}, indent=2))
    return 0 if len(ok) == len(results) and all(r["finite"] for r in ok) else 1


if __name__ == "__main__":
    sys.exit(main())
