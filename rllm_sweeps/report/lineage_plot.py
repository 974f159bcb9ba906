"""PBT's figure: the settings each trial had over its steps and the copies between trials
(records/schedule.py).

pbt_schedules.png    one panel per setting a schedule changes: its value at each step, one line per
                     trial (what the trial trained with, its records' own where given, else its
                     schedule's), a diamond where it continued from another trial's checkpoint;
                     and a lineage panel: a row per trial, a curved arrow from the (trial, step)
                     whose checkpoint it copied
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rllm_sweeps.records.schedule import Parent, Schedule
from rllm_sweeps.report.plots import colors_for, new_figure
from rllm_sweeps.report.render import fmt_value

PBT_SCHEDULES = "pbt_schedules.png"

# setting -> trial -> 1-based step -> the value it trained that step with
Had = Mapping[str, Mapping[int, Mapping[int, Any]]]


def schedules_figure(
    schedules: Mapping[int, Schedule], total_steps: int, had: Had | None = None, names: Mapping[str, str] | None = None
) -> Any:
    """The figure (None without a schedule or a step). `had`: the values the trials trained with per step,
    where known (a trial's own records: its steps before it copied another's lineage are not in
    its schedule); `names`: a setting's sweep key, for its axis."""
    schedules = {t: s for t, s in sorted(schedules.items()) if s.segments}
    if not schedules or total_steps < 1:  # nothing trained yet
        return None
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

    keys = sorted({k for s in schedules.values() for seg in s.segments for k in seg.settings})
    fig, axes = new_figure(len(keys) + 1, legend=True)
    colors = dict(zip(schedules, colors_for(len(schedules)), strict=True))
    steps = list(range(1, total_steps + 1))
    copies = all_copies(schedules)
    for ax, key in zip(axes, keys, strict=False):
        known = (had or {}).get(key, {})
        for trial, schedule in schedules.items():
            mine = known.get(trial) or {s: schedule.settings_at(s - 1).get(key) for s in steps}
            xs = [s for s in steps if mine.get(s) is not None]
            if not xs:  # not started yet, or its schedule never sets this setting
                continue
            # each step's value held over the step (from s-1 to s), so a change shows at its step
            ax.stairs(
                [mine[s] for s in xs],
                [xs[0] - 1, *xs],
                color=colors[trial],
                linewidth=1.8,
                baseline=None,
                label=f"trial {trial}" if ax is axes[0] else None,
            )
            for start in (start for child, start, _ in copies if child == trial and start + 1 in mine):
                ax.plot([start], [mine[start + 1]], "D", color=colors[trial], mec="black", mew=0.6)
        values = [v for t in schedules for v in (known.get(t) or {}).values()]
        values += [v for s in schedules.values() for seg in s.segments for k, v in seg.settings.items() if k == key]
        if values and all(isinstance(v, int | float) and v > 0 for v in values):
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_value(float(f"{v:.3g}"))))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: fmt_value(float(f"{v:.3g}"))))
            if max(values) / min(values) >= 10:
                ax.yaxis.set_minor_formatter(NullFormatter())
        name = (names or {}).get(key, key)
        ax.set(xlabel="step", ylabel=name, title=f"{name} each trial trained with", xlim=(0, total_steps))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    lineage = axes[-1]
    for trial in schedules:
        lineage.hlines(trial, 0, total_steps, color=colors[trial], linewidth=2, alpha=0.5)
    for i, (trial, start, parent) in enumerate(copies):  # curved, each its own way: arrows at one step stay apart
        rad = 0.25 + 0.15 * (i % 3)
        lineage.annotate(
            "",
            xy=(start, trial),
            xytext=(parent.step, parent.trial),
            arrowprops={
                "arrowstyle": "-|>",
                "color": colors[trial],
                "connectionstyle": f"arc3,rad={rad}",
                "linewidth": 1.5,
            },
        )
        lineage.plot([parent.step], [parent.trial], "o", color=colors[parent.trial], mec="black", mew=0.6)
    lineage.set(xlabel="step", title="lineage: who copied whose checkpoint", xlim=(0, total_steps))
    lineage.set_ylim(min(schedules) - 0.6, max(schedules) + 0.6)
    lineage.set_yticks(list(schedules), [f"trial {t}" for t in schedules])
    lineage.xaxis.set_major_locator(MaxNLocator(integer=True))
    lineage.grid(axis="x", alpha=0.3)
    fig.legend(loc="outside right upper", fontsize="small", title="PBT trial")
    fig.suptitle(
        "◆ a trial continued from another trial's checkpoint there (arrow: from that trial and step) with a new value",
        fontsize="small",
        color="0.35",
    )
    return fig


def all_copies(schedules: Mapping[int, Schedule]) -> list[tuple[int, int, Parent]]:
    """(trial that copied, step, what it copied) of every copy the schedules record: a schedule's
    last copy is its trial's own; the ones before, the lineage's (its source's, and theirs)."""
    out = {
        (schedule.trained_by(start + 1, trial), start, parent)
        for trial, schedule in schedules.items()
        for start, parent in schedule.parents
    }
    return sorted(out, key=lambda c: (c[1], c[0]))


def plot_schedules(
    schedules: Mapping[int, Schedule],
    total_steps: int,
    out_dir: Path,
    had: Had | None = None,
    names: Mapping[str, str] | None = None,
) -> list[Path]:
    """pbt_schedules.png (schedules_figure); nothing without a schedule."""
    fig = schedules_figure(schedules, total_steps, had, names)
    if fig is None:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / PBT_SCHEDULES
    fig.savefig(path, dpi=100)
    return [path]
