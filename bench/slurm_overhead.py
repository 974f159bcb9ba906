"""What running on SLURM costs, on the project's real local cluster (issue 5).

    .venv/bin/python bench/slurm_overhead.py [--rounds 2] [--two-nodes]

Prints, in one run:
- result-detection latency: a job's process ends -> the SLURM launcher reports it finished
  (SlurmLauncher.poll, sacct at most every poll_interval_s as in cluster=local);
- per-job overhead of a training job: SLURM start (sacct) -> first training step
  (metrics.jsonl), and the part of it the job's Ray bring-up takes (ray.json ray_up_s);
- the same 4-job sweep (2 at a time) through our sweeper (hydra/launcher=slurm) and through
  hydra-submitit-launcher (Hydra's BasicSweeper + submitit_slurm), wall-time ratio;
- with --two-nodes: Ray bring-up of a 2-node job on a 2-node cluster whose nodes have
  their own network namespaces (needs root), next to the 1-node figure.

The local cluster is brought up if it is not, and then taken down again.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from launchers.base import JobState, LaunchRequest  # noqa: E402
from launchers.slurm import SlurmLauncher, SlurmSettings  # noqa: E402
from rllm_sweeps.local_slurm import LocalSlurm  # noqa: E402
from rllm_sweeps.records.attempts import latest_scheduler_id  # noqa: E402
from rllm_sweeps.records.metrics import read_metrics  # noqa: E402
from rllm_sweeps.records.resources import Resources  # noqa: E402

QUICK = [
    "trainer.total_batches=2",
    "trainer.val_before_train=false",
    "trainer.test_freq=0",
    "task.dataset.val_size=8",
]
SHAPE = {"nodes": 1, "gpus_per_node": 0, "cpus_per_task": 1, "jobs_per_gpu": 1, "mem_gb": 4, "time_min": 10}
LRS = "trainer.lr=1e-3,2e-3,3e-3,4e-3"


def run(cmd: list[str], env: dict[str, str] | None = None, prefix: list[str] | None = None) -> float:
    """Wall seconds of a command that must succeed."""
    start = time.monotonic()
    proc = subprocess.run((prefix or []) + cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return time.monotonic() - start


def detection_latency(conf: Path, repeats: int, work: Path) -> list[float]:
    """Seconds from a job's process ending to SlurmLauncher.poll saying FINISHED."""
    launcher = SlurmLauncher(SlurmSettings(partition="debug", env={"SLURM_CONF": str(conf)}, poll_interval_s=1.0))
    latencies = []
    for i in range(repeats):
        job_dir = work / f"detect-{i}"
        stamp = job_dir / "ended_at"
        code = f"import time, pathlib; pathlib.Path({str(stamp)!r}).write_text(repr(time.time()))"
        argv = [sys.executable, "-c", code]
        request = LaunchRequest(index=i, job_dir=job_dir, argv=argv, resources=Resources(**SHAPE))
        job = launcher.submit(request)
        while launcher.poll(job).state is not JobState.FINISHED:
            time.sleep(0.05)
        latencies.append(time.time() - float(stamp.read_text()))
    return latencies


def sacct_starts(ids: list[str], env: dict[str, str], prefix: list[str]) -> dict[str, datetime]:
    cmd = [*prefix, "sacct", "-n", "-X", "-P", "-j", ",".join(ids), "-o", "JobID,Start"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env).stdout
    rows = [line.split("|") for line in out.splitlines() if "|" in line]
    return {job_id: datetime.fromisoformat(start) for job_id, start in rows if start not in ("Unknown", "None")}


def job_overheads(sweep_dir: Path, env: dict[str, str], prefix: list[str] | None = None) -> list[tuple[float, float]]:
    """(SLURM start -> first training step, Ray bring-up) in seconds, per job of a sweep."""
    job_dirs = sorted(p for p in (sweep_dir / "jobs").glob("*") if latest_scheduler_id(p))
    ids = {d: latest_scheduler_id(d) for d in job_dirs}
    starts = sacct_starts(list(ids.values()), env, prefix or [])
    out = []
    for d in job_dirs:
        first = next(r for r in read_metrics(d) if r["kind"] == "train")
        ray = json.loads((d / "ray.json").read_text())
        out.append((first["time"] - starts[ids[d]].timestamp(), float(ray.get("ray_up_s", float("nan")))))
    return out


def submitit_job_overheads(sweep_dir: Path, env: dict[str, str]) -> list[tuple[float, float]]:
    """The same for hydra-submitit-launcher's jobs (SWEEP/N, SLURM ids in SWEEP/.submitit/ID_N)."""
    tasks = [p.name for p in (sweep_dir / ".submitit").iterdir() if re.fullmatch(r"\d+_\d+", p.name)]
    ids = {name.rsplit("_", 1)[1]: name for name in tasks}
    starts = sacct_starts(list(ids.values()), env, [])
    out = []
    for num, job_id in sorted(ids.items()):
        first = next(r for r in read_metrics(sweep_dir / num) if r["kind"] == "train")
        ray = json.loads((sweep_dir / num / "ray.json").read_text())
        out.append((first["time"] - starts[job_id].timestamp(), float(ray.get("ray_up_s", float("nan")))))
    return out


