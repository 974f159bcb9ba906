"""Results of a sweep, from its directory alone: tables, CSV, Markdown, plots, best configs.

    from rllm_sweeps.report import build_report, render_table, write_report

    report = build_report(sweep_dir)       # typed rows: jobs, points (seeds aggregated), best
    print(render_table(report))            # the table a finished sweep prints
    write_report(sweep_dir)                # SWEEP_DIR/report/{jobs.csv, points.csv, report.md, *.png}

Modules, one concept each: sweepdir (reading manifest.json, plan.json and the jobs'
directories), model (the report's rows and their aggregation), render (terminal table,
CSV, Markdown), plots (PNG), write (the report directory), command (`rllm-sweeps report`).
"""

from rllm_sweeps.report.command import add_report_parser, cmd_report
from rllm_sweeps.report.model import (
    NO_RESULT,
    NOT_STARTED,
    Aggregate,
    BestPoint,
    JobRow,
    PointRow,
    Report,
    build_report,
)
from rllm_sweeps.report.render import jobs_csv, points_csv, render, render_markdown, render_table
from rllm_sweeps.report.sweepdir import ReportError
from rllm_sweeps.report.write import write_report

__all__ = [
    "NOT_STARTED",
    "NO_RESULT",
    "Aggregate",
    "BestPoint",
    "JobRow",
    "PointRow",
    "Report",
    "ReportError",
    "add_report_parser",
    "build_report",
    "cmd_report",
    "jobs_csv",
    "points_csv",
    "render",
    "render_markdown",
    "render_table",
    "write_report",
]
