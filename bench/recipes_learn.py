"""Do SkyRL's recipes learn on the CPU default task? GRPO (the default) and a DAPO-style run (dynamic
sampling ``filter``, the overlong buffer penalty, clip-higher, SkyRL's ``dual_clip`` loss through the
custom-loss route), side by side per seed (issue 27).

Each run is bench/proto_learn.py (the job's config and loop, tiny Qwen3, JAX on CPU, 30 steps); the
recipes alternate per seed so that both see the same machine load. Prints each run's first and last
validation reward, the DAPO-style run's prompt batches per step, and the means per recipe.

    .venv/bin/python bench/recipes_learn.py              # seeds 0 1 2
    .venv/bin/python bench/recipes_learn.py --seeds 0 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
A = "skyrl.train.trainer.algorithm."
RECIPES = {
    "grpo": [],
    "dapo-style": [
        f"{A}dynamic_sampling.type=filter",
        f"+{A}overlong_buffer_len=2",
        f"+{A}overlong_buffer_penalty_factor=0.1",
        "algorithm.eps_clip_high=0.28",
        "algorithm.loss_fn=dual_clip",
    ],
}


def run(recipe: str, seed: int, out: Path) -> dict:
    path = out / f"{recipe}-{seed}.json"
    cmd = [sys.executable, str(ROOT / "bench" / "proto_learn.py"), "--quiet", "--seed", str(seed), "--json", str(path)]
    for override in RECIPES[recipe]:
        cmd += ["--set", override]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(path.read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args()
    last: dict[str, list[float]] = {r: [] for r in RECIPES}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            for recipe in RECIPES:
                result = run(recipe, seed, Path(tmp))
                s = result["summary"]
                batches = [m.get("dynamic_sampling_batches") for m in result["steps"]]
                extra = f", prompt batches per step {statistics.mean(batches):.2f}" if batches[0] is not None else ""
                print(
                    f"{recipe:10s} seed {seed}: val reward {s['val_reward_first']:.3f} -> {s['val_reward_last']:.3f}"
                    f" ({s['time_fit_s']:.0f} s{extra})",
                    flush=True,
                )
                last[recipe].append(s["val_reward_last"])
    for recipe, values in last.items():
        print(f"{recipe:10s} mean final val reward {statistics.mean(values):.3f} over {len(values)} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
