"""A report's PNG plots, drawn with matplotlib's Agg canvas (no display, no pyplot state).

    learning_curves.png        each job's validation metric(s) and train reward_mean against
                               the step (metrics.jsonl), one line per job, coloured by point
    <metric>_vs_<param>.png    each sweep metric against each swept parameter: one marker per
                               point with its seeds' std as an error bar; points that differ
                               in the other parameters are separate series; log x-axis when
                               a positive parameter spans more than a decade
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

from rllm_sweeps.report.model import PointRow, Report
from rllm_sweeps.report.render import fmt_value, point_label, short_keys
from rllm_sweeps.results import COMPLETED, read_metrics

TRAIN_METRIC = "reward_mean"
MAX_LEGEND = 10  # series in a legend; more are drawn without one
LEARNING_CURVES = "learning_curves.png"


def new_figure(panels: int) -> tuple[Any, list[Any]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0 * panels, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    return fig, list(axes)


def _colors(n: int) -> list[Any]:
    from matplotlib import colormaps

    if n <= 10:
        return [colormaps["tab10"](i) for i in range(n)]
    cmap = colormaps["viridis"]
    return [cmap(i / max(n - 1, 1)) for i in range(n)]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "x"


def _series(records: list[dict[str, Any]], kind: str, name: str) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for r in records:
        if r.get("kind", "train") != kind:
            continue
        step, value = r.get("step"), r.get(name)
        if isinstance(step, int | float) and isinstance(value, int | float) and not isinstance(value, bool):
            xs.append(float(step))
            ys.append(float(value))
    return xs, ys


def plot_learning_curves(report: Report, out_dir: Path, train_metric: str = TRAIN_METRIC) -> list[Path]:
    """learning_curves.png: one panel per validation metric of the sweep (val_reward_mean by
    default) and one for the train `train_metric`, each job a line (dashed: not completed)."""
    curves: dict[int, list[dict[str, Any]]] = {}
    for job in report.jobs:
        if job.job_dir is not None:
            records = read_metrics(job.job_dir)
            if records:
                curves[job.index] = records
    if not curves:
        return []
    val_names = [m.name for m in report.metrics] + ["val_reward_mean"]
    val_names = list(dict.fromkeys(n for n in val_names if _has(curves, "val", n)))
    panels = [("val", n) for n in val_names] + [("train", train_metric)] * _has(curves, "train", train_metric)
    if not panels:
        return []
    from matplotlib.ticker import MaxNLocator

    fig, axes = new_figure(len(panels))
    point_order = {p.point_id: i for i, p in enumerate(report.points)}
    colors = _colors(len(report.points))
    labels = {p.point_id: point_label(p.params, report.swept) for p in report.points}
    legend = len(report.points) <= MAX_LEGEND and len(report.points) > 1
    for ax, (kind, name) in zip(axes, panels, strict=True):
        labelled: set[str] = set()
        for job in report.jobs:
            records = curves.get(job.index)
            if not records:
                continue
            xs, ys = _series(records, kind, name)
            if not xs:
                continue
            label = None
            if legend and job.point_id not in labelled:
                label = labels[job.point_id]
                labelled.add(job.point_id)
            style = "-" if job.status == COMPLETED else "--"
            ax.plot(
                xs,
                ys,
                style,
                color=colors[point_order[job.point_id]],
                alpha=0.85,
                linewidth=1.4,
                marker="o" if kind == "val" and len(xs) < 30 else None,
                markersize=3,
                label=label,
            )
        ax.set_xlabel("step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(name)
        ax.set_title(f"{name} ({'validation' if kind == 'val' else 'train'})")
        ax.grid(alpha=0.3)
        if labelled:
            ax.legend(fontsize="small")
    path = out_dir / LEARNING_CURVES
    fig.savefig(path, dpi=110)
    return [path]


def _has(curves: dict[int, list[dict[str, Any]]], kind: str, name: str) -> bool:
    return any(_series(records, kind, name)[0] for records in curves.values())


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def spans_decade(values: Sequence[Any]) -> bool:
    """Whether positive numbers span more than a factor of 10 (then a log axis)."""
    if not values or not _numeric(values) or min(values) <= 0:
        return False
    return max(values) / min(values) > 10


def plot_metric_vs_params(report: Report, out_dir: Path) -> list[Path]:
    """<metric>_vs_<param>.png for each sweep metric and swept parameter, from the points
    that have the metric (mean over completed seeds, std as error bar)."""
    paths = []
    names = short_keys(report.swept)
    for metric in report.metrics:
        points = [p for p in report.points if p.metrics.get(metric.name) is not None]
        if not points:
            continue
        for key in report.swept:
            have = [p for p in points if key in p.params]
            if have:
                paths.append(_plot_param(report, metric.name, key, names[key], have, out_dir))
    return paths


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _plot_param(report: Report, metric: str, key: str, short: str, points: list[PointRow], out_dir: Path) -> Path:
    others = [k for k in report.swept if k != key]
    groups: dict[str, list[PointRow]] = {}
    for p in points:
        group = _text([p.params.get(k) for k in others])
        groups.setdefault(group, []).append(p)
    xs_all = [p.params[key] for p in points]
    numeric = _numeric(xs_all)
    # x of each value: the number itself, or a category's position (order of first appearance)
    position: dict[str, float] = {}
    for v in xs_all:
        position.setdefault(_text(v), float(v) if numeric else float(len(position)))
    many = len(groups) > MAX_LEGEND
    colors = _colors(1 if many else len(groups))
    fig, (ax,) = new_figure(1)
    for i, members in enumerate(groups.values()):
        pairs = []
        for p in members:
            agg = p.metrics[metric]
            assert agg is not None
            pairs.append((position[_text(p.params[key])], agg.mean, agg.std or 0.0))
        pairs.sort()
        label = None
        if not many and len(groups) > 1:
            label = point_label({k: members[0].params.get(k) for k in others}, others)
        ax.errorbar(
            [x for x, _, _ in pairs],
            [y for _, y, _ in pairs],
            yerr=[e for _, _, e in pairs] if report.has_seeds else None,
            fmt="o" if many else "o-",
            color=colors[0 if many else i],
            capsize=3,
            alpha=0.6 if many else 0.9,
            label=label,
        )
    if numeric and spans_decade(xs_all):
        ax.set_xscale("log")
    if numeric and len(position) <= 12 and all(isinstance(v, int) for v in xs_all):
        ax.set_xticks(sorted(position.values()), [fmt_value(v) for v in sorted(set(xs_all))])
        ax.minorticks_off()
    if not numeric:
        ax.set_xticks(list(position.values()), [fmt_value(json.loads(c)) for c in position])
    ax.set_xlabel(key)
    ylabel = f"{metric} (mean ± std over seeds)" if report.has_seeds else metric
    ax.set_ylabel(ylabel)
    ax.set_title(f"{metric} vs {short}")
    ax.grid(alpha=0.3)
    if not many and len(groups) > 1:
        ax.legend(fontsize="small")
    path = out_dir / f"{_safe(metric)}_vs_{_safe(key)}.png"
    fig.savefig(path, dpi=110)
    return path


def write_plots(report: Report, out_dir: Path) -> list[Path]:
    """Every plot of the report into `out_dir`; the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = plot_learning_curves(report, out_dir) + plot_metric_vs_params(report, out_dir)
    if report.study is not None:
        from rllm_sweeps.report.study import plot_study

        paths += plot_study(report.study, out_dir)
    return paths


__all__ = ["LEARNING_CURVES", "plot_learning_curves", "plot_metric_vs_params", "spans_decade", "write_plots"]
