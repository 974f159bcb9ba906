"""A report's PNG plots, drawn with matplotlib's Agg canvas (no display, no pyplot state).

    learning_curves.png        each point's validation metric(s) and train reward_mean against
                               the step (metrics.jsonl): its seeds' mean with a band, train
                               curves smoothed with the raw mean faint behind
    <metric>_vs_<param>.png    each sweep metric against each swept parameter: one marker per
                               point with its seeds' std as an error bar; points that differ
                               in the other (not zipped) parameters are separate series; pruned
                               trials marked x; log x-axis for a log distribution or a
                               positive parameter spanning a decade or more
    optuna_*.png               an Optuna sweep's study: optimization history, intermediate
                               values, parameter importances (or Pareto front), timeline

Each function returns the files it wrote; nothing is written when there is nothing to plot.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rllm_sweeps.records.metric_rows import MetricsRow
from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.status import JobStatus
from rllm_sweeps.report.model import PointRow, Report
from rllm_sweeps.report.render import fmt_value, point_label, short_keys

TRAIN_METRIC = "reward_mean"
MAX_LEGEND = 10  # series in a legend; more are drawn without one
LEARNING_CURVES = "learning_curves.png"


def new_figure(panels: int, legend: bool = False) -> tuple[Any, list[Any]]:
    """A figure of `panels` side by side; wider by a legend's room when one goes outside them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0 * panels + 3.2 * legend, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    return fig, list(axes)


def colors_for(n: int) -> list[Any]:
    from matplotlib import colormaps

    if n <= 10:
        return [colormaps["tab10"](i) for i in range(n)]
    cmap = colormaps["viridis"]
    return [cmap(i / max(n - 1, 1)) for i in range(n)]


def file_safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "x"


def metric_series(records: list[MetricsRow], kind: str, name: str) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for r in records:
        if r.kind == kind and (value := r.value(name)) is not None:
            xs.append(float(r.step))
            ys.append(value)
    return xs, ys


def plot_learning_curves(report: Report, out_dir: Path, train_metric: str = TRAIN_METRIC) -> list[Path]:
    """learning_curves.png (learning_curves_figure), or nothing when no job has records."""
    fig = learning_curves_figure(report, train_metric)
    if fig is None:
        return []
    path = out_dir / LEARNING_CURVES
    fig.savefig(path, dpi=110)
    return [path]


