"""A report as text: an aligned terminal table (through rich, text_table.py), CSV (jobs and points), Markdown.

    print(render_table(report))           # what `rllm-sweeps report` and a finished sweep print
    Path("jobs.csv").write_text(jobs_csv(report))
    Path("report.md").write_text(render_markdown(report, plots=[...]))

CSV keeps full keys and full precision (for pandas); the terminal table and Markdown round
numbers to 4 significant digits and shorten keys and long cells.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rllm_sweeps.records.layout import REPORT_DIR
from rllm_sweeps.report.confirmation import confirmation_lines, verdict
from rllm_sweeps.report.model import Aggregate, BestPoint, Report
from rllm_sweeps.report.reruns import rerun_lines
from rllm_sweeps.report.study import study_lines
from rllm_sweeps.text_table import text_table

MAX_ROWS = 50  # terminal rows per table before "... N more"
MAX_CELL = 24  # terminal width of a parameter cell
MAX_ERROR = 60  # terminal width of an error's last line


# ---- values as text ------------------------------------------------------------------------


def fmt_number(value: float | None, digits: int = 4) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    text = f"{value:.{digits}g}"
    if "e" in text:  # 3e-06 -> 3e-6
        mantissa, exp = text.split("e")
        text = f"{mantissa}e{int(exp)}"
    return text


def fmt_value(value: Any) -> str:
    """A parameter's value, short: 3e-6, 8, true, gsm8k, [1,2]."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value == 0 or not math.isfinite(value) or 1e-3 <= abs(value) < 1e5:
            return fmt_number(value)
        mantissa, exp = f"{value:.3e}".split("e")  # small and large values alike: 1e-4, 2.5e-5
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exp)}"
    if isinstance(value, int | str):
        return str(value)
    return json.dumps(value, separators=(",", ":"), default=str)


def fmt_aggregate(agg: Aggregate | None, with_n: bool = True) -> str:
    """'0.6125 ± 0.0213 (n=3)'; a single seed: '0.6125 (n=1)'."""
    if agg is None:
        return ""
    text = fmt_number(agg.mean)
    if agg.std is not None:
        text += f" ± {fmt_number(agg.std, 2)}"
    return f"{text} (n={agg.n})" if with_n else text


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def short_keys(keys: Sequence[str]) -> dict[str, str]:
    """Each key by its shortest dotted suffix that no other key shares: trainer.lr -> lr."""
    out = {}
    for key in keys:
        parts = key.split(".")
        for n in range(1, len(parts) + 1):
            tail = ".".join(parts[-n:])
            if not any(other != key and (other == tail or other.endswith("." + tail)) for other in keys):
                out[key] = tail
                break
        else:
            out[key] = key
    return out


def point_label(params: dict[str, Any], keys: Sequence[str] | None = None) -> str:
    """'lr=3e-6 n=8': a point by its swept values (short keys)."""
    keys = list(params) if keys is None else [k for k in keys if k in params]
    names = short_keys(keys)
    return " ".join(f"{names[k]}={fmt_value(params[k])}" for k in keys) or "(one point)"


# ---- the terminal table ----------------------------------------------------------------------


def _job_table(report: Report, max_rows: int) -> list[str]:
    names = short_keys(report.swept)
    show_seed = any(j.seed is not None for j in report.jobs) and report.has_seeds
    show_restarts = any(j.restarts for j in report.jobs)
    show_attempts = any(j.attempts > 1 for j in report.jobs)
    show_error = any(j.error for j in report.jobs)
    show_best = any(j.best.get(m.name) != j.final.get(m.name) for j in report.jobs for m in report.metrics)
    head = ["#", *(names[k] for k in report.swept)] + ["seed"] * show_seed + ["status"]
    for m in report.metrics:
        head += [m.name] + [f"best {m.name}"] * show_best
    head += ["steps", "time"] + ["restarts"] * show_restarts + ["attempts"] * show_attempts + ["error"] * show_error
    rows = [head]
    for j in report.jobs[:max_rows]:
        row = [str(j.index), *(fmt_value(j.params.get(k)) for k in report.swept)]
        row += ["" if j.seed is None else str(j.seed)] * show_seed + [j.status]
        for m in report.metrics:
            row += [fmt_number(j.final.get(m.name))] + [fmt_number(j.best.get(m.name))] * show_best
        row += ["" if j.steps is None else str(j.steps), fmt_duration(j.wall_time_s)]
        row += [str(j.restarts)] * show_restarts + [str(j.attempts)] * show_attempts + [j.error or ""] * show_error
        rows.append(row)
    numbers = range(len(report.swept) + 2 + show_seed, len(head) - show_error)  # the metrics to the attempts
    cut = {i: MAX_CELL for i in range(1, len(report.swept) + 1)} | ({len(head) - 1: MAX_ERROR} if show_error else {})
    lines = text_table(rows, right={0, *numbers}, max_width=cut)
    if len(report.jobs) > max_rows:
        lines.append(f"... {len(report.jobs) - max_rows} more jobs (all in report/jobs.csv)")
    return lines


