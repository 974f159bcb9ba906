"""The report's files: SWEEP_DIR/report/{jobs.csv, points.csv, report.md, *.png}."""

from __future__ import annotations

import re
from pathlib import Path

from rllm_sweeps.records.atomic import write_text_atomic
from rllm_sweeps.records.layout import REPORT_DIR
from rllm_sweeps.report.model import Report, build_report
from rllm_sweeps.report.render import jobs_csv, points_csv, render_markdown

JOBS_CSV = "jobs.csv"
POINTS_CSV = "points.csv"
REPORT_MD = "report.md"


def write_report(sweep_dir: Path | str, *, plots: bool = True, report: Report | None = None) -> list[Path]:
    """Write SWEEP_DIR/report/: jobs.csv, points.csv, report.md and (unless `plots` is False) the
    PNG plots, removing those the previous report drew and this one does not; return the paths
    written. `report`: one already built from `sweep_dir` (else it is built here). Raises
    ReportError for a non-sweep directory."""
    if report is None:
        report = build_report(sweep_dir)
    out = Path(sweep_dir) / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    pngs: list[Path] = []
    if plots:
        from rllm_sweeps.report.plot_set import write_plots

        pngs = write_plots(report, out)
        for stale in drawn_before(out) - {p.name for p in pngs}:
            (out / stale).unlink(missing_ok=True)
    paths = [
        _write_text(out / JOBS_CSV, jobs_csv(report)),
        _write_text(out / POINTS_CSV, points_csv(report)),
        _write_text(out / REPORT_MD, render_markdown(report, plots=pngs)),
    ]
    return paths + pngs


def drawn_before(out: Path) -> set[str]:
    """The PNGs the previous report.md in `out` showed: the report's own, so one it no longer draws
    (an older version's plot, a plot that no longer applies) goes rather than stays beside the new."""
    try:
        text = (out / REPORT_MD).read_text()
    except FileNotFoundError:
        return set()
    return set(re.findall(r"^!\[[^\]]*\]\(([^)/]+\.png)\)$", text, flags=re.MULTILINE))


def _write_text(path: Path, text: str) -> Path:
    """Atomically: a reader (a sweep's live view, a second `report`) never sees half a file."""
    return write_text_atomic(path, text)
