"""A GPU job fits the GPU it gets (issue 48): the 2-job sweep of the issue's "Why" at defaults (no
micro batch set: auto), k = 1, 2, 4 tiny jobs sharing one GPU, and the 0.44 B model's step time at
the auto micro batch. On a machine without a GPU: a smoke check of the same plumbing (a dry run of
the "Why" sweep, and a 2-job tiny sweep on the CPU), with the figures said to be CPU-only.

On the device's GPU machine (no network, no Ray/vLLM; carry .device/wheels, as bench/gpu_real_model.sh):

    site=$PWD/.device/site; export PYTHONPATH=$site PYTHONSAFEPATH=1 PYTHONUNBUFFERED=1
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $site .device/wheels/*.whl
    python3 -m pip install -q --no-index --no-deps --no-compile --no-build-isolation --upgrade --target $site .
    nvidia-smi -L; python3 bench/gpu_fit.py --steps 10 --tiny-steps 10 --out $OUT/gpu_fit | tee $OUT/gpu_fit.txt

    python bench/gpu_fit.py [--steps 10] [--tiny-steps 10] [--skip-why] [--skip-sharing] [--out DIR]

Figures: per sweep its exit status and wall time; per job its status, the micro batch and sampler
batch it ran with (result.json's memory_fit, and its out-of-memory retries), its median step time
and peak GPU memory (NVML, bench/gpu_placement.py's sampler); and the sweeper's estimate lines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
# The sweeps run from outside the checkout: a sweep puts its working directory on its jobs' PYTHONPATH
# (the user's own modules), where the checkout's uninstalled package would shadow the installed one.
RUN_DIR = Path(tempfile.gettempdir())

from gpu_placement import MODEL, run_sweep  # noqa: E402  (bench/gpu_placement.py: the issue's settings)

TINY = ["resources.gpus_per_node=1", "trainer.val_before_train=false", "trainer.test_freq=0", "trainer.save_freq=-1"]
LRS = "trainer.lr=1e-4,2e-4,3e-4,4e-4"


def has_gpu() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
        return count > 0
    except Exception:  # no driver, no library: no GPU to place on
        return False


def with_fit(res: dict, sweep_dir: Path) -> dict:
    """run_sweep's figures, with each job's sizes from its result.json and the sweeper's estimate lines."""
    from rllm_sweeps.records.result import JobResult

    for job in res["jobs"]:
        result = JobResult.read(sweep_dir / "jobs" / job["job"])
        fit = result.memory_fit if result else None
        job["micro_batch"] = fit.train_micro_batch_size if fit else None
        job["sample_sequences"] = fit.sample_max_num_sequences if fit else None
        job["chosen"] = f"{fit.train_chosen}/{fit.sample_chosen}" if fit else None
        job["retries"] = [f"{r.size} {r.failed_at}->{r.retried_at}" for r in fit.retries] if fit else []
    out = (sweep_dir / "sweeper.out").read_text() if (sweep_dir / "sweeper.out").exists() else ""
    res["estimate_lines"] = [
        line for line in out.splitlines() if line.startswith(("GPU memory", "  job ", "warning:", "error:", "  - job"))
    ]
    return res


def sharing_sweep(k: int, out: Path, steps: int) -> dict:
    """4 tiny jobs, k sharing each GPU (k = 1: queued one at a time on a one-GPU machine)."""
    extra = [*TINY, f"resources.jobs_per_gpu={k}", "hydra.sweeper.parallel=4", LRS]
    return run_tiny(f"tiny x4, jobs_per_gpu={k}", out / f"share{k}", extra, steps)


