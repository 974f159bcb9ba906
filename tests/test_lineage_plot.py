"""PBT's schedules and lineage figure (rllm_sweeps/report/lineage_plot.py)."""

from __future__ import annotations

from pathlib import Path

from rllm_sweeps.records.schedule import Parent, Schedule, Segment
from rllm_sweeps.report.lineage_plot import plot_schedules


def test_the_schedules_and_lineage_are_drawn_as_one_png(tmp_path: Path) -> None:
    schedules = {
        0: Schedule((Segment(0, {"lr": 1e-4, "kl_beta": 0.0}),)),
        1: Schedule((Segment(0, {"lr": 3e-4, "kl_beta": 0.01}), Segment(3, {"lr": 2.4e-4}, Parent(0, 3)))),
    }
    (path,) = plot_schedules(schedules, 6, tmp_path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from matplotlib.image import imread

    height, width = imread(path).shape[:2]
    assert width > 2 * height  # three panels side by side: lr, kl_beta, lineage


def test_nothing_is_drawn_without_a_schedule(tmp_path: Path) -> None:
    assert plot_schedules({0: Schedule()}, 6, tmp_path) == []
    assert not list(tmp_path.iterdir())
