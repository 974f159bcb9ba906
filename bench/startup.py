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

Two ways of starting the same job run alternately, side by side in one run (on a shared, noisy
machine only such ratios compare):

  by hand        `python train.py ...`, a fresh interpreter (a single job; a SLURM job)
  forked         what the local launcher does for a sweep's jobs (launchers/warm_start.py): the
                 job forked from a fork server that has imported the training stack (the server is
                 started by the first, uncounted run), timed from the fork request; as a sweep's
                 job, it carries the digest of its validated overrides (config/planned.py)
  warm server    `python train.py ...` as by hand, with this machine's warm server running
                 (`rllm-sweeps warm start`, launchers/warm_server.py; started by the bench before
                 the first, uncounted run and stopped after the last): timed from process start

With `--before DIR` (another checkout of this repository, e.g. a git worktree of an earlier
commit) that tree's `python train.py` runs alternately with them, and the ratio is printed.
SkyRL's own log lines, which the marks read, are kept with RLLM_SWEEPS_LIBRARY_LOGS=info.

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
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from launchers.warm_server import WARM_SERVER_ENV  # noqa: E402
from launchers.warm_start import WarmStarter  # noqa: E402
from rllm_sweeps.config.planned import overrides_digest  # noqa: E402
from rllm_sweeps.job import LIBRARY_LOGS_ENV  # noqa: E402
from rllm_sweeps.records.launch import JobLaunch, launch_env  # noqa: E402

JOB = ["trainer.total_batches=1", "trainer.val_before_train=false", "trainer.test_freq=0"]
MARKS = {  # the first output line matching each, in the order they come
    "job dir": lambda line: line.startswith("job ") and " in " in line,
    "imports done": lambda line: "Using local model at" in line,  # SkyRL's JaxBackend starts
    "backend ready": lambda line: "Initialized base model" in line,
    "adapter made": lambda line: "Created model policy" in line,
    "first step": lambda line: "Applied optimizer step" in line,
}


def job_env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1", LIBRARY_LOGS_ENV: "info"}


def mark(seen: dict[str, float], line: str, now: float) -> None:
    for name, matches in MARKS.items():
        if name not in seen and matches(line):
            seen[name] = now


def run_by_hand(tree: Path, job_dir: Path, warm_server: bool = False) -> dict[str, float]:
    """Seconds from process start to each mark (the first line matching it)."""
    cmd = [sys.executable, "-u", str(tree / "train.py"), *JOB, f"hydra.run.dir={job_dir}"]
    env = job_env(tree) if warm_server else {**job_env(tree), WARM_SERVER_ENV: "off"}
    seen: dict[str, float] = {}
    refused: list[str] = []
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            refused.extend([line] if "warm server was not used" in line else [])
            mark(seen, line, time.perf_counter() - start)

    reader = threading.Thread(target=read)
    reader.start()
    code = proc.wait()
    reader.join()
    seen["exit"] = time.perf_counter() - start
    if refused:
        raise SystemExit(refused[0])
    if code != 0 or "first step" not in seen:
        raise SystemExit(f"{' '.join(cmd)} exited {code} without an optimizer step")
    return seen


def run_forked(starter: WarmStarter, job_dir: Path) -> dict[str, float]:
    """The same job forked by the local launcher's fork server; seconds from the fork request."""
    argv = [sys.executable, str(REPO / "train.py"), *JOB, f"hydra.run.dir={job_dir}"]
    job_dir.mkdir(parents=True)
    log = job_dir / "job.log"
    log.touch()
    seen: dict[str, float] = {}
    start = time.perf_counter()
    launch = JobLaunch(0, overrides_digest(JOB), ())  # as the runner hands a planned job (generation 0: unfenced)
    env = {**job_env(REPO), **launch_env(launch.write(job_dir))}
    proc = starter.start(argv, env, log)
    with log.open() as f:  # the job appends its output to the log: read it as it grows
        while True:
            code = proc.poll()
            for line in f.readlines():
                mark(seen, line, time.perf_counter() - start)
            if code is not None:
                break
            time.sleep(0.01)
    seen["exit"] = time.perf_counter() - start
    if code != 0 or "first step" not in seen:
        raise SystemExit(f"forked {' '.join(argv)} exited {code} without an optimizer step")
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another checkout to run alternately (the 'before' side)")
    args = parser.parse_args()
    starter = WarmStarter()
    ways: dict[str, Callable[[Path], dict[str, float]]] = {
        "by hand": lambda job_dir: run_by_hand(REPO, job_dir),
        "forked": lambda job_dir: run_forked(starter, job_dir),
        "warm server": lambda job_dir: run_by_hand(REPO, job_dir, warm_server=True),
    }
    if args.before:
        ways["before"] = lambda job_dir: run_by_hand(args.before.resolve(), job_dir)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in ways}
    warm = [sys.executable, "-m", "rllm_sweeps.cli", "warm"]
    subprocess.run([*warm, "start"], env=job_env(REPO), check=True)  # in the jobs' environment
    with tempfile.TemporaryDirectory(prefix="rllm-startup-") as tmp:
        for name, way in ways.items():  # fills the caches (compilation, model) and starts the fork server
            way(Path(tmp) / f"warm-{name.replace(' ', '_')}")
        for i in range(args.runs):
            for name, way in ways.items():
                results[name].append(way(Path(tmp) / f"{name.replace(' ', '_')}-{i}"))
                r = results[name][-1]
                print(f"  {name:11s} run {i + 1}: " + ", ".join(f"{k} {v:.1f}s" for k, v in r.items()), flush=True)
    subprocess.run([*warm, "stop"], env=job_env(REPO), check=True)
    print(f"median of {args.runs} runs, seconds from process start or fork (load average {os.getloadavg()[0]:.1f}):")
    print(f"{'':12s}" + "".join(f"{m:>15s}" for m in [*MARKS, "exit"]))
    for name, runs in results.items():
        cells = [statistics.median(r.get(m, float("nan")) for r in runs) for m in [*MARKS, "exit"]]
        print(f"{name:12s}" + "".join(f"{c:>14.1f}s" for c in cells))
    first = {name: statistics.median(r["first step"] for r in runs) for name, runs in results.items()}
    print(f"first optimizer step: forked / by hand = {first['forked'] / first['by hand']:.2f}")
    print(f"first optimizer step: warm server / by hand = {first['warm server'] / first['by hand']:.2f}")
    if args.before:
        print(f"first optimizer step: by hand / before = {first['by hand'] / first['before']:.2f}")


if __name__ == "__main__":
    main()