def learning_curves_figure(report: Report, train_metric: str = TRAIN_METRIC) -> Any:
    """One panel per validation metric of the sweep (val_reward_mean by default) and one for the
    train `train_metric`; each point one line: its seeds' mean at each step, with a band (min to
    max over the seeds) where it has several; train curves smoothed (EMA), the raw mean faint
    behind; dashed: a point with a job not completed. One legend, outside the panels."""
    curves: dict[int, list[MetricsRow]] = {}
    for job in report.jobs:
        if job.job_dir is not None:
            records = read_metrics(job.job_dir)
            if records:
                curves[job.index] = records
    if not curves:
        return None
    val_names = [m.name for m in report.metrics] + ["val_reward_mean"]
    val_names = list(dict.fromkeys(n for n in val_names if _has(curves, "val", n)))
    panels = [("val", n) for n in val_names] + [("train", train_metric)] * _has(curves, "train", train_metric)
    if not panels:
        return None
    from matplotlib.ticker import MaxNLocator

    legend = 1 < len(report.points) <= MAX_LEGEND
    fig, axes = new_figure(len(panels), legend or len(report.points) > MAX_LEGEND)
    colors = colors_for(len(report.points))
    shape_key, shapes = None, {}
    if len(report.points) > MAX_LEGEND:  # too many for a legend: a colour bar says which line is which
        colors, colour_key = colour_bar(fig, axes, report)
        shape_key, shapes = marker_shapes(report, colour_key)  # and a second parameter by marker shape
    labels = {p.point_id: point_label(p.params, report.swept) for p in report.points}
    from rllm_sweeps.report.schedules import changing, schedule_words

    replays = changing(report)  # a PBT trial's replicates: their plan values are only the first ones
    for p in report.points:
        if (schedule := replays.get(p.jobs[0])) is not None:
            labels[p.point_id] = f"point {p.point_index}: {schedule_words(schedule)}"
    band_alpha = 0.15 if len(report.points) <= 4 else 0.07
    status = {j.index: j.status for j in report.jobs}
    for ax, (kind, name) in zip(axes, panels, strict=True):
        for i, point in enumerate(report.points):
            runs = [metric_series(curves[j], kind, name) for j in point.jobs if j in curves]
            runs = [r for r in runs if r[0]]
            if not runs:
                continue
            steps, mean, low, high = seed_band(runs)
            style = "-" if all(status.get(j) == JobStatus.COMPLETED for j in point.jobs) else "--"
            label = labels[point.point_id] if legend and ax is axes[0] else None
            if kind == "train":
                ax.plot(steps, mean, style, color=colors[i], alpha=0.25, linewidth=0.8)
                mean = smooth(mean)
            marker = "o" if kind == "val" and len(steps) < 30 else None
            if shape_key is not None:
                marker = shapes[_text(point.params.get(shape_key))]
            size = 5 if shape_key is not None else 3
            every = max(1, len(steps) // 8) if kind == "train" else 1
            ax.plot(
                steps,
                mean,
                style,
                color=colors[i],
                linewidth=1.6,
                marker=marker,
                markersize=size,
                label=label,
                markevery=every,
            )
            if len(runs) > 1:
                ax.fill_between(steps, low, high, color=colors[i], alpha=band_alpha, linewidth=0)
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(name)
        ax.set_title(f"{name} ({'validation' if kind == 'val' else 'train, smoothed'})", fontsize="medium")
        ax.grid(alpha=0.3)
    notes = ["each point: its seeds' mean, band from min to max"] if report.has_seeds else []
    if any(kind == "train" for kind, _ in panels):
        notes.append(f"train: EMA {SMOOTHING}, the raw mean faint behind")
    if any(job.status != JobStatus.COMPLETED for job in report.jobs if job.index in curves):
        notes.append("dashed: a point with a job not completed (pruned, failed, running)")
    if notes:
        fig.suptitle("; ".join(notes), fontsize="small", color="0.35")
    if legend:
        fig.legend(loc="outside right upper", fontsize="small", title="point")
    if shape_key is not None:
        from matplotlib.lines import Line2D

        handles = [
            Line2D([], [], marker=m, color="0.3", linestyle="none", label=fmt_value(json.loads(v)))
            for v, m in shapes.items()
        ]
        fig.legend(
            handles=handles, loc="outside right lower", fontsize="small", title=short_keys(report.swept)[shape_key]
        )
    return fig


MARKERS = ("o", "s", "^", "D")


def marker_shapes(report: Report, colour_key: str | None) -> tuple[str | None, dict[str, str]]:
    """A second swept parameter of at most 4 values (rollout.n beside the colour bar's lr), shown by
    marker shape: (its key, value as JSON -> marker); (None, {}) when there is none."""
    for key in report.swept:
        values = list(dict.fromkeys(_text(p.params.get(key)) for p in report.points))
        if key != colour_key and 2 <= len(values) <= len(MARKERS):
            return key, dict(zip(values, MARKERS, strict=False))
    return None, {}


def colour_bar(fig: Any, axes: list[Any], report: Report) -> tuple[list[Any], str | None]:
    """The points' colours by the first numeric swept parameter (log where it spans a decade), or by
    plan order, with the colour bar that reads them; at any number of points. With the parameter."""
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import LogNorm, Normalize

    values, label, chosen = [float(p.point_index) for p in report.points], "point (plan order)", None
    for key in report.swept:
        found = [p.params.get(key) for p in report.points]
        if _numeric(found) and len(set(found)) > 1:
            values, label, chosen = [float(v) for v in found], key, key
            break
    low, high = min(values), max(values)
    norm = (LogNorm if spans_decade(values) else Normalize)(vmin=low, vmax=high if high > low else low + 1)
    cmap = colormaps["viridis"]
    fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=axes, label=label, shrink=0.9)
    return [cmap(norm(v)) for v in values], chosen


