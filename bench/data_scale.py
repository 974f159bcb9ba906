"""A dataset by path of 1,000,000 rows against one of 1,000: the job's peak memory and its first step.

Writes two SkyRL-format parquet files of GSM8K-like rows (1,000 and 1,000,000; one small validation file),
then runs the same 2-step job on each (`python train.py data.train_data=[...] ...`, no validation before the
first step), twice per file:

  cold   the first job on a newly written file: the pre-launch check converts the parquet into ``datasets``'
         memory-mapped Arrow cache and decides which prompts fit data.max_prompt_length (SkyRL's filter: every
         prompt's chat template rendered, tokens counted where its bytes do not decide: data/lengths.py)
  warm   a later job on the same file (a sweep's jobs after its one check, a rerun, a resumed job); run
         --repeats times, the sizes alternating, and the median taken (the machine's other load moves a
         job's start by seconds)

and reports each job's peak resident memory (/usr/bin/time's maximum RSS of the job process) and the time
from process start to its first completed step (the first `train` record of metrics.jsonl).

    .venv/bin/python bench/data_scale.py [--rows 1000000] [--repeats 3] [--dir /tmp/data_scale]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JOB = [
    "trainer.total_batches=2",
    "trainer.val_before_train=false",
    "data.train_batch_size=8",
    "data.val_batch_size=8",
    "rollout.n=2",
    "data.max_prompt_length=128",
    "environment.env_class=gsm8k",
]


def write_rows(path: Path, n: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    i = pa.array(range(n), pa.int64())
    text = [f"Tom has {k % 97} apples and buys {k % 13} more. How many apples does he have now?" for k in range(n)]
    prompt = pa.array([[{"role": "user", "content": t}] for t in text])
    truth = [str(k % 97 + k % 13) for k in range(n)]
    table = pa.table(
        {
            "data_source": pa.array(["gsm8k"] * n),
            "prompt": prompt,
            "env_class": pa.array(["gsm8k"] * n),
            "reward_spec": pa.array([{"method": "rule", "ground_truth": t} for t in truth]),
            "extra_info": pa.array([{"index": k} for k in i.to_pylist()]),
        }
    )
    pq.write_table(table, path)


def run(train: Path, val: Path, job_dir: Path) -> dict[str, float]:
    shutil.rmtree(job_dir, ignore_errors=True)
    cmd = ["/usr/bin/time", "-f", "maxrss_kb=%M cpu_s=%U+%S", sys.executable, "train.py", *JOB]
    cmd += [f"data.train_data=[{train}]", f"data.val_data=[{val}]", f"hydra.run.dir={job_dir}"]
    start = time.time()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stdout[-3000:] + proc.stderr[-3000:])
    rss = int(re.search(r"maxrss_kb=(\d+)", proc.stderr).group(1))
    user, system = map(float, re.search(r"cpu_s=([\d.]+)\+([\d.]+)", proc.stderr).groups())
    first = next(json.loads(x) for x in (job_dir / "metrics.jsonl").read_text().splitlines() if '"train"' in x)
    # CPU seconds of the whole job (2 steps): the other load of the machine moves them far less than its times.
    return {"peak_rss_mb": rss / 1024, "first_step_s": first["time"] - start, "cpu_s": user + system}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3, help="warm jobs per file (the median is reported)")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/data_scale"))
    args = ap.parse_args()
    shutil.rmtree(args.dir, ignore_errors=True)
    args.dir.mkdir(parents=True)
    val = args.dir / "val.parquet"
    write_rows(val, 8)
    sizes = (1000, args.rows)
    runs: dict[tuple[int, str], list[dict[str, float]]] = {}

    def job(n: int, kind: str) -> None:
        r = run(args.dir / f"train_{n}.parquet", val, args.dir / f"job_{n}_{kind}")
        runs.setdefault((n, kind), []).append(r)
        rss, first, cpu = r["peak_rss_mb"], r["first_step_s"], r["cpu_s"]
        print(f"{n:>9,} rows {kind}: peak RSS {rss:.0f} MB, first step {first:.1f} s, CPU {cpu:.1f} s", flush=True)

    for n in sizes:
        train = args.dir / f"train_{n}.parquet"
        t = time.time()
        write_rows(train, n)
        print(
            f"wrote {train} ({n:,} rows, {os.path.getsize(train) / 1e6:.1f} MB) in {time.time() - t:.1f} s", flush=True
        )
        job(n, "cold")
    for _ in range(args.repeats):
        for n in sizes:
            job(n, "warm")
    for kind in ("cold", "warm"):
        small, big = ({k: statistics.median(r[k] for r in runs[(n, kind)]) for k in runs[(n, kind)][0]} for n in sizes)
        print(f"{kind} (median of {len(runs[(1000, kind)])}): {args.rows:,} rows vs 1,000:", end="")
        for key, what in (("peak_rss_mb", "peak RSS (MB)"), ("first_step_s", "first step (s)"), ("cpu_s", "CPU (s)")):
            print(f" {what} {big[key]:.1f} vs {small[key]:.1f} ({big[key] - small[key]:+.1f});", end="")
        print()


if __name__ == "__main__":
    main()
