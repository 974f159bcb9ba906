"""A PBT sweep's trials drawn by their schedules (records/schedule.py), not by their first values.

A trial's first values (plan.json's params) say little about it: at each interval a bottom trial
copies a top trial's checkpoint and goes on with perturbed settings. So, for `method: pbt`:

    learning_curves.png       per trial, its lineage: at each step the metric of the trial whose
                              training made that step of the trial's final weights
                              (Schedule.trained_by; what its confirmation replicates replay), a
                              diamond where it continued from another trial's checkpoint, and
                              the trial's own steps it dropped there, dotted
    <metric>_vs_<param>.png   every validation of every trial at the value the setting had in the
                              step before it (the trial's own records, so the settings that lost
                              are there too), coloured by the step; each trial's last one named

pbt_schedules.png (report/lineage_plot.py) draws the settings per step and the copies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rllm_sweeps.records.metric_rows import MetricsRow
from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.schedule import Schedule
from rllm_sweeps.report.lineage_plot import Had, plot_schedules
from rllm_sweeps.report.model import Report
from rllm_sweeps.report.plots import (
    LEARNING_CURVES,
    SMOOTHING,
    TRAIN_METRIC,
    colors_for,
    file_safe,
    log_axis,
    metric_series,
    new_figure,
    smooth,
    x_ticks,
)
from rllm_sweeps.report.render import fmt_value
from rllm_sweeps.report.schedules import job_schedules

Records = list[MetricsRow]


def trial_records(report: Report) -> dict[int, Records]:
    return {j.index: read_metrics(j.job_dir) for j in report.jobs if j.job_dir is not None}


def _by_step(records: Records, kind: str, name: str) -> dict[int, float]:
    xs, ys = metric_series(records, kind, name)
    return {int(x): y for x, y in zip(xs, ys, strict=True)}


def lineage_series(
    trial: int, schedule: Schedule, records: dict[int, Records], kind: str, name: str
) -> tuple[list[int], list[float]]:
    """The metric along the trial's lineage: at each 1-based step, the value recorded by the trial
    that trained that step of the trial's final weights."""
    own = _by_step(records.get(trial, []), kind, name)
    others = {t: _by_step(r, kind, name) for t, r in records.items()}
    steps = sorted({s for series in others.values() for s in series})
    xs, ys = [], []
    for step in steps:
        value = others.get(schedule.trained_by(step, trial), {}).get(step) if schedule.segments else own.get(step)
        if value is not None:
            xs.append(step)
            ys.append(value)
    return xs, ys


def _dropped(trial: int, schedule: Schedule, records: Records, kind: str, name: str) -> tuple[list[int], list[float]]:
    """The trial's own records of the steps its final weights do not descend from: those up to its
    last copy (a schedule's last parent is the trial's own copy; the ones before it, its source's)."""
    last = schedule.parents[-1][0] if schedule.parents else 0
    own = _by_step(records, kind, name)
    return [s for s in sorted(own) if s <= last], [own[s] for s in sorted(own) if s <= last]


def _copies(schedule: Schedule) -> list[tuple[int, int]]:
    """(step, source trial) of each copy on the trial's lineage."""
    return [(parent.step, parent.trial) for _, parent in schedule.parents]


def trial_label(trial: int, schedule: Schedule) -> str:
    """'trial 2 (from trial 0 at step 5)': a trial and the copies its lineage went through."""
    copies = ", ".join(f"trial {source} at step {step}" for step, source in _copies(schedule))
    return f"trial {trial} (from {copies})" if copies else f"trial {trial}"


def pbt_learning_curves_figure(
    report: Report, schedules: dict[int, Schedule], records: dict[int, Records], train_metric: str = TRAIN_METRIC
) -> Any:
    """One panel per validation metric and one for the train metric; per trial its lineage (solid),
    a diamond at each copy, its dropped own steps dotted. None: no trial has records."""
    if not any(records.values()):
        return None
    has = {
        (kind, name): any(metric_series(r, kind, name)[0] for r in records.values())
        for kind, name in [("val", m.name) for m in report.metrics] + [("train", train_metric)]
    }
    panels = [panel for panel, present in has.items() if present]
    if not panels:
        return None
    from matplotlib.ticker import MaxNLocator

    trials = sorted(records)
    colors = dict(zip(trials, colors_for(len(trials)), strict=True))
    fig, axes = new_figure(len(panels), legend=True)
    for ax, (kind, name) in zip(axes, panels, strict=True):
        for trial in trials:
            schedule = schedules.get(trial, Schedule())
            xs, ys = lineage_series(trial, schedule, records, kind, name)
            if not xs:
                continue
            drop_x, drop_y = _dropped(trial, schedule, records[trial], kind, name)
            shown = ys if kind == "val" else smooth(ys)
            if kind == "train":
                ax.plot(xs, ys, color=colors[trial], alpha=0.2, linewidth=0.8)
                drop_y = smooth(drop_y) if drop_y else drop_y
            if drop_x:
                ax.plot(drop_x, drop_y, ":", color=colors[trial], linewidth=1.2, marker="x", markersize=5)
            marker = "o" if kind == "val" else None
            label = trial_label(trial, schedule) if ax is axes[0] else None
            ax.plot(xs, shown, "-", color=colors[trial], linewidth=1.6, marker=marker, markersize=3, label=label)
            at = dict(zip(xs, shown, strict=True))
            copies = [(step, at[step]) for step, _ in _copies(schedule) if step in at]
            if copies:
                ax.plot(*zip(*copies, strict=True), "D", color=colors[trial], markersize=7, mec="black", mew=0.6)
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(name)
        ax.set_title(f"{name} ({'validation' if kind == 'val' else 'train, smoothed'})", fontsize="medium")
        ax.grid(alpha=0.3)
    notes = [
        "each trial: the steps its final weights went through (its lineage)",
        "◆ it continued from another trial's checkpoint there",
        "x dotted: its own steps it dropped",
    ]
    if any(kind == "train" for kind, _ in panels):
        notes.append(f"train: EMA {SMOOTHING}")
    fig.suptitle("; ".join(notes), fontsize="small", color="0.35")
    fig.legend(loc="outside right upper", fontsize="small", title="PBT trial")
    return fig


