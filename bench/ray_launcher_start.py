"""Start to first step of one job through the Ray launcher (`hydra/launcher=ray_cluster`) against the
local launcher, side by side in one run (issue 45).

Starts a real one-node Ray cluster with a dashboard on this machine (runtime/nodes.py, stopped by its
own session at the end), then alternates `--runs` times:

  local   python train.py -m trainer.lr=... (the local launcher: a job forked from a fork server
          that has imported the training stack)
  ray     the same sweep with hydra/launcher=ray_cluster hydra.launcher.address=http://...:PORT
          (each job a Ray job whose entrypoint is a fresh `python -m rllm_sweeps`)

Each sweep is one job of one step. Timed from the sweeper's process start: `first step` when the
job's metrics.jsonl first holds a train row, `sweep done` when the sweeper exits. The first run of
each is a warm-up (JAX compilation cache, the built-in model) and is not counted. Prints the medians
and the ratio ray/local.

    .venv/bin/python bench/ray_launcher_start.py [--runs 5]
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
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rllm_sweeps.runtime.auth import AUTH_VARS  # noqa: E402
from rllm_sweeps.runtime.nodes import client_env, start_head_node  # noqa: E402
from rllm_sweeps.runtime.ray_env import this_process_env  # noqa: E402
from rllm_sweeps.runtime.spec import RayClusterSpec  # noqa: E402

JOB = ["trainer.total_batches=1", "trainer.val_before_train=false", "trainer.test_freq=0", "task.dataset.val_size=8"]
JOB += ["data.train_batch_size=8", "rollout.n=4", "resources.mem_gb=2"]


def first_train_row(sweep_dir: Path) -> bool:
    for metrics in sweep_dir.glob("*/*/metrics.jsonl"):
        if any(json.loads(line).get("kind") == "train" for line in metrics.read_text().splitlines() if line.strip()):
            return True
    return False


def timed_sweep(sweep_dir: Path, launcher: list[str]) -> tuple[float, float]:
    """(seconds to the first train row, seconds to the sweeper's exit)."""
    argv = [sys.executable, str(REPO / "train.py"), "-m", *launcher, "trainer.lr=1e-3", *JOB]
    env = {k: v for k, v in os.environ.items() if k not in AUTH_VARS and k != "RAY_ADDRESS"}
    start = time.monotonic()
    proc = subprocess.Popen(
        [*argv, f"hydra.sweep.dir={sweep_dir}"], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    first = None
    while proc.poll() is None:
        if first is None and first_train_row(sweep_dir):
            first = time.monotonic() - start
        time.sleep(0.1)
    done = time.monotonic() - start
    output = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    if proc.returncode != 0:
        raise SystemExit(f"sweep {sweep_dir} failed (rc {proc.returncode}):\n{output[-3000:]}")
    return (first if first is not None else done), done


def wait_for_dashboard(url: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url + "/api/authentication_mode", timeout=5)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"the dashboard at {url} did not answer in {timeout:g} s") from None
            time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="counted runs of each (after one warm-up)")
    args = parser.parse_args()
    spec = RayClusterSpec(num_cpus=2, object_store_memory_mb=100, include_dashboard=True)
    with this_process_env(client_env(spec, None, head=True), drop=AUTH_VARS):
        head = start_head_node(spec)
    try:
        url = f"http://127.0.0.1:{head.ports.dashboard}"
        wait_for_dashboard(url)
        ways = {"local": [], "ray": ["hydra/launcher=ray_cluster", f"hydra.launcher.address={url}"]}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
        with tempfile.TemporaryDirectory(prefix="ray_start_") as root:
            for run in range(args.runs + 1):
                for name, launcher in ways.items():
                    first, done = timed_sweep(Path(root) / f"{name}{run}", launcher)
                    label = "warm-up" if run == 0 else f"run {run}"
                    print(f"{label:8} {name:6} first step {first:6.1f} s  sweep done {done:6.1f} s", flush=True)
                    if run:
                        times[name].append((first, done))
        print(f"\nmedians over {args.runs} runs (one 1-step job per sweep; Ray {url}, a one-node cluster):")
        med = {name: tuple(statistics.median(t[i] for t in rows) for i in (0, 1)) for name, rows in times.items()}
        for name, (first, done) in med.items():
            print(f"  {name:6} first step {first:6.1f} s  sweep done {done:6.1f} s")
        print(
            f"  ray/local: first step {med['ray'][0] / med['local'][0]:.2f}x, "
            f"sweep done {med['ray'][1] / med['local'][1]:.2f}x"
        )
    finally:
        head.stop()


if __name__ == "__main__":
    main()
