"""The four reference jobs (default, KL, solver-judge, multi-turn), fingerprinted: every value of
every metrics.jsonl line except wall-clock timings, the SHA-256 of every array of every checkpoint (restored:
orbax names its files at random) and of every other checkpoint file.

A refactor that keeps behaviour keeps these fingerprints. Run it before and after and compare:

    .venv/bin/python bench/reference_jobs.py --out /tmp/ref_before.json
    ... change the code ...
    .venv/bin/python bench/reference_jobs.py --out /tmp/ref_after.json --compare /tmp/ref_before.json

Prints one line per job (steps, files, identical or the first differing value); exit 1 on a difference.
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

REPO = Path(__file__).resolve().parents[1]
SHORT = ["trainer.total_batches=4", "trainer.save_freq=2", "trainer.test_freq=2"]
JOBS: dict[str, list[str]] = {
    "default": [],
    "kl": ["algorithm.use_kl_loss=true"],
    "solver_judge": ["workflow=solver_judge"],
    "multi_turn": ["workflow=multi_turn"],
}


def is_timing(key: str) -> bool:
    """Wall-clock figures differ run to run; everything else must not."""
    return key.startswith(("time/", "timing/", "perf/")) or key.endswith(("_s", "_sec", "_seconds")) or "time" in key


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


def fingerprint(job_dir: Path) -> dict:
    lines = [json.loads(line) for line in (job_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    metrics = [{k: v for k, v in sorted(line.items()) if not is_timing(k)} for line in lines]
    checkpoints: dict[str, str] = {}
    root = job_dir / "checkpoints"
    orbax_dirs = sorted({p.parent for p in root.rglob("checkpoint_*") if p.is_dir()})
    for parent in orbax_dirs:
        for name, digest in orbax_arrays(parent).items():
            checkpoints[f"{parent.relative_to(job_dir)}:{name}"] = digest
    for p in sorted(root.rglob("*")):
        if p.is_file() and not any(d in p.parents for d in orbax_dirs):
            checkpoints[str(p.relative_to(job_dir))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return {"metrics": metrics, "checkpoints": checkpoints}


def run(name: str, overrides: list[str], root: Path) -> dict:
    job_dir = root / name
    start = time.monotonic()
    cmd = [sys.executable, "train.py", *overrides, *SHORT, f"hydra.run.dir={job_dir}"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{name}: rc {done.returncode}\n{done.stderr[-3000:]}")
    print(f"{name}: ran in {time.monotonic() - start:.0f} s", flush=True)
    return fingerprint(job_dir)


def first_difference(a: dict, b: dict) -> str | None:
    if a["checkpoints"].keys() != b["checkpoints"].keys():
        return f"checkpoint files differ: {sorted(a['checkpoints'].keys() ^ b['checkpoints'].keys())}"
    for path, digest in a["checkpoints"].items():
        if b["checkpoints"][path] != digest:
            return f"checkpoint {path} differs"
    if len(a["metrics"]) != len(b["metrics"]):
        return f"{len(a['metrics'])} metrics lines vs {len(b['metrics'])}"
    for i, (la, lb) in enumerate(zip(a["metrics"], b["metrics"], strict=True)):
        for key in sorted(la.keys() | lb.keys()):
            if la.get(key) != lb.get(key):
                return f"metrics line {i} {key}: {la.get(key)!r} vs {lb.get(key)!r}"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="where to write the fingerprints (JSON)")
    parser.add_argument("--compare", type=Path, help="earlier fingerprints to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rllm-ref-") as tmp:
        prints = {name: run(name, overrides, Path(tmp)) for name, overrides in JOBS.items()}
    args.out.write_text(json.dumps(prints, indent=1))
    if not args.compare:
        for name, fp in prints.items():
            print(f"{name}: {len(fp['metrics'])} metrics lines, {len(fp['checkpoints'])} checkpoint files")
        return 0
    before = json.loads(args.compare.read_text())
    differing = 0
    for name, fp in prints.items():
        diff = first_difference(before[name], fp)
        differing += diff is not None
        counts = f"{len(fp['metrics'])} metrics lines, {len(fp['checkpoints'])} checkpoint files"
        print(f"{name}: {counts}: {diff or 'identical'}")
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
