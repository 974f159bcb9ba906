"""The loop's share outside backend calls, per workflow (target: at most 10% for solver-judge).

Runs one job per workflow on the tiny model (same machine, the shared JAX compilation cache
warm after the first) and prints, over the steps after the first (compilation): the median step
time, its split into backend calls (sample, forward_backward, optim_step, sampler sync) and the
rest, the workflow's own time inside the rollout (rewards, environments, tokenization:
`time_reward_s`), backend.sample calls per step and sequences per call.

    .venv/bin/python bench/workflow_overhead.py [--steps 10] [--workflows solver_judge single_turn multi_turn]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rllm_sweeps.records.metrics import read_metrics  # noqa: E402

BACKEND_TIMES = ("time_sample_s", "time_forward_backward_s", "time_optim_s", "time_sync_s")


def run(workflow: str, job_dir: Path, steps: int) -> dict[str, float]:
    argv = [sys.executable, str(REPO / "train.py"), f"workflow={workflow}", f"trainer.total_batches={steps}"]
    argv += ["trainer.test_freq=0", "trainer.save_freq=-1", f"hydra.run.dir={job_dir}"]
    subprocess.run(argv, cwd=REPO, env=dict(os.environ), check=True, capture_output=True)
    later = [r for r in read_metrics(job_dir) if r["kind"] == "train"][1:]  # after compilation
    outside = [(r["time_step_s"] - sum(r[k] for k in BACKEND_TIMES)) / r["time_step_s"] for r in later]
    return {
        "step_s": statistics.median(r["time_step_s"] for r in later),
        "sample_s": statistics.median(r["time_sample_s"] for r in later),
        "forward_backward_s": statistics.median(r["time_forward_backward_s"] for r in later),
        "workflow_s": statistics.median(r["time_reward_s"] for r in later),
        "outside_backend_share": statistics.mean(outside),
        "outside_backend_max": max(outside),
        "tokens_trained": statistics.median(r["tokens_trained"] for r in later),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--workflows", nargs="+", default=["solver_judge", "single_turn", "multi_turn"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rllm-bench-wf-") as tmp:
        rows = {w: run(w, Path(tmp) / w, args.steps) for w in args.workflows}
    print(f"{'workflow':<14}{'step':>9}{'sample':>9}{'fwd_bwd':>9}{'workflow':>10}{'outside backend':>17}{'(max)':>8}")
    for name, r in rows.items():
        print(
            f"{name:<14}{r['step_s']:>8.3f}s{r['sample_s']:>8.3f}s{r['forward_backward_s']:>8.3f}s"
            f"{r['workflow_s']:>9.3f}s{r['outside_backend_share']:>16.1%}{r['outside_backend_max']:>8.1%}"
        )


if __name__ == "__main__":
    main()