def _point_table(report: Report, max_rows: int) -> list[str]:
    names = short_keys(report.swept)
    head = ["point", *(names[k] for k in report.swept), "done", *(f"{m.name} (mean ± std)" for m in report.metrics)]
    rows = [head]
    for p in report.points[:max_rows]:
        row = [str(p.point_index), *(fmt_value(p.params.get(k)) for k in report.swept)]
        row.append(f"{p.completed}/{len(p.jobs)}")
        row += [fmt_aggregate(p.metrics.get(m.name)) for m in report.metrics]
        rows.append(row)
    n = len(report.swept) + 1
    lines = text_table(rows, right={0, *range(n, len(head))}, max_width={i: MAX_CELL for i in range(1, n)})
    if len(report.points) > max_rows:
        lines.append(f"... {len(report.points) - max_rows} more points (all in report/points.csv)")
    return lines


def tie_words(report: Report, best: BestPoint) -> str:
    """' (a tie: every point gives the same)', ' (a tie with points 3, 5)', or ''."""
    if not best.tied:
        return ""
    if len(best.tied) + 1 == len(report.points):
        return f" (a tie: all {len(report.points)} points give the same)"
    shown = ", ".join(map(str, best.tied[:5])) + (" ..." if len(best.tied) > 5 else "")
    return f" (a tie with point{'s' if len(best.tied) > 1 else ''} {shown})"


def best_lines(report: Report) -> list[str]:
    """'best val_reward_mean (maximize): 0.61 ± 0.02 (n=3) at point 2: trainer.lr=3e-6 rollout.n=8'.
    With a confirmation stage, `best` is its winner, and the search's best is named as such."""
    lines = []
    c = report.confirmation
    if c is not None and c.winner is not None:
        row = c.stats.ranking[0]
        ci = f" [{row.ci[0]:.4g}, {row.ci[1]:.4g}]" if row.ci is not None else ""
        lines.append(
            f"best {c.metric.name} ({c.metric.goal}), confirmed: {row.mean:.4g}{ci} over {len(row.values)} fresh "
            f"seeds at {row.name}: {' '.join(c.winner.overrides)}; {verdict(c)}"
        )
    for b in report.best:
        value = fmt_aggregate(b.value) if report.has_seeds else fmt_number(b.value.mean)
        where = " ".join(b.point.swept_overrides) or "(the only point)"
        head = "the search's best" if c is not None else "best"
        line = f"{head} {b.metric.name} ({b.metric.goal}): {value} at point {b.point.point_index}"
        lines.append(f"{line}{tie_words(report, b)}: {where}")
    have = {b.metric.name for b in report.best}
    for m in report.metrics:
        if m.name not in have:
            lines.append(f"best {m.name} ({m.goal}): none yet (no completed job reports it)")
    return lines


