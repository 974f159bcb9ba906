"""A sweep too large to plan is refused on the command line, before anything is submitted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs train.py as a process

REPO = Path(__file__).resolve().parents[1]


def test_a_billion_point_grid_exits_2_with_how_to_sample_it_and_submits_nothing(tmp_path):
    grid = ["trainer.lr=range(1,1001)", "rollout.n=range(1,1001)", "data.max_response_length=range(1,1001)"]
    cmd = [sys.executable, str(REPO / "train.py"), "-m", *grid, f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "1,000,000,000 points" in proc.stderr and "sweep.method=random sweep.budget=N" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "sweep").exists()
