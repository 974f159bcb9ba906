"""`rllm-sweeps report SWEEP_DIR`: print the sweep's table and write its report files.

Registered by rllm_sweeps/cli.py:

    from rllm_sweeps.report import add_report_parser
    add_report_parser(subparsers)       # sets func=cmd_report
"""

from __future__ import annotations

import argparse
import os
import sys

from rllm_sweeps.records.layout import REPORT_DIR
from rllm_sweeps.report.model import build_report
from rllm_sweeps.report.render import MAX_ROWS, render
from rllm_sweeps.report.sweepdir import ReportError
from rllm_sweeps.report.write import write_report

FORMATS = ("table", "csv", "markdown")


def cmd_report(args: argparse.Namespace) -> int:
    """The table of a sweep (jobs, seeds aggregated, best configuration) from its directory;
    writes SWEEP_DIR/report/ (CSV, Markdown, PNG plots)."""
    from rllm_sweeps.problems import ConfigError
    from rllm_sweeps.sweep.storage import readable_sweep_dir

    try:
        sweep_dir = readable_sweep_dir(str(args.sweep_dir))
        report = build_report(sweep_dir)
    except ConfigError as err:
        print(f"error: {err.issues[0].message}", file=sys.stderr)
        return 2
    except ReportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        paths = write_report(sweep_dir, plots=not getattr(args, "no_plots", False), report=report)
    except OSError as err:
        print(f"error: cannot write {report.sweep_dir / REPORT_DIR}: {err.strerror or err}", file=sys.stderr)
        return 1
    try:
        print(render(report, getattr(args, "format", "table"), max_rows=getattr(args, "rows", MAX_ROWS)))
        # The files' list goes to stderr, so `--format csv > jobs.csv` stays pure CSV.
        print(f"wrote {len(paths)} files to {report.sweep_dir / REPORT_DIR}", file=sys.stderr)
    except BrokenPipeError:  # `rllm-sweeps report DIR | head`
        sys.stdout = open(os.devnull, "w")  # Python flushes stdout at exit: not into the closed pipe
    return 0


def add_report_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `report` subcommand to an argparse subparsers object."""
    parser = subparsers.add_parser(
        "report",
        help="print a sweep's results table and write its report (CSV, Markdown, plots)",
        description=cmd_report.__doc__,
    )
    parser.add_argument(
        "sweep_dir", metavar="SWEEP_DIR", help="the sweep directory (holds plan.json and jobs/), or its store's URI"
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="table", help="what to print: table (default), csv (the jobs), markdown"
    )
    parser.add_argument("--no-plots", action="store_true", help="do not draw the PNG plots")
    parser.add_argument(
        "--rows", type=int, default=MAX_ROWS, help=f"table rows to print before '... N more' (default {MAX_ROWS})"
    )
    parser.set_defaults(func=cmd_report)
    return parser