def setting_at_steps(report: Report, key: str, trial: int, schedule: Schedule, records: Records) -> dict[int, Any]:
    """The value `key` had at each 1-based step the trial trained: its train records' own (the loop
    records `lr`), else its schedule's where its lineage is its own, else its first value."""
    from rllm_sweeps.pbt.mutable import schedule_field

    field = schedule_field(key)
    out: dict[int, Any] = {}
    first = next((j.params.get(key) for j in report.jobs if j.index == trial), None)
    for r in records:
        step = r.step
        if r.kind != "train":
            continue
        if field is not None and isinstance(recorded := r.metrics.get(field), int | float):
            out[step] = recorded
        elif field is not None and schedule.segments and schedule.trained_by(step, trial) == trial:
            out[step] = schedule.settings_at(step - 1).get(field, first)
        elif not schedule.parents:
            out[step] = first
    return out


def pbt_metric_vs_param_figure(
    report: Report, metric: str, key: str, schedules: dict[int, Schedule], records: dict[int, Records]
) -> Any:
    """Every validation of every trial at the value `key` had in the step before it, coloured by the
    step; each trial's last validation named. None: no validation with a known value."""
    points: list[tuple[Any, float, int, int]] = []  # (value, metric, step, trial)
    for trial, recs in sorted(records.items()):
        setting = setting_at_steps(report, key, trial, schedules.get(trial, Schedule()), recs)
        for step, value in sorted(_by_step(recs, "val", metric).items()):
            if step in setting:
                points.append((setting[step], value, step, trial))
    if not points:
        return None
    from matplotlib import colormaps
    from matplotlib.colors import Normalize

    xs = [p[0] for p in points]
    log = log_axis(report, key, xs)
    fig, (ax,) = new_figure(1, legend=True)
    steps = [p[2] for p in points]
    norm = Normalize(vmin=min(steps), vmax=max(steps) if max(steps) > min(steps) else min(steps) + 1)
    cmap = colormaps["viridis"]
    trials = sorted({p[3] for p in points})
    colors = dict(zip(trials, colors_for(len(trials)), strict=True))
    for trial in trials:  # a faint path per trial: how its setting and score moved
        mine = [p for p in points if p[3] == trial]
        ax.plot([p[0] for p in mine], [p[1] for p in mine], "-", color=colors[trial], alpha=0.35, linewidth=1)
        last = mine[-1]
        ax.annotate(
            f"trial {trial}", last[:2], xytext=(5, 3), textcoords="offset points", fontsize="small", color=colors[trial]
        )
    ax.scatter(xs, [p[1] for p in points], c=[cmap(norm(s)) for s in steps], s=36, edgecolors="0.2", zorder=3)
    from matplotlib.cm import ScalarMappable

    fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, label="step of the validation")
    x_ticks(ax, key, xs, {fmt_value(v): float(v) for v in xs}, True, log)
    ax.set_xlabel(f"{key} the trial trained with just before the validation")
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} vs {key} (PBT: each validation of each trial)", fontsize="medium")
    ax.grid(alpha=0.3)
    return fig


def trial_settings(report: Report, schedules: dict[int, Schedule], records: dict[int, Records]) -> Had:
    """Each swept setting's value per step per trial (setting_at_steps), by its schedule field."""
    from rllm_sweeps.pbt.mutable import schedule_field

    had: dict[str, dict[int, dict[int, Any]]] = {}
    for key in report.swept:
        if (field := schedule_field(key)) is not None:
            had[field] = {
                t: setting_at_steps(report, key, t, schedules.get(t, Schedule()), r) for t, r in records.items()
            }
    return had


def write_pbt_plots(report: Report, out_dir: Path) -> list[Path]:
    """learning_curves.png, <metric>_vs_<param>.png and pbt_schedules.png of a PBT sweep, drawn by
    its schedules."""
    from rllm_sweeps.pbt.mutable import schedule_field

    schedules, records = job_schedules(report), trial_records(report)
    paths = []
    fig = pbt_learning_curves_figure(report, schedules, records)
    if fig is not None:
        paths.append(out_dir / LEARNING_CURVES)
        fig.savefig(paths[-1], dpi=110)
    for metric in report.metrics:
        for key in report.swept:
            fig = pbt_metric_vs_param_figure(report, metric.name, key, schedules, records)
            if fig is not None:
                paths.append(out_dir / f"{file_safe(metric.name)}_vs_{file_safe(key)}.png")
                fig.savefig(paths[-1], dpi=110)
    steps = max((j.steps or 0 for j in report.jobs), default=0)
    names = {field: key for key in report.swept if (field := schedule_field(key)) is not None}
    return paths + plot_schedules(schedules, steps, out_dir, trial_settings(report, schedules, records), names)