SMOOTHING = 0.6  # EMA weight of the past: train rewards are noisy step to step


def smooth(values: Sequence[float], weight: float = SMOOTHING) -> list[float]:
    """Exponential moving average, debiased at the start (as TensorBoard's smoothing)."""
    out, last, norm = [], 0.0, 0.0
    for v in values:
        last = weight * last + (1 - weight) * v
        norm = weight * norm + (1 - weight)
        out.append(last / norm)
    return out


def seed_band(runs: Sequence[tuple[list[float], list[float]]]) -> tuple[list[float], ...]:
    """Several seeds' (steps, values) as one line: at each step some seed reached, the mean, min and
    max of the seeds that have it."""
    by_step: dict[float, list[float]] = {}
    for steps, values in runs:
        for x, y in zip(steps, values, strict=True):
            by_step.setdefault(x, []).append(y)
    steps = sorted(by_step)
    return (
        steps,
        [sum(by_step[x]) / len(by_step[x]) for x in steps],
        [min(by_step[x]) for x in steps],
        [max(by_step[x]) for x in steps],
    )


def _has(curves: dict[int, list[MetricsRow]], kind: str, name: str) -> bool:
    return any(metric_series(records, kind, name)[0] for records in curves.values())


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def spans_decade(values: Sequence[Any]) -> bool:
    """Whether positive numbers span a factor of 10 or more (then a log axis: lr 3e-4, 1e-3, 3e-3
    crowd the left of a linear one)."""
    if not values or not _numeric(values) or min(values) <= 0:
        return False
    return max(values) / min(values) >= 10


def plot_metric_vs_params(report: Report, out_dir: Path) -> list[Path]:
    """<metric>_vs_<param>.png for each sweep metric and swept parameter (metric_vs_param_figure)."""
    from rllm_sweeps.pbt.mutable import schedule_field
    from rllm_sweeps.report.schedules import changing

    # A setting a job's schedule changed mid-run had no one value to place the job at.
    changed = {k for s in changing(report).values() for seg in s.segments for k in seg.settings}
    paths = []
    for metric in report.metrics:
        for key in (k for k in report.swept if schedule_field(k) not in changed):
            fig = metric_vs_param_figure(report, metric.name, key)
            if fig is not None:
                path = out_dir / f"{file_safe(metric.name)}_vs_{file_safe(key)}.png"
                fig.savefig(path, dpi=110)
                paths.append(path)
    return paths


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def log_axis(report: Report, key: str, values: Sequence[Any]) -> bool:
    """A log x-axis: the sweep drew the parameter from a log distribution, or its values span more
    than a decade."""
    return _numeric(values) and (key in report.log_axes or spans_decade(values)) and min(values) > 0


