"""The report's plots, rule by rule, read from matplotlib's own objects (axes, lines, collections),
not pixels: a log axis for a log-distributed parameter, seeds as one line with a band, smoothed
train curves, a legend outside the data, zipped parameters as one series, pruned trials marked."""

from __future__ import annotations

from pathlib import Path

from matplotlib.collections import FillBetweenPolyCollection, PathCollection
from test_report import ZIP_POINTS, make_sweep, plan_dict, write_job

from rllm_sweeps.records.status import JobStatus
from rllm_sweeps.report import build_report
from rllm_sweeps.report.plots import learning_curves_figure, metric_vs_param_figure, smooth

LRS = [{"trainer.lr": v} for v in (1e-4, 1.5e-4, 2.2e-4, 3.2e-4)]  # within a decade


def lr_sweep(tmp_path: Path, distribution: str, pruned: int = 0) -> Path:
    parameters = {"trainer.lr": {"distribution": distribution, "min": 1e-4, "max": 3e-4}}
    plan = plan_dict(LRS, seeds=None, parameters=parameters)
    plan["spec"]["method"] = "random"
    sweep = make_sweep(tmp_path, plan, name=distribution)
    for i, job in enumerate(plan["jobs"]):
        status = JobStatus.PRUNED if i < pruned else "completed"
        write_job(sweep, job, status=status, val=[0.1 * (i + 1), 0.2 * (i + 1)])
    return sweep


def test_a_log_distributed_parameter_gets_a_log_axis_even_within_a_decade(tmp_path):
    log = build_report(lr_sweep(tmp_path, "log_uniform_values"))
    linear = build_report(lr_sweep(tmp_path, "uniform"))
    assert log.log_axes == ["trainer.lr"]
    assert metric_vs_param_figure(log, "val_reward_mean", "trainer.lr").axes[0].get_xscale() == "log"
    assert metric_vs_param_figure(linear, "val_reward_mean", "trainer.lr").axes[0].get_xscale() == "linear"


def test_few_swept_values_are_the_ticks_themselves(tmp_path):
    ax = metric_vs_param_figure(
        build_report(lr_sweep(tmp_path, "log_uniform_values")), "val_reward_mean", "trainer.lr"
    ).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1e-4", "1.5e-4", "2.2e-4", "3.2e-4"]


def test_pruned_trials_are_drawn_marked_at_their_last_value(tmp_path):
    report = build_report(lr_sweep(tmp_path, "log_uniform_values", pruned=2))
    fig = metric_vs_param_figure(report, "val_reward_mean", "trainer.lr")
    (marked,) = [c for c in fig.axes[0].collections if isinstance(c, PathCollection)]
    assert marked.get_label() == "pruned (2): last value"
    assert [round(y, 3) for _, y in marked.get_offsets()] == [0.2, 0.4]
    assert len(fig.legends) == 1 and fig.axes[0].get_legend() is None  # the legend outside the data


def zipped_sweep(tmp_path: Path) -> Path:
    plan = plan_dict(ZIP_POINTS)
    plan["spec"]["zip"] = [["trainer.lr", "rollout.n"]]
    sweep = make_sweep(tmp_path, plan)
    for i, job in enumerate(plan["jobs"]):
        write_job(sweep, job, val=[0.1 * i, 0.2 * i + 0.1])
    return sweep


def test_zipped_parameters_are_one_series(tmp_path):
    report = build_report(zipped_sweep(tmp_path))
    ax = metric_vs_param_figure(report, "val_reward_mean", "trainer.lr").axes[0]
    assert len(ax.containers) == 1  # one errorbar series through both points, not two of one point


def test_seeds_collapse_to_one_line_per_point_with_a_band(tmp_path):
    report = build_report(zipped_sweep(tmp_path))  # 2 points x 2 seeds
    fig = learning_curves_figure(report)
    val = fig.axes[0]
    assert len(val.get_lines()) == 2  # one per point, not one per job
    assert len([c for c in val.collections if isinstance(c, FillBetweenPolyCollection)]) == 2
    assert [round(y, 3) for y in val.get_lines()[0].get_ydata()] == [0.05, 0.2]  # the seeds' mean
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)


def test_train_curves_are_smoothed_with_the_raw_mean_faint_behind(tmp_path):
    fig = learning_curves_figure(build_report(zipped_sweep(tmp_path)))
    train = fig.axes[-1]
    raw, smoothed = train.get_lines()[:2]
    assert raw.get_alpha() < 0.5 and smoothed.get_alpha() is None
    assert list(smoothed.get_ydata()) == smooth(list(raw.get_ydata()))
    assert list(smoothed.get_ydata()) != list(raw.get_ydata())


