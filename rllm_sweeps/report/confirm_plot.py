"""The confirmation stage's figure (report/confirmation.py's ranking, drawn).

confirmation.png    one row per confirmed point, the confirmed best on top: each fresh seed's final
                    value, their mean with its 95% confidence interval, and the search's own value
                    of the point beside it (a search's best often owes part of its lead to its seeds:
                    the gap between the two is what the stage measured); the verdict as the title
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rllm_sweeps.report.confirmation import verdict
from rllm_sweeps.report.model import Report
from rllm_sweeps.report.render import fmt_number, point_label

CONFIRMATION = "confirmation.png"
JITTER = 0.12  # replicates spread up and down their row so equal values stay visible


def confirmation_figure(report: Report) -> Any:
    """The figure, or None without a confirmation stage or a completed replicate."""
    c = report.confirmation
    if c is None or not c.stats.ranking:
        return None
    from rllm_sweeps.report.plots import new_figure

    rows = list(c.stats.ranking)
    search = {p.point_index: p.metrics.get(c.metric.name) for p in report.points}
    fig, (ax,) = new_figure(1)
    fig.set_size_inches(8.0, 2.0 + 0.9 * len(rows))
    searched = "the search's value (± std over its seeds)" if report.has_seeds else "the search's value"
    labels = []
    for y, row in enumerate(rows):
        point = c.points[row.name]
        n = len(row.values)
        offsets = [JITTER * (2 * i / (n - 1) - 1) if n > 1 else 0.0 for i in range(n)]
        ax.scatter(
            row.values,
            [y + o for o in offsets],
            s=18,
            color="tab:blue",
            alpha=0.7,
            zorder=3,
            label="a fresh seed's final value" if y == 0 else None,
        )
        low, high = row.ci if row.ci is not None else (row.mean, row.mean)
        ax.errorbar(
            [row.mean],
            [y],
            xerr=[[row.mean - low], [high - row.mean]],
            fmt="D",
            color="tab:blue",
            markersize=7,
            capsize=5,
            linewidth=2,
            zorder=4,
            label="their mean, 95% CI" if y == 0 else None,
        )
        agg = search.get(point.point_index)
        if agg is not None:
            ax.errorbar(
                [agg.mean],
                [y - 0.3],
                xerr=[[agg.std or 0.0], [agg.std or 0.0]],
                fmt="o",
                mfc="white",
                color="0.4",
                markersize=6,
                capsize=3,
                zorder=4,
                label=searched if y == 0 else None,
            )
        ci = f" [{fmt_number(low)}, {fmt_number(high)}]" if row.ci is not None else ""
        params = next((p.params for p in report.points if p.point_index == point.point_index), {})
        what = f"trial {point.point_index}'s schedule" if report.method == "pbt" else point_label(params, report.swept)
        mean = f"mean {fmt_number(row.mean)}{ci}, n={point.completed}/{point.jobs}"
        labels.append("\n".join(t for t in (row.name, what, mean) if t))
    ax.set_yticks(range(len(rows)), labels, fontsize="small")
    ax.set_ylim(len(rows) - 0.5, -0.7)  # the confirmed best on top
    ax.set_xlabel(f"{c.metric.name}, final ({c.metric.goal})")
    said = verdict(c).replace(" (", "\n(", 1)  # the test on a line of its own: the title fits
    ax.set_title(f"confirmation: fresh seeds {list(c.seeds)}\n{said}", fontsize="medium")
    ax.grid(axis="x", alpha=0.3)
    fig.legend(loc="outside lower center", fontsize="small", ncols=3)
    return fig


def plot_confirmation(report: Report, out_dir: Path) -> list[Path]:
    """confirmation.png (confirmation_figure), or nothing without a confirmed replicate."""
    fig = confirmation_figure(report)
    if fig is None:
        return []
    path = out_dir / CONFIRMATION
    fig.savefig(path, dpi=100)
    return [path]
