"""The four reference jobs (default, KL, solver-judge, multi-turn), fingerprinted by what they recorded:
the content of every record a job leaves (metrics.jsonl's rows, result.json, ray.json, each checkpoint's
trainer_state.json), read through today's models (rllm_sweeps/records/; an older file through its
migrations, as a new release reads an old sweep directory), every field's value except the envelope
(`schema_version`), wall-clock timings and which code ran (versions, git revision); the SHA-256 of
every array of every checkpoint (restored: orbax names its files at random) and of every other file
of the checkpoints and exported policies.

A refactor that keeps behaviour keeps these fingerprints. Run it before and after and compare:

    .venv/bin/python bench/reference_jobs.py --out /tmp/ref_before.json
    ... change the code ...
    .venv/bin/python bench/reference_jobs.py --out /tmp/ref_after.json --compare /tmp/ref_before.json

Another checkout's code runs the jobs with `--checkout DIR` (its train.py, its .venv's Python);
`--keep DIR` keeps the job directories, `--jobs-from DIR` fingerprints directories a run left
instead of running (both: DIR/<job name>). Prints one line per job (steps, files, identical or the
first differing value); exit 1 on a difference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.model import VERSION_FIELD, dump, read_record
from rllm_sweeps.records.ray_cluster import RayClusterRecord
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.runtime.job_ray import RAY_FILE
from rllm_sweeps.training.checkpoints import TRAINER_STATE_FILE, TrainerState

REPO = Path(__file__).resolve().parents[1]

SHORT = ["trainer.total_batches=4", "trainer.save_freq=2", "trainer.test_freq=2"]
JOBS: dict[str, list[str]] = {
    "default": [],
    "kl": ["algorithm.use_kl_loss=true"],
    "solver_judge": ["workflow=solver_judge"],
    "multi_turn": ["workflow=multi_turn"],
}
# result.json's fields that say which code ran (they differ between checkouts by design) and when
# (clock times: `is_timing` knows durations by name, not these).
RESULT_LEFT_OUT = ("versions", "git_revision", "started_at", "ended_at")
RAY_LEFT_OUT = ("pids",)  # ray.json: the processes of this run (none where no Ray runs)
FILE_TREES = ("checkpoints", "export")  # a job's directories of weights and their files


def is_timing(key: str) -> bool:
    """Wall-clock figures differ run to run; everything else must not."""
    return key.startswith(("time/", "timing/", "perf/")) or key.endswith(("_s", "_sec", "_seconds")) or "time" in key


def content(data: Any, leave_out: tuple[str, ...] = ()) -> Any:
    """A record's JSON data, every value kept but the envelope, the timings and `leave_out`, at any depth."""
    if isinstance(data, dict):
        kept = {k: v for k, v in data.items() if k != VERSION_FIELD and not is_timing(k) and k not in leave_out}
        return {k: content(v) for k, v in sorted(kept.items())}
    if isinstance(data, list):
        return [content(v) for v in data]
    return data


def orbax_arrays(parent: Path) -> dict[str, str]:
    """SHA-256 of each array of the Flax/orbax checkpoint under `parent` (SkyRL's JAX backend saves one as
    `checkpoint_0`): orbax names its data files at random, so the files themselves differ run to run."""
    import jax
    import numpy as np
    from flax.training import checkpoints

    tree = checkpoints.restore_checkpoint(str(parent), target=None, prefix="checkpoint_")
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    out = {}
    for path, leaf in leaves:
        a = np.asarray(leaf)
        out[jax.tree_util.keystr(path)] = hashlib.sha256(f"{a.dtype}{a.shape}".encode() + a.tobytes()).hexdigest()
    return out