def render_table(report: Report, max_rows: int = MAX_ROWS) -> str:
    """The sweep as aligned text: header, jobs, points (when seeds are replicated), the
    status summary and the best configuration per metric."""
    title = f"Sweep {report.sweep_id or report.sweep_dir.name}: {report.method}"
    title += f", {len(report.points)} points, {len(report.jobs)} jobs ({report.sweep_dir})"
    lines = [title, ""]
    lines += _job_table(report, max_rows)
    if report.has_seeds:
        lines += ["", "Points (seeds aggregated over completed jobs):"]
        lines += _point_table(report, max_rows)
    lines += ["", report.status_line()]
    lines += best_lines(report)
    if report.best_model is not None:
        lines.append(report.best_model.line())
    if report.study is not None:
        lines += study_lines(report.study)
    if report.confirmation is not None:
        lines += confirmation_lines(report.confirmation)
    lines += rerun_lines(report.reruns, report.metrics[0] if report.metrics else None)
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)


# ---- CSV -----------------------------------------------------------------------------------


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)


def _csv(rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in rows:
        writer.writerow([_csv_value(v) for v in row])
    return buf.getvalue()


def jobs_csv(report: Report) -> str:
    """One row per planned job: index, swept parameters (full keys), seed, status, each
    metric's final and best value, steps, wall time, restarts, error, directory."""
    head = ["index", *report.swept, "seed", "status"]
    for m in report.metrics:
        head += [f"{m.name}_final", f"{m.name}_best"]
    head += ["steps", "wall_time_s", "restarts", "failure_kind", "error", "point_id", "config_hash", "job_dir"]
    rows: list[list[Any]] = [head]
    for j in report.jobs:
        row: list[Any] = [j.index, *(j.params.get(k) for k in report.swept), j.seed, j.status]
        for m in report.metrics:
            row += [j.final.get(m.name), j.best.get(m.name)]
        wall = None if j.wall_time_s is None else round(j.wall_time_s, 3)
        job_dir = _relative(j.job_dir, report.sweep_dir)
        row += [j.steps, wall, j.restarts, j.failure_kind, j.error, j.point_id, j.config_hash, job_dir]
        rows.append(row)
    return _csv(rows)


def points_csv(report: Report) -> str:
    """One row per point: its swept parameters, jobs and completed jobs, and for each metric
    the mean, std and n over its completed seeds; its overrides (without the seed)."""
    head = ["point_index", *report.swept, "jobs", "completed"]
    for m in report.metrics:
        head += [f"{m.name}_mean", f"{m.name}_std", f"{m.name}_n"]
    head += ["seeds", "point_id", "overrides"]
    rows: list[list[Any]] = [head]
    for p in report.points:
        row: list[Any] = [p.point_index, *(p.params.get(k) for k in report.swept), len(p.jobs), p.completed]
        for m in report.metrics:
            agg = p.metrics.get(m.name)
            row += [None, None, 0] if agg is None else [agg.mean, agg.std, agg.n]
        seeds = " ".join("" if s is None else str(s) for s in p.seeds).strip()
        row += [seeds, p.point_id, " ".join(p.swept_overrides)]
        rows.append(row)
    return _csv(rows)


def _relative(path: Path | None, root: Path) -> str:
    if path is None:
        return ""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


# ---- Markdown ------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(rows: list[list[str]], right: set[int]) -> list[str]:
    lines = ["| " + " | ".join(_md_cell(c) for c in rows[0]) + " |"]
    lines.append("|" + "|".join("---:" if i in right else "---" for i in range(len(rows[0]))) + "|")
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows[1:]]
    return lines


