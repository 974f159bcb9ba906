"""Loop overhead and start-up time of one job, with and without a shared JAX compilation cache.

Runs the embedded default job three times, side by side in one run:
  cold  - empty cache directory (the first job of a sweep: model built, programs compiled and cached)
  warm  - the same cache directory again (every later job of the sweep)
  off   - JAX compilation cache off (RLLM_SWEEPS_JAX_CACHE=off), model already built
and prints, per run: command-to-first-optimizer-step, job-start-to-first-step, the share of a
step spent outside the backend calls (sample, forward_backward, optim_step, sampler sync), and
the total wall time.

    .venv/bin/python bench/step_overhead.py [--steps 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rllm_sweeps.results import JobResult, read_metrics  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rllm-bench-") as tmp:
        tmp = Path(tmp)
        cache = tmp / "cache"
        rows = {
            "cold (empty cache)": run(tmp / "cold", cache, args.steps, "on"),
            "warm (shared cache)": run(tmp / "warm", cache, args.steps, "on"),
            "cache off": run(tmp / "off", cache, args.steps, "off"),
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