def test_values_too_close_to_label_get_round_ticks_instead(tmp_path):
    close = [{"trainer.lr": v} for v in (2.237e-3, 2.288e-3, 8.9e-4)]  # Optuna's draws, two nearly equal
    plan = plan_dict(
        close, seeds=None, parameters={"trainer.lr": {"distribution": "log_uniform_values", "min": 1e-4, "max": 3e-2}}
    )
    sweep = make_sweep(tmp_path, plan)
    for job in plan["jobs"]:
        write_job(sweep, job, val=[0.1, 0.2])
    fig = metric_vs_param_figure(build_report(sweep), "val_reward_mean", "trainer.lr")
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert "0.002237" not in labels and "0.002288" not in labels
    assert set(labels) <= {"1e-4", "2e-4", "3e-4", "5e-4", "0.001", "0.002", "0.003", "0.005", "0.01"}, labels


def test_learning_curves_of_more_points_than_a_legend_holds_get_a_colour_bar_of_the_swept_parameter(tmp_path):
    lrs = [{"trainer.lr": 1e-4 * 1.5**i} for i in range(12)]  # the shipped Optuna example's 12 trials
    plan = plan_dict(lrs, seeds=None, parameters={"trainer.lr": {"distribution": "log_uniform"}})
    sweep = make_sweep(tmp_path, plan)
    for i, job in enumerate(plan["jobs"]):
        write_job(sweep, job, val=[0.01 * i, 0.02 * i])
    fig = learning_curves_figure(build_report(sweep))
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(bars) == 1 and bars[0].get_ylabel() == "trainer.lr" and not fig.legends
    colours = {line.get_color() for line in fig.axes[0].get_lines()}
    assert len(colours) == 12  # each trial its own colour, read off the bar


def test_with_a_colour_bar_a_second_parameter_of_few_values_is_told_by_marker_shape(tmp_path):
    points = [{"trainer.lr": 1e-4 * 1.5**i, "rollout.n": (4, 8)[i % 2]} for i in range(12)]  # lr_optuna's space
    parameters = {"trainer.lr": {"distribution": "log_uniform"}, "rollout.n": {"values": [4, 8]}}
    plan = plan_dict(points, seeds=None, parameters=parameters)
    sweep = make_sweep(tmp_path, plan)
    for i, job in enumerate(plan["jobs"]):
        write_job(sweep, job, val=[0.01 * i, 0.02 * i])
    fig = learning_curves_figure(build_report(sweep))
    assert [line.get_marker() for line in fig.axes[0].get_lines()] == ["o", "s"] * 6  # n=4: o, n=8: s
    (legend,) = fig.legends
    assert legend.get_title().get_text() == "n" and [t.get_text() for t in legend.get_texts()] == ["4", "8"]


def study_of(complete: int, pruned: int):  # noqa: ANN201
    """An Optuna study in memory with `complete` completed and `pruned` pruned trials, as its summary."""
    import optuna

    from rllm_sweeps.report.study import BestTrial, StudySummary

    study = optuna.create_study(direction="maximize")
    space = {"trainer.lr": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True)}
    for i in range(complete + pruned):
        state = optuna.trial.TrialState.COMPLETE if i < complete else optuna.trial.TrialState.PRUNED
        trial = optuna.trial.create_trial(
            params={"trainer.lr": 1e-3 * (i + 1)},
            distributions=space,
            value=0.1 * (i + 1) if state == optuna.trial.TrialState.COMPLETE else None,
            intermediate_values={2: 0.05 * (i + 1)},
            state=state,
        )
        study.add_trial(trial)
    best = BestTrial(0, [0.1], {"trainer.lr": 1e-3}, ["trainer.lr=0.001"])
    counts = {"complete": complete, "pruned": pruned}
    return StudySummary("s", "mem", ["val_reward_mean"], ["maximize"], counts, [best], {}, study)


def test_an_optuna_history_of_one_completed_trial_is_not_drawn_but_the_pruned_ones_are(tmp_path):
    from rllm_sweeps.report.study import plot_study

    one = {p.name for p in plot_study(study_of(1, 3), tmp_path)}
    assert "optuna_history.png" not in one  # a lone dot (Optuna's history draws completed trials only)
    assert {"optuna_intermediate_values.png", "optuna_timeline.png"} <= one
    assert "optuna_history.png" in {p.name for p in plot_study(study_of(2, 3), tmp_path)}


def test_optunas_plots_leave_the_style_of_later_figures_as_it_was(tmp_path):
    """Optuna's matplotlib plots set the ggplot style globally; a report's later figures (its
    confirmation.png, another sweep's report in the same process) keep matplotlib's own."""
    import matplotlib

    from rllm_sweeps.report.study import plot_study

    before = matplotlib.rcParams["axes.facecolor"]
    assert plot_study(study_of(2, 1), tmp_path)
    assert matplotlib.rcParams["axes.facecolor"] == before
