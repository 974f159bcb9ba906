"""The Optuna study of a `method: optuna` sweep, for its report: best trial (or Pareto front),
parameter importances, and Optuna's own plots as PNG.

    summary = read_study(sweep_dir, plan, manifest)   # None for other sweeps
    print("\\n".join(study_lines(summary)))
    plot_study(summary, out_dir)   # optuna_history.png, optuna_intermediate_values.png,
                                   # optuna_importances.png (or optuna_pareto_front.png), optuna_timeline.png

The study's location comes from manifest.json (`study`: storage URL and study name, written
by the sweep); an older directory without it falls back to the spec's storage setting and
the sweep directory's name. Optuna is imported only for Optuna sweeps.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rllm_sweeps.override_text import override_key
from rllm_sweeps.records.manifest import SweepManifest
from rllm_sweeps.records.plan import PlanRecord
from rllm_sweeps.study import STUDY_ATTR, is_database_url, open_storage, storage_url

PLOTS = ("optuna_history.png", "optuna_intermediate_values.png", "optuna_importances.png", "optuna_timeline.png")
PARETO_PLOT = "optuna_pareto_front.png"
MAX_FRONT = 10  # Pareto-optimal trials listed in text


@dataclass
class BestTrial:
    number: int
    values: list[float]
    params: dict[str, Any]
    overrides: list[str]  # the point's overrides (the trial's user attribute)
    std: dict[str, float] = field(default_factory=dict)  # over seed replicates, where there are several


@dataclass
class StudySummary:
    name: str
    storage: str
    metrics: list[str]
    directions: list[str]
    counts: dict[str, int]  # trials by state (complete, pruned, fail, running) and infeasible
    best: list[BestTrial]  # the best trial, or the Pareto front (several objectives)
    importances: dict[str, float]  # of the first objective; {} when there are too few trials
    study: Any = None  # the loaded optuna.Study (plots)

    @property
    def dashboard_command(self) -> str:
        return f"optuna-dashboard {self.storage}"


def read_study(sweep_dir: Path, plan: PlanRecord, manifest: SweepManifest | None) -> StudySummary | None:
    """The study of an Optuna sweep (None for grid and random sweeps, or when it does not exist yet)."""
    if plan.method != "optuna":
        return None
    info = manifest.study if manifest is not None else None
    block = plan.spec.get("optuna") if isinstance(plan.spec.get("optuna"), dict) else {}
    url = info.storage if info else storage_url(block.get("storage"), Path(sweep_dir))
    name = info.study_name if info else block.get("study_name") or Path(sweep_dir).name
    if not is_database_url(url) and not Path(url).is_file():
        return None
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.load_study(study_name=name, storage=open_storage(url))
    except KeyError:
        return None
    trials = study.get_trials(deepcopy=False)
    counts: dict[str, int] = {}
    for t in trials:
        state = "infeasible" if "infeasible" in t.user_attrs else t.state.name.lower()
        counts[state] = counts.get(state, 0) + 1
    metrics = list((study.user_attrs.get(STUDY_ATTR) or {}).get("metrics") or [])
    metrics = metrics or [f"objective {i}" for i in range(len(study.directions))]
    return StudySummary(
        name=name,
        storage=url,
        metrics=metrics,
        directions=[d.name.lower() for d in study.directions],
        counts=counts,
        best=_best(study, metrics),
        importances=_importances(study),
        study=study,
    )


def _best(study: Any, metrics: list[str]) -> list[BestTrial]:
    if len(study.directions) > 1:
        front = study.best_trials
    else:
        try:
            front = [study.best_trial]
        except ValueError:  # no trial completed yet
            front = []
    out = []
    for t in sorted(front, key=lambda t: t.number):
        std = {m: t.user_attrs[f"{m}_std"] for m in metrics if f"{m}_std" in t.user_attrs}
        out.append(BestTrial(t.number, list(t.values), dict(t.params), list(t.user_attrs.get("overrides") or []), std))
    return out


def _importances(study: Any) -> dict[str, float]:
    import optuna

    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    if len(complete) < 2:
        return {}
    target = None if len(study.directions) == 1 else (lambda t: t.values[0])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return dict(optuna.importance.get_param_importances(study, target=target))
    except (ValueError, RuntimeError, ZeroDivisionError):  # e.g. no parameter varies among completed trials
        return {}


def _value(v: float) -> str:
    return f"{v:.4g}" if math.isfinite(v) else str(v)


def study_lines(summary: StudySummary) -> list[str]:
    """The study in a few lines: trials by state, best trial or Pareto front, importances, dashboard."""
    counts = ", ".join(f"{n} {state}" for state, n in summary.counts.items())
    lines = [f"Optuna study {summary.name!r}: {sum(summary.counts.values())} trials ({counts or 'none'})"]
    objectives = [f"{m} ({d})" for m, d in zip(summary.metrics, summary.directions, strict=False)]
    if not summary.best:
        lines.append("best trial: none yet (no trial completed)")
    elif len(summary.directions) == 1:
        b = summary.best[0]
        std = f" ± {_value(b.std[summary.metrics[0]])}" if summary.metrics[0] in b.std else ""
        lines.append(f"best trial #{b.number}: {objectives[0]} = {_value(b.values[0])}{std}")
        lines.append("best parameters: " + _searched(b))
    else:
        lines.append(f"Pareto front of {', '.join(objectives)}: {len(summary.best)} trials")
        for b in summary.best[:MAX_FRONT]:
            values = ", ".join(_value(v) for v in b.values)
            lines.append(f"  #{b.number}: ({values})  {_searched(b)}")
        if len(summary.best) > MAX_FRONT:
            lines.append(f"  ... {len(summary.best) - MAX_FRONT} more")
    if summary.importances:
        ranked = sorted(summary.importances.items(), key=lambda kv: -kv[1])
        lines.append("parameter importances: " + ", ".join(f"{k} {v:.2f}" for k, v in ranked))
    lines.append(f"dashboard: {summary.dashboard_command}  (pip install optuna-dashboard)")
    return lines


def _searched(best: BestTrial) -> str:
    """The trial's searched values as overrides (a zip group's row as its keys' overrides)."""
    keys = set()
    for name in best.params:
        keys.update(name[4:-1].split(",") if name.startswith("zip(") else [name])
    chosen = [o for o in best.overrides if override_key(o) in keys]
    return " ".join(chosen) or " ".join(f"{k}={v}" for k, v in best.params.items())


