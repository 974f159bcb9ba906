"""Start-up of one job: process start -> first completed optimizer step, median of several runs.

Runs the embedded default job (`python train.py trainer.total_batches=1
trainer.val_before_train=false`) `--runs` times on a warm machine (the JAX compilation cache
and the built-in model filled by a first, uncounted run), timestamps every output line from
the moment the process is started, and prints the median of each moment:

  job dir        "job <hash> in <dir>": interpreter, pre-flight validation, Hydra, the job's records
  imports done   SkyRL's JaxBackend starts ("Using local model"): transformers/torch, JAX, SkyRL imported
  backend ready  "Initialized base model": the model built and its weights loaded (JAX, eagerly)
  adapter made   "Created model policy": the LoRA adapter and optimizer (compiled, or from the cache)
  first step     "Applied optimizer step": first sampling, forward_backward and optimizer step
                 (each compiled, or loaded from the shared compilation cache)

With `--before DIR` (another checkout of this repository, e.g. a git worktree of an earlier
commit) the two trees run alternately, side by side in one run, and the ratio is printed:
on a shared, noisy machine only such ratios compare.

    .venv/bin/python bench/startup.py [--runs 5] [--before /tmp/headwt]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JOB = ["trainer.total_batches=1", "trainer.val_before_train=false", "trainer.test_freq=0"]
MARKS = {  # the first output line matching each, in the order they come
    "job dir": lambda line: line.startswith("job ") and " in " in line,
    "imports done": lambda line: "Using local model at" in line,  # SkyRL's JaxBackend starts
    "backend ready": lambda line: "Initialized base model" in line,
    "adapter made": lambda line: "Created model policy" in line,
    "first step": lambda line: "Applied optimizer step" in line,
}


def run_once(tree: Path, job_dir: Path) -> dict[str, float]:
    """Seconds from process start to each mark (the first line matching it)."""
    cmd = [sys.executable, "-u", str(tree / "train.py"), *JOB, f"hydra.run.dir={job_dir}"]
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"}
    seen: dict[str, float] = {}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            now = time.perf_counter() - start
            for name, matches in MARKS.items():
                if name not in seen and matches(line):
                    seen[name] = now

    reader = threading.Thread(target=read)
    reader.start()
    code = proc.wait()
    reader.join()
    seen["exit"] = time.perf_counter() - start
    if code != 0 or "first step" not in seen:
        raise SystemExit(f"{' '.join(cmd)} exited {code} without an optimizer step")
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another checkout to run alternately (the 'before' side)")
    args = parser.parse_args()
    trees = {"this tree": REPO} | ({"before": args.before.resolve()} if args.before else {})
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="rllm-startup-") as tmp:
        for name, tree in trees.items():  # fills the caches (compilation, built-in model); not counted
            run_once(tree, Path(tmp) / f"warm-{name.replace(' ', '_')}")
        for i in range(args.runs):
            for name, tree in trees.items():
                results[name].append(run_once(tree, Path(tmp) / f"{name.replace(' ', '_')}-{i}"))
                r = results[name][-1]
                print(f"  {name:10s} run {i + 1}: " + ", ".join(f"{k} {v:.1f}s" for k, v in r.items()), flush=True)
    print(f"median of {args.runs} runs, seconds from process start (load average {os.getloadavg()[0]:.1f}):")
    print(f"{'':12s}" + "".join(f"{m:>15s}" for m in [*MARKS, "exit"]))
    for name, runs in results.items():
        cells = [statistics.median(r.get(m, float("nan")) for r in runs) for m in [*MARKS, "exit"]]
        print(f"{name:12s}" + "".join(f"{c:>14.1f}s" for c in cells))
    if args.before:
        ours = statistics.median(r["first step"] for r in results["this tree"])
        theirs = statistics.median(r["first step"] for r in results["before"])
        print(f"first optimizer step: this tree / before = {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