def render_markdown(report: Report, plots: Sequence[Path] = ()) -> str:
    """report.md: the sweep, its status, the best configurations, points, jobs and plots
    (`plots` are linked relative to SWEEP_DIR/report/, where report.md goes)."""
    lines = [f"# Sweep {report.sweep_id or report.sweep_dir.name}", ""]
    if report.command:
        lines += ["```", " ".join(report.command), "```", ""]
    lines.append(f"Method `{report.method}`, {len(report.points)} points, {len(report.jobs)} jobs.")
    metrics = ", ".join(f"`{m.name}` ({m.goal})" for m in report.metrics)
    lines += [f"Metric: {metrics}.", "", f"**Status:** {report.status_line()}", ""]
    for note in report.notes:
        lines.append(f"> note: {note}")
    if report.notes:
        lines.append("")

    lines += ["## Best configuration", ""]
    if report.confirmation is not None and report.confirmation.winner is not None:  # the confirmed best first
        lines += [best_lines(report)[0], "", "The search's best (before confirmation):", ""]
    have = {b.metric.name for b in report.best}
    for b in report.best:
        value = fmt_aggregate(b.value) if report.has_seeds else fmt_number(b.value.mean)
        point = f"point {b.point.point_index}{tie_words(report, b)}"
        lines += [f"**{b.metric.name}** ({b.metric.goal}): {value}, {point}", ""]
        lines += ["```", " ".join(b.point.overrides) or "(no overrides)", "```", ""]
    for m in report.metrics:
        if m.name not in have:
            lines += [f"**{m.name}** ({m.goal}): none yet (no completed job reports it)", ""]
    if report.best_model is not None:
        lines += [report.best_model.line().replace("best model:", "**Best model:**", 1), ""]
        lines += ["```", f"rllm-sweeps export {report.sweep_dir} --best --merge --out DIR", "```", ""]

    if report.confirmation is not None:
        head, *rest = confirmation_lines(report.confirmation)
        lines += ["## Confirmation", "", head, "", *(f"- {line.strip()}" for line in rest), ""]
    if report.reruns:
        head, *rest = rerun_lines(report.reruns, report.metrics[0] if report.metrics else None)[1:]
        lines += ["## Reruns", "", head, "", *(f"- {line.strip()}" for line in rest), ""]
    if report.study is not None:
        lines += ["## Optuna study", ""]
        lines += [f"- {line.strip()}" for line in study_lines(report.study)]
        lines.append("")
    if report.has_seeds:
        lines += ["## Points", "", "Mean ± std over each point's completed seeds.", ""]
        rows = [["point", *(f"`{k}`" for k in report.swept), "done", *(m.name for m in report.metrics)]]
        for p in report.points:
            rows.append(
                [
                    str(p.point_index),
                    *(fmt_value(p.params.get(k)) for k in report.swept),
                    f"{p.completed}/{len(p.jobs)}",
                    *(fmt_aggregate(p.metrics.get(m.name)) for m in report.metrics),
                ]
            )
        n = len(report.swept) + 1
        lines += _md_table(rows, {0, *range(n, n + 1 + len(report.metrics))})
        lines.append("")

    lines += ["## Jobs", ""]
    seeds = report.has_seeds
    head = ["#", *(f"`{k}`" for k in report.swept)] + ["seed"] * seeds + ["status"]
    head += [m.name for m in report.metrics] + ["steps", "time", "restarts", "error"]
    rows = [head]
    for j in report.jobs:
        row = [str(j.index), *(fmt_value(j.params.get(k)) for k in report.swept)]
        row += ["" if j.seed is None else str(j.seed)] * seeds + [j.status]
        row += [fmt_number(j.final.get(m.name)) for m in report.metrics]
        row += ["" if j.steps is None else str(j.steps), fmt_duration(j.wall_time_s), str(j.restarts)]
        row.append(f"`{truncate(j.error, 200)}`" if j.error else "")
        rows.append(row)
    first = len(report.swept) + 2 + seeds
    lines += _md_table(rows, {0, *range(first, first + len(report.metrics) + 3)})

    if plots:
        lines += ["", "## Plots", ""]
        for path in plots:
            link = Path(os.path.relpath(path, report.sweep_dir / REPORT_DIR)).as_posix()
            lines += [f"![{path.stem}]({link})", ""]
    return "\n".join(lines).rstrip() + "\n"


def render(report: Report, fmt: str = "table", max_rows: int = MAX_ROWS) -> str:
    """`fmt`: table | csv (the jobs) | markdown."""
    if fmt == "table":
        return render_table(report, max_rows)
    if fmt == "csv":
        return jobs_csv(report)
    if fmt == "markdown":
        return render_markdown(report)
    raise ValueError(f"unknown format {fmt!r}: table, csv or markdown")


__all__ = [
    "best_lines",
    "fmt_aggregate",
    "fmt_duration",
    "fmt_number",
    "fmt_value",
    "jobs_csv",
    "point_label",
    "points_csv",
    "render",
    "render_markdown",
    "render_table",
    "short_keys",
]