def metric_vs_param_figure(report: Report, metric: str, key: str) -> Any:
    """The metric against one swept parameter: each point a marker (its seeds' mean, their std as an
    error bar); points that differ in the other parameters are separate series (parameters zipped
    with this one move with it: one series), nudged apart so their error bars do not overlap;
    pruned trials drawn at their last value, marked x. None: no point has the metric."""
    points = [p for p in report.points if p.metrics.get(metric) is not None and key in p.params]
    pruned = [j for j in report.jobs if j.status == JobStatus.PRUNED and key in j.params and metric in j.final]
    if not points and not pruned:
        return None
    together = {k for group in report.zipped if key in group for k in group}
    others = [k for k in report.swept if k != key and k not in together]
    groups: dict[str, list[PointRow]] = {}
    for p in points:
        groups.setdefault(_text([p.params.get(k) for k in others]), []).append(p)
    xs_all = [p.params[key] for p in points] + [j.params[key] for j in pruned]
    numeric = _numeric(xs_all)
    log = log_axis(report, key, xs_all)
    position: dict[str, float] = {}  # x of each value: the number, or a category's position
    for v in xs_all:
        position.setdefault(_text(v), float(v) if numeric else float(len(position)))
    many = len(groups) > MAX_LEGEND
    colors = colors_for(1 if many else len(groups))
    fig, (ax,) = new_figure(1, legend=(not many and len(groups) > 1) or bool(pruned))
    spread = _nudges(len(groups), log, sorted(position.values()))
    for i, members in enumerate(groups.values()):
        pairs = sorted((position[_text(p.params[key])], p.metrics[metric]) for p in members)
        xs = [x * spread[i] if log else x + spread[i] for x, _ in pairs]
        label = "completed" if pruned else None  # beside the pruned ones' entry
        if not many and len(groups) > 1:
            label = point_label({k: members[0].params.get(k) for k in others}, others)
        ax.errorbar(
            xs,
            [agg.mean for _, agg in pairs],
            yerr=[agg.std or 0.0 for _, agg in pairs] if report.has_seeds else None,
            fmt="o" if many else "o-",
            color=colors[0 if many else i],
            capsize=3,
            alpha=0.6 if many else 0.9,
            label=label,
        )
    if pruned:
        ax.scatter(
            [position[_text(j.params[key])] for j in pruned],
            [j.final[metric] for j in pruned],
            marker="x",
            color="0.45",
            label=f"pruned ({len(pruned)}): last value",
            zorder=3,
        )
    x_ticks(ax, key, xs_all, position, numeric, log)
    ax.set_xlabel(key)
    ax.set_ylabel(f"{metric} (mean ± std over seeds)" if report.has_seeds else metric)
    ax.set_title(f"{metric} vs {short_keys(report.swept)[key]}")
    ax.grid(alpha=0.3)
    if (not many and len(groups) > 1) or pruned:
        fig.legend(loc="outside right upper", fontsize="small")
    return fig


def _nudges(series: int, log: bool, xs: list[float]) -> list[float]:
    """Per series, a small x shift (a factor on a log axis) so error bars at one x stand apart."""
    if series <= 1 or len(xs) < 1:
        return [1.0 if log else 0.0] * max(series, 1)
    if log:
        step = (xs[-1] / xs[0]) ** (1 / max(len(xs) - 1, 1)) if len(xs) > 1 else 2.0
        width = step ** (0.25 / series)
        return [width ** (i - (series - 1) / 2) for i in range(series)]
    step = min((b - a for a, b in zip(xs, xs[1:], strict=False)), default=1.0) or 1.0
    return [(i - (series - 1) / 2) * step * 0.25 / series for i in range(series)]


def x_ticks(ax: Any, key: str, xs: Sequence[Any], position: dict[str, float], numeric: bool, log: bool) -> None:
    """Ticks one can read: the swept values themselves when they are few and far enough apart (a
    grid's), else round ones (1, 2, 5 of each decade on a log axis), labels turned where many."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    values = sorted(set(xs)) if numeric else []
    if not numeric:
        ax.set_xticks(list(position.values()), [fmt_value(json.loads(c)) for c in position])
    elif len(values) <= 6 and _apart(values, log):
        if log:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(values, [fmt_value(v) for v in values])
    elif log:
        ax.set_xscale("log")
        # 1, 2, 5 of each decade; and 3 where the values span less than one (else 1e-3 to 3.4e-3
        # has two labels and an unlabelled tick)
        subs = (1.0, 2.0, 5.0) if spans_decade(values) else (1.0, 2.0, 3.0, 5.0)
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=subs))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_value(float(f"{v:.3g}"))))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
    many = len(ax.get_xticks()) > 4
    for label in ax.get_xticklabels():
        label.set_rotation(30 if many else 0)
        label.set_horizontalalignment("right" if many else "center")


def _apart(values: Sequence[float], log: bool) -> bool:
    """Whether neighbouring values stand far enough apart for their labels not to touch."""
    if len(values) < 2:
        return True
    if log:
        return min(b / a for a, b in zip(values, values[1:], strict=False)) >= 1.4
    return min(b - a for a, b in zip(values, values[1:], strict=False)) >= (values[-1] - values[0]) / 8


__all__ = [
    "LEARNING_CURVES",
    "learning_curves_figure",
    "log_axis",
    "metric_vs_param_figure",
    "plot_learning_curves",
    "plot_metric_vs_params",
    "seed_band",
    "smooth",
    "spans_decade",
]
