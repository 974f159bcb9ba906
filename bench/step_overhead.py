"""Loop overhead and start-up time of one job, with and without a shared JAX compilation cache.

Runs the embedded default job three times, side by side in one run:
  cold  - empty cache directory (the first job of a sweep: model built, programs compiled and cached)
  warm  - the same cache directory again (every later job of the sweep)
  off   - JAX compilation cache off (RLLM_SWEEPS_JAX_CACHE=off), model already built
and prints, per run: command-to-first-optimizer-step, job-start-to-first-step, the share of a
step spent outside the backend calls (sample, forward_backward, optim_step, sampler sync), and
the total wall time.

Then the per-step time with and without the sampler round trip (save_sampler_checkpoint and
its reload after every step, what the loop did before SkyRL's JAX backend was known to sample
from the adapter it trains), side by side: bench/gpu_loop.py's loop on the tiny model, live,
round trip, live again. The round trip is a switch of that bench only (it swaps the engine's
traits), not a setting of the product.

    .venv/bin/python bench/step_overhead.py [--steps 30] [--round-trip-steps 12] [--skip-startup]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rllm_sweeps.records.metrics import read_metrics  # noqa: E402
from rllm_sweeps.records.result import JobResult  # noqa: E402

BACKEND_TIMES = ("time_sample_s", "time_forward_backward_s", "time_optim_s", "time_sync_s")


def run(job_dir: Path, cache: Path, steps: int, jax_cache: str) -> dict[str, float]:
    env = {**os.environ, "RLLM_SWEEPS_CACHE": str(cache), "RLLM_SWEEPS_JAX_CACHE": jax_cache}
    launched = time.time()
    subprocess.run(
        [sys.executable, str(REPO / "train.py"), f"trainer.total_batches={steps}", f"hydra.run.dir={job_dir}"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
    )
    ended = time.time()
    result = JobResult.read(job_dir)
    train = [r for r in read_metrics(job_dir) if r["kind"] == "train"]
    later = train[1:]  # after compilation
    outside = [(r["time_step_s"] - sum(r[k] for k in BACKEND_TIMES)) / r["time_step_s"] for r in later]
    return {
        "command_to_first_step_s": train[0]["time"] - launched,
        "job_start_to_first_step_s": train[0]["time"] - result.started_at,
        "step_s": statistics.median(r["time_step_s"] for r in later),
        "outside_backend_share": statistics.mean(outside),
        "wall_s": ended - launched,
    }


# The tiny model's loop at the default job's sizes but 8 prompts a step (64 sequences), one optimizer step a step.
ROUND_TRIP_LOOP = [
    "--model=builtin:tiny-qwen3",
    "data.train_batch_size=8",
    "rollout.n=8",
    "trainer.mini_batch_size=8",
    "data.max_response_length=8",
    "data.val_batch_size=32",
    "model.lora.rank=8",
    "model.lora.alpha=16",
]


def loop_run(steps: int, round_trip: bool, out: Path) -> dict:
    cmd = [sys.executable, str(REPO / "bench" / "gpu_loop.py"), f"--steps={steps}", f"--json={out}", *ROUND_TRIP_LOOP]
    subprocess.run([*cmd, *(["--round-trip"] if round_trip else [])], cwd=REPO, check=True, capture_output=True)
    return json.loads(out.read_text())


def round_trip_side_by_side(steps: int) -> None:
    with tempfile.TemporaryDirectory(prefix="rllm-bench-") as tmp:
        runs = [
            ("live", loop_run(steps, False, Path(tmp) / "a.json")),
            ("round trip", loop_run(steps, True, Path(tmp) / "b.json")),
            ("live again", loop_run(steps, False, Path(tmp) / "c.json")),
        ]
    print(f"\nper-step time, {steps} steps of 64 sequences (steady state: steps 3-{steps}), one run each, in order:")
    print(f"{'run':<12}{'step (median)':>15}{'steps/s':>10}{'sampler sync':>14}")
    for name, r in runs:
        sync = r["phase_share"]["time_sync_s"]
        print(f"{name:<12}{r['median_step_s']:>14.3f}s{r['steps_per_s']:>10.2f}{sync:>13.1%}")
    live = (runs[0][1]["median_step_s"] + runs[2][1]["median_step_s"]) / 2
    print(f"round trip / live, median step: {runs[1][1]['median_step_s'] / live:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--round-trip-steps", type=int, default=12, help="steps of each round-trip run (0: skip)")
    parser.add_argument("--skip-startup", action="store_true", help="only the round-trip comparison")
    args = parser.parse_args()
    if not args.skip_startup:
        startup_and_cache(args.steps)
    if args.round_trip_steps:
        round_trip_side_by_side(args.round_trip_steps)


def startup_and_cache(steps: int) -> None:
    with tempfile.TemporaryDirectory(prefix="rllm-bench-") as tmp:
        tmp = Path(tmp)
        cache = tmp / "cache"
        rows = {
            "cold (empty cache)": run(tmp / "cold", cache, steps, "on"),
            "warm (shared cache)": run(tmp / "warm", cache, steps, "on"),
            "cache off": run(tmp / "off", cache, steps, "off"),
        }
    header = ("cmd->1st step", "job->1st step", "step (median)")
    print(f"{'run':<22}" + "".join(f"{h:>15}" for h in header) + f"{'outside backend':>17}{'wall':>8}")
    for name, r in rows.items():
        print(
            f"{name:<22}{r['command_to_first_step_s']:>14.1f}s{r['job_start_to_first_step_s']:>14.1f}s"
            f"{r['step_s']:>14.3f}s{r['outside_backend_share']:>16.1%}{r['wall_s']:>7.0f}s"
        )
    warm, off = rows["warm (shared cache)"], rows["cache off"]
    print(
        f"shared cache: first step {off['job_start_to_first_step_s'] / warm['job_start_to_first_step_s']:.2f}x "
        f"sooner than without; wall {warm['wall_s'] / off['wall_s']:.2f} of it"
    )


if __name__ == "__main__":
    main()
