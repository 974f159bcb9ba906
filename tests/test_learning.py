"""The embedded default learns, and trainer.lr matters: a sweep over lr has something to find.

Measured on 2 CPUs, seed 42 (bench/proto_learn.py; docs/BENCHMARKS.md): val reward 0.0 -> 0.625
with the default lr, 0.0 -> 0.003 with lr/100. The margins below leave room for noise.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.result import JobResult

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def val_rewards(job_dir: Path) -> list[float]:
    return [r["val_reward_mean"] for r in read_metrics(job_dir) if r["kind"] == "val"]


def test_default_job_learns_and_a_100x_smaller_lr_learns_measurably_less(tmp_path):
    start = time.monotonic()
    default = subprocess.run(
        [sys.executable, "train.py", f"hydra.run.dir={tmp_path / 'default'}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    elapsed = time.monotonic() - start
    assert default.returncode == 0, default.stdout[-3000:] + default.stderr[-3000:]
    assert "final val_reward_mean=" in default.stdout
    assert elapsed < 300, f"the default run took {elapsed:.0f}s (budget: 5 minutes)"
    result = JobResult.read(tmp_path / "default")
    assert result.status == "completed" and (tmp_path / "default" / "metrics.jsonl").exists()

    small = subprocess.run(
        [sys.executable, "train.py", "trainer.lr=1e-5", f"hydra.run.dir={tmp_path / 'small'}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert small.returncode == 0, small.stdout[-3000:]

    learned = val_rewards(tmp_path / "default")
    barely = val_rewards(tmp_path / "small")
    gain, small_gain = learned[-1] - learned[0], barely[-1] - barely[0]
    assert gain >= 0.3, learned
    assert small_gain <= 0.1, barely
    assert gain - small_gain >= 0.3
