"""Time to bring up and tear down a per-job Ray cluster (median of N).

    .venv/bin/python bench/ray_bringup.py [--repeats 3] [--no-multinode]

"up" = a job's `job_ray_cluster` (what job/train.py runs) from entry until it yields:
`ray start --head --block` spawned, the GCS reports the node alive, ray.json
written, RAY_ADDRESS exported; "first init" = a fresh `python -c "import ray;
ray.init()"` child connecting through RAY_ADDRESS (what SkyRL's
initialize_ray pays on top); "down" = the context's exit until no process of
the cluster remains.  The 2-node variant starts a head and one worker node on this
machine and waits until the GCS reports both alive.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rllm_sweeps.runtime.job_ray import RAY_FILE, job_ray_cluster
from rllm_sweeps.runtime.nodes import start_head_node, start_worker_node
from rllm_sweeps.runtime.processes import pid_alive
from rllm_sweeps.runtime.spec import RayClusterSpec

SPEC = RayClusterSpec(num_cpus=2, object_store_memory_mb=100)


def one_local(with_init: bool) -> tuple[float, float, float]:
    init = float("nan")
    with tempfile.TemporaryDirectory() as job_dir:
        with contextlib.ExitStack() as stack:
            t0 = time.perf_counter()
            stack.enter_context(job_ray_cluster(Path(job_dir), num_cpus=SPEC.num_cpus, num_gpus=0, nodes=1))
            up = time.perf_counter() - t0
            if with_init:
                t1 = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-c", "import ray; ray.init(); ray.shutdown()"],
                    env=dict(os.environ),
                    check=True,
                    capture_output=True,
                )
                init = time.perf_counter() - t1
            t2 = time.perf_counter()
        down = time.perf_counter() - t2
        pids = json.loads((Path(job_dir) / RAY_FILE).read_text())["pids"]
    assert not [p for p in pids if pid_alive(p)]
    return up, init, down


def one_two_node() -> tuple[float, float]:
    t0 = time.perf_counter()
    head = start_head_node(SPEC)
    worker = None
    try:
        worker = start_worker_node(head.address, SPEC, expect_nodes=2)
        up = time.perf_counter() - t0
    finally:
        t1 = time.perf_counter()
        if worker is not None:
            worker.stop()
        head.stop()
        down = time.perf_counter() - t1
    return up, down


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-multinode", action="store_true")
    args = ap.parse_args()
    med = statistics.median

    runs = [one_local(with_init=True) for _ in range(args.repeats)]
    ups, inits, downs = zip(*runs, strict=True)
    print(f"local cluster (median of {args.repeats}, {os.cpu_count()} cores)")
    print(f"  up          {med(ups):6.2f} s   runs: {', '.join(f'{x:.2f}' for x in ups)}")
    print(f"  first init  {med(inits):6.2f} s   runs: {', '.join(f'{x:.2f}' for x in inits)}")
    print(f"  down        {med(downs):6.2f} s   runs: {', '.join(f'{x:.2f}' for x in downs)}")
    if not args.no_multinode:
        runs2 = [one_two_node() for _ in range(args.repeats)]
        ups2, downs2 = zip(*runs2, strict=True)
        print(f"head + 1 worker, 2 nodes alive (median of {args.repeats})")
        print(f"  up          {med(ups2):6.2f} s   runs: {', '.join(f'{x:.2f}' for x in ups2)}")
        print(f"  down        {med(downs2):6.2f} s   runs: {', '.join(f'{x:.2f}' for x in downs2)}")


if __name__ == "__main__":
    main()
