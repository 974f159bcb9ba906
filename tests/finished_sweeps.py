"""A finished two-job grid sweep, run once per test session (conftest.py's `finished_sweep`): the
records tests (test_sweep_records_kept.py) and the export tests (test_policy_export.py) read it, on one
pytest-xdist worker (conftest.py's SHARED_FIXTURE_GROUPS)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The default job with the fewest, smallest steps: 2 steps of 8 prompts x 4 samples, validated at the end.
QUICK = ["trainer.total_batches=2", "trainer.val_before_train=false", "trainer.test_freq=0", "task.dataset.val_size=8"]
QUICK += ["data.train_batch_size=8", "rollout.n=4"]
GRID = ["trainer.lr=1e-3,3e-3"]  # 1e-3: the default


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def run(args: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=REPO, env=env(), capture_output=True, text=True, timeout=timeout)


def sweep(sweep_dir: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return run([sys.executable, str(REPO / "train.py"), "-m", *args, f"hydra.sweep.dir={sweep_dir}"], timeout)


def run_finished_sweep(root: Path) -> Path:
    """A grid of 2 quick jobs (`GRID`), run to the end."""
    sweep_dir = root / "grid"
    proc = sweep(sweep_dir, *QUICK, *GRID)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return sweep_dir