def plot_study(summary: StudySummary, out_dir: Path) -> list[Path]:
    """Optuna's matplotlib plots of the study, as PNG files in `out_dir`; the paths written.
    A plot that has nothing to show (no completed trial, no intermediate value; a history of fewer
    than two completed trials) is skipped."""
    import matplotlib

    matplotlib.use("Agg")  # files only: never open a window
    import matplotlib.pyplot as plt
    import optuna
    import optuna.visualization.matplotlib as vis

    optuna.logging.set_verbosity(optuna.logging.ERROR)  # "no complete trials" is said in the text already
    study = summary.study
    several = len(summary.directions) > 1
    target = (lambda t: t.values[0]) if several else None
    name = summary.metrics[0]
    plots: list[tuple[str, Any]] = [
        (PLOTS[0], lambda: vis.plot_optimization_history(study, target=target, target_name=name)),
        (PLOTS[1], lambda: vis.plot_intermediate_values(study)),
        (PLOTS[2], lambda: vis.plot_param_importances(study, target=target, target_name=name)),
        (PLOTS[3], lambda: vis.plot_timeline(study)),
    ]
    if several and len(summary.directions) <= 3:
        plots.append((PARETO_PLOT, lambda: vis.plot_pareto_front(study, target_names=summary.metrics)))
    if several:
        plots = [p for p in plots if p[0] != PLOTS[1]]  # Optuna reports no intermediate values then
    paths = []
    # Optuna's plots set the ggplot style globally (plt.style.use): kept inside, or every later
    # figure of the process (confirmation.png, another sweep's report) turns grey.
    with matplotlib.rc_context():
        for filename, draw in plots:
            if filename == PLOTS[1] and not any(t.intermediate_values for t in study.get_trials(deepcopy=False)):
                continue
            if filename in (PLOTS[0], PLOTS[2]) and not summary.best:
                continue  # nothing completed yet
            if filename == PLOTS[0] and summary.counts.get("complete", 0) < 2:
                continue  # Optuna draws completed trials only: one is a lone dot, not a history
            if filename == PLOTS[2] and not summary.importances:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # Optuna marks its matplotlib plots experimental
                    ax = draw()
            except (ValueError, RuntimeError):  # nothing to draw yet
                continue
            figure = ax.figure if hasattr(ax, "figure") else ax.flat[0].figure
            if filename in (PLOTS[0], PLOTS[1]):  # trials and steps are whole numbers
                from matplotlib.ticker import MaxNLocator

                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            figure.set_size_inches(7.5, 4.5)
            figure.tight_layout()
            path = out_dir / filename
            figure.savefig(path, dpi=110)
            plt.close(figure)
            paths.append(path)
    return paths


__all__ = ["PARETO_PLOT", "PLOTS", "BestTrial", "StudySummary", "plot_study", "read_study", "study_lines"]
