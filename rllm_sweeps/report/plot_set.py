"""Which plots a report gets: learning curves and metric-vs-parameter plots (plots.py), a PBT sweep's
drawn by its trials' schedules instead (pbt_plots.py), Optuna's study plots (study.py) and the
confirmation stage's (confirm_plot.py). Above those modules, so that none of them imports another back.
"""

from __future__ import annotations

from pathlib import Path

from rllm_sweeps.report.confirm_plot import plot_confirmation
from rllm_sweeps.report.model import Report
from rllm_sweeps.report.pbt_plots import write_pbt_plots
from rllm_sweeps.report.plots import plot_learning_curves, plot_metric_vs_params


def write_plots(report: Report, out_dir: Path) -> list[Path]:
    """Every plot of the report into `out_dir`; the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if report.method == "pbt":  # its trials by their schedules, not their first values
        paths = write_pbt_plots(report, out_dir)
    else:
        paths = plot_learning_curves(report, out_dir) + plot_metric_vs_params(report, out_dir)
    if report.study is not None:
        from rllm_sweeps.report.study import plot_study  # Optuna's plotting: only for an Optuna sweep

        paths += plot_study(report.study, out_dir)
    if report.confirmation is not None:
        paths += plot_confirmation(report, out_dir)
    return paths


__all__ = ["write_plots"]
