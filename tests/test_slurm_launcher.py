"""The SLURM launcher's own logic, without a cluster (the cluster tests are test_slurm_*.py)."""

from __future__ import annotations

import time

from launchers.slurm import SlurmLauncher, SlurmSettings, _minutes


def test_submissions_are_paced_at_least_submit_interval_apart():
    launcher = SlurmLauncher(SlurmSettings(submit_interval_s=0.2))
    stamps = []
    for _ in range(4):
        launcher.pace()
        stamps.append(time.monotonic())
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    assert min(gaps) >= 0.19, gaps


def test_slurm_time_limits_are_read_in_minutes():
    assert _minutes("5") == 5
    assert _minutes("1:30:00") == 90
    assert _minutes("2-00:00:00") == 2880
    assert _minutes("00:00:30") == 1  # seconds round up: a job of that length would not fit in 0
    assert _minutes("infinite") is None and _minutes("UNLIMITED") is None