def run_tiny(name: str, sweep_dir: Path, extra: list[str], steps: int) -> dict:
    cmd = [sys.executable, str(REPO / "train.py"), "-m", *extra, f"trainer.total_batches={steps}"]
    cmd.append(f"hydra.sweep.dir={sweep_dir}")
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=RUN_DIR, capture_output=True, text=True)
    wall = time.monotonic() - start
    sweep_dir.mkdir(parents=True, exist_ok=True)
    (sweep_dir / "sweeper.out").write_text(proc.stdout + proc.stderr)
    from rllm_sweeps.records.result import JobResult

    statuses = [str(r.status) if (r := JobResult.read(d)) else "no-result" for d in sorted(sweep_dir.glob("jobs/*"))]
    return {"sweep": name, "rc": proc.returncode, "wall_s": round(wall, 1), "statuses": statuses}


def cpu_smoke(out: Path, steps: int) -> None:
    """No GPU here: the same code paths, figures not to be compared with a GPU's."""
    print("no GPU on this machine: a CPU smoke check only (dry run of the 'Why' sweep, a 2-job tiny sweep)")
    dry = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "-m", "trainer.lr=1e-4,3e-4", *MODEL, "hydra.sweeper.dry_run=true"],
        cwd=RUN_DIR,
        capture_output=True,
        text=True,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "0"},  # a GPU job's plan, nothing to compare with
    )
    print(f"dry run rc={dry.returncode}")
    print("\n".join(line for line in dry.stdout.splitlines() if "GPU memory" in line or "  job " in line))
    extra = ["trainer.lr=1e-4,3e-4", "hydra.sweeper.parallel=2", "trainer.val_before_train=false"]
    extra.append("trainer.test_freq=0")
    res = run_tiny("tiny x2 on the CPU", out / "cpu", extra, steps)
    res = with_fit({**res, "jobs": [{"job": d.name} for d in sorted((out / "cpu").glob("jobs/*"))]}, out / "cpu")
    print(json.dumps(res))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="steps of the 0.44 B model's jobs")
    parser.add_argument("--tiny-steps", type=int, default=10, help="steps of the tiny jobs")
    parser.add_argument("--skip-why", action="store_true")
    parser.add_argument("--skip-sharing", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("/tmp/gpu_fit"))
    args = parser.parse_args()
    if not has_gpu():
        cpu_smoke(args.out, 1)
        return
    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path

    start = time.monotonic()
    resolve_model_path("builtin:qwen3-0.5b-random", cache_dir())  # built once, before the timed sweeps
    resolve_model_path("builtin:tiny-qwen3", cache_dir())
    print(f"models ready in {time.monotonic() - start:.1f} s", flush=True)
    if not args.skip_why:
        # The "Why": 2 jobs, parallel 2, one GPU each, no micro batch set (auto).
        why_dir = args.out / "why"
        why = with_fit(run_sweep("why: 2 jobs at defaults", why_dir, [], args.steps, cwd=RUN_DIR), why_dir)
        print(json.dumps(why), flush=True)
        print("\n".join(why["estimate_lines"]))
        done = sum(j["status"] == "completed" for j in why["jobs"])
        print(f"why: {done}/{len(why['jobs'])} completed, sweep wall {why['wall_s']} s")
        print("| job | status | micro batch | sampler batch | chosen | retries | median step | peak GPU memory |")
        print("|---|---|---|---|---|---|---|---|")
        for j in why["jobs"]:
            print(
                f"| {j['job']} | {j['status']} | {j['micro_batch']} | {j['sample_sequences']} | {j['chosen']} | "
                f"{', '.join(j['retries']) or 'none'} | {j['median_step_s']} s | {j['peak_gpu_mib']} MiB |"
            )
    if not args.skip_sharing:
        rows = [sharing_sweep(k, args.out, args.tiny_steps) for k in (1, 2, 4)]
        for row in rows:
            print(json.dumps(row), flush=True)
        base = rows[0]["wall_s"]
        print("| tiny jobs | jobs per GPU | rc | sweep wall | speed-up | statuses |")
        print("|---|---|---|---|---|---|")
        for k, row in zip((1, 2, 4), rows, strict=True):
            print(f"| 4 | {k} | {row['rc']} | {row['wall_s']} s | {base / row['wall_s']:.2f}x | {row['statuses']} |")


if __name__ == "__main__":
    main()
