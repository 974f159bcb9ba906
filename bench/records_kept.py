"""The four sequences of issue 43 ("Why" 1-4), run by hand as a user would: after each, the finished
sweep's report (`rllm-sweeps report`, but the reruns' own lines) and its records must be as before.

    1. a dry run of a finished Optuna sweep (conf/sweep/lr_optuna.yaml, shortened to 2 trials)
    2. a dry run of a finished grid sweep
    3. another sweep pointed at the grid's directory (hydra.sweep.dir=): refused, rc 2
    4. `rllm-sweeps rerun` of one of its jobs, then the sweep's command again

Prints one line per sequence (report identical or not; files changed) and exits non-zero if any
report or record changed.

    .venv/bin/python bench/records_kept.py            # about 2 minutes on 2 cores
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUICK = ["trainer.total_batches=2", "trainer.val_before_train=false", "trainer.test_freq=0", "task.dataset.val_size=8"]
QUICK += ["data.train_batch_size=8", "rollout.n=4"]
GRID = [*QUICK, "trainer.lr=1e-3,3e-3"]
OPTUNA = ["+sweep=lr_optuna", "sweep.budget=2", "sweep.parallel=2", "trainer.total_batches=2", "trainer.test_freq=1"]
OPTUNA += ["data.train_batch_size=8", "task.dataset.val_size=8"]
# What a command on a sweep may change: the report it writes, the reruns, the live sweeper's lock,
# the manifest's history.
MAY_CHANGE = ("report", "reruns", "sweeper.lock", "manifest.json", "confirm/manifest.json")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


def sweep(sweep_dir: Path, args: list[str], *extra: str) -> subprocess.CompletedProcess:
    return run(str(ROOT / "train.py"), "-m", *args, *extra, f"hydra.sweep.dir={sweep_dir}")


def report(sweep_dir: Path) -> list[str]:
    out = run("-m", "rllm_sweeps.cli", "report", str(sweep_dir), "--no-plots").stdout
    return [line for line in out.splitlines() if line.strip() and not line.startswith(("Reruns", "  rerun "))]


def files(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not any(rel == m or rel.startswith(m + "/") for m in MAY_CHANGE):
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def check(name: str, sweep_dir: Path, step) -> bool:  # noqa: ANN001
    table, records = report(sweep_dir), files(sweep_dir)
    rc = step()
    after = files(sweep_dir)
    changed = sorted(k for k in records.keys() | after.keys() if records.get(k) != after.get(k))
    same = report(sweep_dir) == table
    print(f"{name}: rc {rc}; report {'identical' if same else 'CHANGED'}; records changed: {changed or 'none'}")
    return same and not changed


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        grid, optuna = Path(tmp) / "grid", Path(tmp) / "optuna"
        for where, args in ((grid, GRID), (optuna, OPTUNA)):
            if (done := sweep(where, args)).returncode != 0:
                print(done.stdout[-2000:] + done.stderr[-2000:], file=sys.stderr)
                return 1
        job = sorted((grid / "jobs").iterdir())[0]
        ok = [
            check("1 dry run of a finished Optuna sweep", optuna, lambda: sweep(optuna, OPTUNA, DRY).returncode),
            check("2 dry run of a finished sweep", grid, lambda: sweep(grid, GRID, DRY).returncode),
            check("3 another sweep in its directory", grid, lambda: sweep(grid, OTHER).returncode),
            check(
                "4 rerun of a job, then the sweep again",
                grid,
                lambda: run("-m", "rllm_sweeps.cli", "rerun", str(job)).returncode or sweep(grid, GRID).returncode,
            ),
        ]
    return 0 if all(ok) else 1


DRY = "hydra.sweeper.dry_run=true"
OTHER = [*QUICK, "trainer.lr=1e-4,3e-4"]  # another sweep: other values

if __name__ == "__main__":
    sys.exit(main())
