"""PBT's figure: each trial's schedule over steps and its lineage (records/schedule.py).

pbt_schedules.png    one panel per setting a schedule changes (its value per step, one line
                     per trial), and a lineage panel: a row per trial, an arrow from the
                     (trial, step) whose checkpoint a segment began from
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rllm_sweeps.records.schedule import Schedule
from rllm_sweeps.report.plots import new_figure

PBT_SCHEDULES = "pbt_schedules.png"


def plot_schedules(schedules: Mapping[int, Schedule], total_steps: int, out_dir: Path) -> list[Path]:
    """The figure of the trials' schedules (trial number -> schedule); nothing without one."""
    schedules = {t: s for t, s in sorted(schedules.items()) if s.segments}
    if not schedules:
        return []
    keys = sorted({k for s in schedules.values() for seg in s.segments for k in seg.settings})
    fig, axes = new_figure(len(keys) + 1)
    steps = list(range(total_steps))
    for ax, key in zip(axes, keys, strict=False):
        for trial, schedule in schedules.items():
            values = [schedule.settings_at(step).get(key) for step in steps]
            ax.step([s + 1 for s in steps], values, where="post", label=f"trial {trial}")
        ax.set(xlabel="step", ylabel=key, title=f"{key} per step")
        if all(v > 0 for s in schedules.values() for seg in s.segments for k, v in seg.settings.items() if k == key):
            ax.set_yscale("log")
        ax.legend(fontsize="small")
    lineage = axes[-1]
    for trial in schedules:
        lineage.hlines(trial, 0, total_steps, color="lightgray")
    for trial, schedule in schedules.items():
        for start, parent in schedule.parents:
            lineage.annotate("", xy=(start, trial), xytext=(parent.step, parent.trial), arrowprops={"arrowstyle": "->"})
    lineage.set(xlabel="step", ylabel="trial", title="lineage: checkpoint copies", xlim=(0, total_steps))
    lineage.set_yticks(list(schedules))
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / PBT_SCHEDULES
    fig.savefig(path, dpi=100)
    return [path]
