"""Record the real grid's learning curves compactly into bench/data/ (the surrogate's data, issue 47).

    nice -n 10 .venv/bin/python train.py -m +sweep=bench/curves_grid.yaml hydra.sweep.dir=/tmp/curves_grid
    .venv/bin/python bench/curves_record.py /tmp/curves_grid [--out bench/data/curves_lr_clip.json]

One record per job: its swept values, seed, the validation reward per validated step
(`val_reward_mean`, 32 greedy prompts) and the training reward per step, read from the job's
metrics.jsonl; unfinished jobs are left out (said on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
KEYS = ("trainer.lr", "algorithm.eps_clip")
TRAIN_KEYS = ("reward_mean", "train_reward_mean", "rewards_mean")


def job_record(job_dir: Path) -> dict[str, Any] | None:
    result = json.loads((job_dir / "result.json").read_text())
    if result.get("status") != "completed":
        print(f"{job_dir.name}: {result.get('status')}: left out", file=sys.stderr)
        return None
    values = dict(o.split("=", 1) for o in result["overrides"])
    val: list[list[float]] = []
    train: list[float] = []
    for line in (job_dir / "metrics.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if "val_reward_mean" in rec:
            val.append([int(rec["step"]), round(float(rec["val_reward_mean"]), 5)])
        key = next((k for k in TRAIN_KEYS if k in rec), None)
        if key is not None and "val_reward_mean" not in rec:
            train.append(round(float(rec[key]), 5))
    return {
        "lr": float(values["trainer.lr"]),
        "eps_clip": float(values["algorithm.eps_clip"]),
        "seed": int(values["trainer.seed"]),
        "val": val,
        "train": train,
        "wall_s": round(float(result.get("ended_at") or 0) - float(result.get("started_at") or 0), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep_dir", type=Path, nargs="+")
    ap.add_argument("--out", type=Path, default=REPO / "bench/data/curves_lr_clip.json")
    args = ap.parse_args()
    runs = [r for d in args.sweep_dir for j in sorted(d.glob("jobs/*/")) if (r := job_record(j)) is not None]
    data = {
        "task": "CPU default: builtin:tiny-qwen3, toy_letters, 32 prompts x 8 samples a step",
        "command": "nice -n 10 .venv/bin/python train.py -m +sweep=bench/curves_grid.yaml",
        "metric": "val_reward_mean",
        "keys": list(KEYS),
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"{len(runs)} runs -> {args.out}")


if __name__ == "__main__":
    main()