def our_sweep(sweep_dir: Path, env: dict[str, str], *extra: str, prefix: list[str] | None = None) -> float:
    args = [sys.executable, "train.py", "-m", *QUICK, *(f"resources.{k}={v}" for k, v in SHAPE.items())]
    return run([*args, *extra, "cluster=local", f"hydra.sweep.dir={sweep_dir}"], env, prefix)


def submitit_sweep(sweep_dir: Path, env: dict[str, str]) -> float:
    args = [sys.executable, "train.py", "-m", *QUICK, LRS, "hydra/sweeper=basic", "hydra/launcher=submitit_slurm"]
    args += ["hydra.launcher.partition=debug", "hydra.launcher.timeout_min=10", "hydra.launcher.cpus_per_task=1"]
    args += ["hydra.launcher.mem_gb=4", "hydra.launcher.array_parallelism=2", f"hydra.sweep.dir={sweep_dir}"]
    return run(args, env)


def fmt(values: list[float]) -> str:
    med, lo, hi = statistics.median(values), min(values), max(values)
    return f"median {med:5.2f}s  min {lo:5.2f}s  max {hi:5.2f}s  (n={len(values)})"


def ensure_up(cluster: LocalSlurm) -> bool:
    """Bring the cluster up unless it runs; True if this call started it (and should stop it)."""
    started = not cluster.is_up()
    if started:
        cluster.up()
    return started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2, help="sweep pairs (ours, submitit) to run")
    ap.add_argument("--repeats", type=int, default=5, help="detection-latency samples")
    ap.add_argument("--two-nodes", action="store_true", help="also a 2-node job on a netns cluster (root)")
    args = ap.parse_args()
    cluster = LocalSlurm(Path(os.environ.get("RLLM_SWEEPS_SLURM_BASE", "/tmp/rllm-slurm")), verbose=False)
    started = ensure_up(cluster)
    env = {**os.environ, **cluster.env(), "PYTHONPATH": str(REPO)}
    os.environ.update(cluster.env())
    work = Path(tempfile.mkdtemp(prefix="slurm-bench-"))
    try:
        latencies = detection_latency(cluster.conf, args.repeats, work)
        ours, theirs, overheads, their_overheads = [], [], [], []
        for r in range(args.rounds):  # alternating which goes first: the machine's load drifts
            runs = [("ours", ours), ("submitit", theirs)]
            for name, walls in runs if r % 2 == 0 else runs[::-1]:
                sweep = work / f"{name}-{r}"
                if name == "ours":
                    walls.append(our_sweep(sweep, env, LRS, "hydra.sweeper.parallel=2"))
                    overheads += job_overheads(sweep, env)
                else:
                    walls.append(submitit_sweep(sweep, env))
                    their_overheads += submitit_job_overheads(sweep, env)
        print("result detection (process end -> launcher reports it): " + fmt(latencies))
        print("SLURM start -> first training step, per job:           " + fmt([o[0] for o in overheads]))
        print("  of which Ray bring-up (1 node):                      " + fmt([o[1] for o in overheads]))
        print("  the same through hydra-submitit-launcher:            " + fmt([o[0] for o in their_overheads]))
        mine, hydra = statistics.median(ours), statistics.median(theirs)
        print(
            f"4-job sweep, 2 at a time: ours {mine:.1f}s, hydra-submitit-launcher {hydra:.1f}s, "
            f"ratio ours/theirs {mine / hydra:.2f}"
        )
    finally:
        if started:
            cluster.down()
    if args.two_nodes:
        two_node_bringup(work)


def two_node_bringup(work: Path) -> None:
    base = Path(os.environ.get("RLLM_SWEEPS_SLURM_NETNS_BASE", "/tmp/rllm-slurm-ns"))
    cluster = LocalSlurm(base, nodes=2, netns=True, verbose=False)
    started = ensure_up(cluster)
    env = {**os.environ, **cluster.client_env(), "PYTHONPATH": str(REPO), "RLLM_SWEEPS_SLURM_BASE": str(base)}
    try:
        sweep = work / "two-nodes"
        our_sweep(sweep, env, "resources.nodes=2", "skyrl.jax.use_ray=true", prefix=cluster.client_prefix())
        overheads = job_overheads(sweep, env, cluster.client_prefix())
        print("SLURM start -> first training step, 2-node job:        " + fmt([o[0] for o in overheads]))
        print("  of which Ray bring-up (2 nodes, all joined):         " + fmt([o[1] for o in overheads]))
    finally:
        if started:
            cluster.down()


if __name__ == "__main__":
    main()
