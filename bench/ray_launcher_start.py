"""Start to first step of one job through the Ray launcher (`hydra/launcher=ray_cluster`) against the
local launcher, side by side in one run (issue 45).

Starts a real one-node Ray cluster with a dashboard on this machine (runtime/nodes.py, stopped by its
own session at the end), then alternates `--runs` times:

  local   python train.py -m trainer.lr=... (the local launcher: a job forked from a fork server
          that has imported the training stack)
  ray     the same sweep with hydra/launcher=ray_cluster hydra.launcher.address=http://...:PORT
          (each job a Ray job whose entrypoint is a fresh `python -m rllm_sweeps`)
  ray_s3  the Ray sweep with its directory on an S3 store (hydra.sweep.dir=s3://...; moto's S3
          server on this machine, tests/s3_server.py): the job stages its directory on the node and
          syncs it with the store, the sweeper its mirror (records/store.py), at the default interval

Each sweep is one job of one step. Timed from the sweeper's process start: `first step` when the
job's metrics.jsonl first holds a train row (where the job writes it: the sweep directory, or for
ray_s3 the job's staging directory), `sweep done` when the sweeper exits. The first run of
each is a warm-up (JAX compilation cache, the built-in model) and is not counted. Prints the medians
and the ratio ray/local.

    .venv/bin/python bench/ray_launcher_start.py [--runs 5]     (moto: `pip install -e '.[dev]'`)
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # s3_server: the tests' S3 store

from s3_server import s3_server  # noqa: E402

from launchers.ray_task import staging_dirs  # noqa: E402
from rllm_sweeps.records.store import mirror_dir  # noqa: E402
from rllm_sweeps.runtime.auth import AUTH_VARS  # noqa: E402
from rllm_sweeps.runtime.nodes import client_env, start_head_node  # noqa: E402
from rllm_sweeps.runtime.ray_env import this_process_env  # noqa: E402
from rllm_sweeps.runtime.spec import RayClusterSpec  # noqa: E402

JOB = ["trainer.total_batches=1", "trainer.val_before_train=false", "trainer.test_freq=0", "task.dataset.val_size=8"]
JOB += ["data.train_batch_size=8", "rollout.n=4", "resources.mem_gb=2"]


def first_train_row(jobs: list[Path]) -> bool:
    """Whether a job directory of `jobs` (globbed) has a train row in its metrics.jsonl yet."""
    for metrics in (m for pattern in jobs for m in glob.glob(str(pattern / "metrics.jsonl"))):
        try:
            rows = [line for line in Path(metrics).read_text().splitlines() if line.endswith("}")]
        except FileNotFoundError:  # a staging directory removed as its job ended
            continue
        if any(json.loads(line).get("kind") == "train" for line in rows):
            return True
    return False


def where_jobs_write(sweep_dir: str) -> list[Path]:
    """Where the sweep's jobs write their metrics: its jobs/ directories, or the staging directories
    of the jobs of a sweep on a store (launchers/ray_task.py)."""
    if "://" not in sweep_dir:
        return [Path(sweep_dir) / "jobs" / "*"]
    return [staging / "*" for staging in staging_dirs(mirror_dir(sweep_dir).name)]


def timed_sweep(sweep_dir: str, launcher: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds to the first train row, seconds to the sweeper's exit)."""
    argv = [sys.executable, str(REPO / "train.py"), "-m", *launcher, "trainer.lr=1e-3", *JOB]
    env = {**{k: v for k, v in os.environ.items() if k not in AUTH_VARS and k != "RAY_ADDRESS"}, **env}
    start = time.monotonic()
    proc = subprocess.Popen(
        [*argv, f"hydra.sweep.dir={sweep_dir}"], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    first = None
    while proc.poll() is None:  # a job's staging directory appears once it starts: looked for each time
        if first is None and first_train_row(where_jobs_write(sweep_dir)):
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
    with s3_server() as s3:
        s3.make_bucket("rllm-bench")
        measure(args.runs, s3.env)


def measure(runs: int, s3_env: dict[str, str]) -> None:
    # The store's address and credentials in the node's environment, as a cloud node has them.
    spec = RayClusterSpec(num_cpus=2, object_store_memory_mb=100, include_dashboard=True, env=s3_env)
    with this_process_env(client_env(spec, None, head=True), drop=AUTH_VARS):
        head = start_head_node(spec)
    try:
        url = f"http://127.0.0.1:{head.ports.dashboard}"
        wait_for_dashboard(url)
        ray = ["hydra/launcher=ray_cluster", f"hydra.launcher.address={url}"]
        ways = {"local": ([], {}), "ray": (ray, {}), "ray_s3": (ray, s3_env)}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
        stamp = time.strftime("%H%M%S")
        with tempfile.TemporaryDirectory(prefix="ray_start_") as root:
            for run in range(runs + 1):
                for name, (launcher, env) in ways.items():
                    where = f"s3://rllm-bench/{stamp}-{run}" if name == "ray_s3" else f"{root}/{name}{run}"
                    first, done = timed_sweep(where, launcher, env)
                    label = "warm-up" if run == 0 else f"run {run}"
                    print(f"{label:8} {name:6} first step {first:6.1f} s  sweep done {done:6.1f} s", flush=True)
                    if run:
                        times[name].append((first, done))
        print(f"\nmedians over {runs} runs (one 1-step job per sweep; Ray {url}, a one-node cluster):")
        med = {name: tuple(statistics.median(t[i] for t in rows) for i in (0, 1)) for name, rows in times.items()}
        for name, (first, done) in med.items():
            print(f"  {name:6} first step {first:6.1f} s  sweep done {done:6.1f} s")
        for name in ("ray", "ray_s3"):
            print(
                f"  {name}/local: first step {med[name][0] / med['local'][0]:.2f}x, "
                f"sweep done {med[name][1] / med['local'][1]:.2f}x"
            )
        for run in range(runs + 1):
            shutil.rmtree(mirror_dir(f"s3://rllm-bench/{stamp}-{run}"), ignore_errors=True)
    finally:
        head.stop()


if __name__ == "__main__":
    main()
