"""Local sweeps on a GPU machine (issue 33): two jobs one at a time (the default: one job per GPU)
against the same two sharing one GPU (resources.jobs_per_gpu=2), and a shared pair whose micro batch
does not fit (recorded as out of memory). Prints wall time, step times and GPU memory per job.

    python bench/gpu_placement.py [--steps 10] [--skip-oom] [KEY=VALUE ...]

Each sweep is `python train.py -m trainer.lr=1e-4,3e-4 hydra.sweeper.parallel=2 ...` with the
0.44 B built-in model (`builtin:qwen3-0.5b-random`, 32 prompts x 8 samples, LoRA r32). GPU memory
per job: NVML's per-process figure (nvidia-ml-py), sampled every 0.5 s, matched to the jobs by the
pids their attempts.jsonl records.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MODEL = [
    "model.path=builtin:qwen3-0.5b-random",
    "resources.gpus_per_node=1",
    "data.train_batch_size=32",
    "rollout.n=8",
    "trainer.mini_batch_size=32",
    "data.max_response_length=128",
    "data.max_prompt_length=64",
    "model.lora.rank=32",
    "model.lora.alpha=32",
    "trainer.val_before_train=false",
    "trainer.test_freq=0",
    "trainer.save_freq=-1",
]


class MemorySampler(threading.Thread):
    """Peak GPU memory (MiB) of each process NVML sees, until stopped."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak: dict[int, float] = {}
        self.done = threading.Event()

    def run(self) -> None:
        import pynvml

        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError:
            return  # no NVIDIA driver: no GPU memory to sample
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        while not self.done.wait(0.5):
            for h in handles:
                for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
                    used = (p.usedGpuMemory or 0) / 2**20
                    self.peak[p.pid] = max(self.peak.get(p.pid, 0.0), used)
        pynvml.nvmlShutdown()


def run_sweep(name: str, sweep_dir: Path, extra: list[str], steps: int, cwd: Path = REPO) -> dict:
    """`cwd`: the sweep's working directory, which goes on its jobs' PYTHONPATH (the user's modules): a
    run of the installed package passes one outside the checkout, whose uninstalled copy would win."""
    from rllm_sweeps.records.attempts import read_events
    from rllm_sweeps.records.metrics import read_metrics
    from rllm_sweeps.records.result import JobResult

    cmd = [sys.executable, str(REPO / "train.py"), "-m", "trainer.lr=1e-4,3e-4", "hydra.sweeper.parallel=2"]
    cmd += [*MODEL, f"trainer.total_batches={steps}", *extra, f"hydra.sweep.dir={sweep_dir}"]
    sampler = MemorySampler()
    sampler.start()
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.monotonic() - start
    sampler.done.set()
    sampler.join()
    (sweep_dir / "sweeper.out").write_text(proc.stdout + proc.stderr)
    jobs = []
    for job_dir in sorted(sweep_dir.glob("jobs/*")):
        result = JobResult.read(job_dir)
        train = [r for r in read_metrics(job_dir) if r["kind"] == "train"]
        times = [r["time"] for r in train]
        pids = [e.pid for e in read_events(job_dir) if e.event == "start" and e.pid]
        jobs.append(
            {
                "job": job_dir.name,
                "status": result.status if result else "no-result",
                "failure_kind": result.failure_kind if result else None,
                "gpus": result.gpus if result else None,
                "wall_s": round(result.wall_time_s, 1) if result else None,
                "first_step_s": round(times[0] - result.started_at, 1) if result and times else None,
                "median_step_s": round(statistics.median(b - a for a, b in zip(times, times[1:], strict=False)), 2)
                if len(times) > 2
                else None,
                "steps": len(train),
                "peak_gpu_mib": round(max((sampler.peak.get(p, 0.0) for p in pids), default=0.0)),
                "error": (result.error or "").strip().splitlines()[-1][:200] if result and result.error else None,
            }
        )
    return {"sweep": name, "rc": proc.returncode, "wall_s": round(wall, 1), "jobs": jobs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--skip-oom", action="store_true")
    parser.add_argument(
        "--micro-batch",
        type=int,
        default=None,
        help="micro batch of every run (default: the shared run's 16 only)",
    )
    parser.add_argument("--out", type=Path, default=Path("/tmp/gpu_placement"))
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path

    start = time.monotonic()
    resolve_model_path("builtin:qwen3-0.5b-random", cache_dir())  # built once, before the timed sweeps
    print(f"model ready in {time.monotonic() - start:.1f} s", flush=True)
    micro = [f"skyrl.jax.train_micro_batch_size={args.micro_batch}"] if args.micro_batch else []
    shared_micro = micro or ["skyrl.jax.train_micro_batch_size=16"]
    runs = [
        ("one at a time (default)", micro, args.steps),
        ("two sharing one GPU", ["resources.jobs_per_gpu=2", *shared_micro], args.steps),
    ]
    if not args.skip_oom:
        runs.append(("two sharing one GPU, default micro batch", ["resources.jobs_per_gpu=2"], 2))
    results = []
    for i, (name, extra, steps) in enumerate(runs):
        res = run_sweep(name, args.out / f"sweep{i}", [*extra, *args.overrides], steps)
        results.append(res)
        print(json.dumps(res), flush=True)
    print()
    print("| sweep | rc | sweep wall | job | status | GPUs | job wall | first step | median step | peak GPU memory |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for res in results:
        for job in res["jobs"]:
            kind = f" ({job['failure_kind']})" if job["failure_kind"] else ""
            print(
                f"| {res['sweep']} | {res['rc']} | {res['wall_s']} s | {job['job']} | {job['status']}{kind} | "
                f"{job['gpus']} | {job['wall_s']} s | {job['first_step_s']} s | {job['median_step_s']} s | "
                f"{job['peak_gpu_mib']} MiB |"
            )


if __name__ == "__main__":
    main()