def records(job_dir: Path) -> dict[str, Any]:
    """Each record file of the job (path relative to it) -> its content through its model."""
    paths = JobPaths(job_dir)
    found: dict[str, Any] = {"metrics.jsonl": [content(row.model_dump()) for row in read_metrics(job_dir)]}
    found[paths.result.name] = content(dump(read_record(JobResult, paths.result)), leave_out=RESULT_LEFT_OUT)
    found[RAY_FILE] = content(dump(read_record(RayClusterRecord, job_dir / RAY_FILE)), leave_out=RAY_LEFT_OUT)
    for state in sorted(paths.checkpoints.rglob(TRAINER_STATE_FILE)):
        found[str(state.relative_to(job_dir))] = content(dump(read_record(TrainerState, state)))
    return found


def files(job_dir: Path) -> dict[str, str]:
    """The arrays of every orbax checkpoint and every other file of the checkpoints and exports (not
    the records: `records`), each by its SHA-256."""
    digests: dict[str, str] = {}
    for tree in FILE_TREES:
        root = job_dir / tree
        orbax_dirs = sorted({p.parent for p in root.rglob("checkpoint_*") if p.is_dir()})
        for parent in orbax_dirs:
            for name, digest in orbax_arrays(parent).items():
                digests[f"{parent.relative_to(job_dir)}:{name}"] = digest
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.name != TRAINER_STATE_FILE and not any(d in p.parents for d in orbax_dirs):
                digests[str(p.relative_to(job_dir))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return digests


def fingerprint(job_dir: Path) -> dict[str, Any]:
    return {"records": records(job_dir), "files": files(job_dir)}


def run(name: str, overrides: list[str], root: Path, checkout: Path) -> Path:
    """Runs the job with `checkout`'s train.py and interpreter; its directory."""
    job_dir = root / name
    python = checkout / ".venv" / "bin" / "python" if checkout != REPO else Path(sys.executable)
    start = time.monotonic()
    cmd = [str(python), "train.py", *overrides, *SHORT, f"hydra.run.dir={job_dir}"]
    done = subprocess.run(cmd, cwd=checkout, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{name}: rc {done.returncode}\n{done.stderr[-3000:]}")
    print(f"{name}: ran in {time.monotonic() - start:.0f} s ({checkout})", flush=True)
    return job_dir


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """Where `a` and `b` first differ (a dotted path and both values), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where or 'top'}: keys differ: {sorted(a.keys() ^ b.keys())}"
        for key in a:
            if (found := first_difference(a[key], b[key], f"{where}/{key}" if where else key)) is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} entries vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if (found := first_difference(x, y, f"{where}[{i}]")) is not None:
                return found
        return None
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def counts(fp: dict[str, Any]) -> str:
    lines, records_, files_ = len(fp["records"]["metrics.jsonl"]), len(fp["records"]), len(fp["files"])
    return f"{lines} metrics lines, {records_} records, {files_} files"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="where to write the fingerprints (JSON)")
    parser.add_argument("--compare", type=Path, help="earlier fingerprints to compare with")
    parser.add_argument("--checkout", type=Path, default=REPO, help="the checkout whose code runs the jobs")
    parser.add_argument("--keep", type=Path, help="keep the job directories here (DIR/<job>)")
    parser.add_argument("--jobs-from", type=Path, help="fingerprint the job directories DIR/<job>; run nothing")
    args = parser.parse_args()
    if args.jobs_from is not None:
        prints = {name: fingerprint(args.jobs_from / name) for name in JOBS}
    else:
        with tempfile.TemporaryDirectory(prefix="rllm-ref-") as tmp:
            root = args.keep.resolve() if args.keep is not None else Path(tmp)
            ran = {name: run(name, overrides, root, args.checkout.resolve()) for name, overrides in JOBS.items()}
            prints = {name: fingerprint(job_dir) for name, job_dir in ran.items()}
    args.out.write_text(json.dumps(prints, indent=1))
    if not args.compare:
        for name, fp in prints.items():
            print(f"{name}: {counts(fp)}")
        return 0
    before = json.loads(args.compare.read_text())
    differing = 0
    for name, fp in prints.items():
        diff = first_difference(before[name], fp)
        differing += diff is not None
        print(f"{name}: {counts(fp)}: {diff or 'identical'}")
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
