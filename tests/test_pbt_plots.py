"""A PBT sweep's plots drawn by its trials' schedules, and the confirmation stage's plot, read from
matplotlib's own objects (the plotted data), on sweep directories written with the real record
writers (plan.json, metrics.jsonl, result.json, schedule.json). Pure logic: nothing trains."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_report import job_dir_of, make_sweep, plan_dict, write_job

from rllm_sweeps.records.layout import SweepPaths
from rllm_sweeps.records.metric_rows import TrainRow, ValRow
from rllm_sweeps.records.metrics import MetricsLog
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.schedule import Parent, Schedule, Segment, write_schedule
from rllm_sweeps.report import build_report
from rllm_sweeps.report.confirm_plot import confirmation_figure
from rllm_sweeps.report.lineage_plot import schedules_figure
from rllm_sweeps.report.pbt_plots import (
    pbt_learning_curves_figure,
    pbt_metric_vs_param_figure,
    trial_records,
    trial_settings,
)
from rllm_sweeps.report.schedules import job_schedules

LR0, LR1, LR1_AFTER = 1e-3, 3e-3, 1.2e-3
# Trial 0 trains 4 steps at LR0. Trial 1 trains steps 1-2 at LR1, scores badly at step 2, copies trial
# 0's step-2 checkpoint and trains steps 3-4 at LR1_AFTER (trial 0's lr perturbed).
VAL = {0: {2: 0.5, 4: 0.7}, 1: {2: 0.1, 4: 0.6}}
LRS = {0: [LR0] * 4, 1: [LR1, LR1, LR1_AFTER, LR1_AFTER]}
SCHEDULES = {
    0: Schedule((Segment(0, {"lr": LR0}),)),
    1: Schedule((Segment(0, {"lr": LR0}), Segment(2, {"lr": LR1_AFTER}, Parent(trial=0, step=2)))),
}


def pbt_sweep(tmp_path: Path) -> Path:
    parameters = {"trainer.lr": {"distribution": "log_uniform", "min": 1e-4, "max": 1e-2}}
    plan = plan_dict([{"trainer.lr": LR0}, {"trainer.lr": LR1}], seeds=None, parameters=parameters)
    plan["spec"]["method"] = "pbt"
    sweep = make_sweep(tmp_path, plan, name="pbt")
    for job in plan["jobs"]:
        trial, job_dir = job["index"], job_dir_of(sweep, job)
        job_dir.mkdir(parents=True)
        log = MetricsLog(job_dir)
        for step, lr in enumerate(LRS[trial], start=1):
            log.append(TrainRow(step=step, lr=lr, reward_mean=0.1 * step + 0.01 * trial))
            if step in VAL[trial]:
                log.append(ValRow(step=step, val_reward_mean=VAL[trial][step]))
        log.close()
        final = {"val_reward_mean": VAL[trial][4]}
        JobResult(
            status="completed", config_hash=job["config_hash"], overrides=job["overrides"], steps=4, final=final
        ).write(job_dir)
        write_schedule(job_dir, SCHEDULES[trial])
    return sweep


def lines_by_label(ax) -> dict[str, list[tuple[float, float]]]:  # noqa: ANN001
    return {
        line.get_label(): list(zip(line.get_xdata(), line.get_ydata(), strict=True))
        for line in ax.get_lines()
        if not line.get_label().startswith("_")
    }


def test_a_pbt_trials_learning_curve_follows_its_lineage_through_the_checkpoint_it_copied(tmp_path):
    report = build_report(pbt_sweep(tmp_path))
    fig = pbt_learning_curves_figure(report, job_schedules(report), trial_records(report))
    val = fig.axes[0]
    lines = lines_by_label(val)
    # Trial 1's step 2 is trial 0's (its weights descend from trial 0's step-2 checkpoint), not its own 0.1.
    assert lines["trial 1 (from trial 0 at step 2)"] == [(2, 0.5), (4, 0.6)]
    assert lines["trial 0"] == [(2, 0.5), (4, 0.7)]
    dropped = [line for line in val.get_lines() if line.get_linestyle() == ":"]
    assert [list(zip(d.get_xdata(), d.get_ydata(), strict=True)) for d in dropped] == [[(2, 0.1)]]  # its own, dotted
    copies = [line for line in val.get_lines() if line.get_marker() == "D"]
    assert [list(zip(c.get_xdata(), c.get_ydata(), strict=True)) for c in copies] == [[(2, 0.5)]]


def test_a_pbt_metric_vs_lr_places_each_validation_at_the_lr_it_trained_with(tmp_path):
    report = build_report(pbt_sweep(tmp_path))
    fig = pbt_metric_vs_param_figure(
        report, "val_reward_mean", "trainer.lr", job_schedules(report), trial_records(report)
    )
    ax = fig.axes[0]
    (dots,) = ax.collections
    placed = sorted((round(float(x), 6), y) for x, y in dots.get_offsets())
    # Trial 1's step-4 score at the lr it went on with after the copy, not at its first lr.
    assert placed == sorted([(LR0, 0.5), (LR0, 0.7), (LR1, 0.1), (LR1_AFTER, 0.6)])
    assert ax.get_xscale() == "log"
    assert fig.axes[1].get_ylabel() == "step of the validation"  # the colour bar says what the colours are


def test_the_schedules_figure_draws_the_lr_each_trial_trained_with_before_and_after_its_copy(tmp_path):
    report = build_report(pbt_sweep(tmp_path))
    schedules, records = job_schedules(report), trial_records(report)
    fig = schedules_figure(schedules, 4, trial_settings(report, schedules, records), {"lr": "trainer.lr"})
    lr = fig.axes[0]
    trial1 = next(p for p in lr.patches if p.get_label() == "trial 1")
    # its own lr before the copy (LR1; its schedule says trial 0's LR0 there), then the new one
    assert [round(v, 6) for v in trial1.get_data().values] == [LR1, LR1, LR1_AFTER, LR1_AFTER]
    assert lr.get_ylabel() == "trainer.lr"
    assert [t.get_text() for t in fig.axes[1].get_yticklabels()] == ["trial 0", "trial 1"]


def confirmed_sweep(tmp_path: Path) -> Path:
    """A grid search of 2 points x 2 seeds, then both points again with 3 fresh seeds each."""
    points = [{"trainer.lr": 1e-3}, {"trainer.lr": 3e-3}]
    search = plan_dict(points, seeds=[0, 1])
    sweep = make_sweep(tmp_path, search)
    for job, v in zip(search["jobs"], (0.5, 0.6, 0.8, 0.9), strict=True):  # point 1 looks best
        write_job(sweep, job, val=[v])
    stage = plan_dict(points, seeds=[2, 3, 4])
    stage_dir = SweepPaths(sweep).confirm.root
    stage_dir.mkdir()
    make_sweep(stage_dir, stage, name=".")
    for job, v in zip(stage["jobs"], (0.60, 0.62, 0.64, 0.40, 0.45, 0.50), strict=True):  # point 0 wins
        write_job(stage_dir, job, val=[v])
    return sweep


def test_the_confirmation_plot_shows_each_fresh_seed_their_mean_with_ci_and_the_searchs_value(tmp_path):
    report = build_report(confirmed_sweep(tmp_path))
    fig = confirmation_figure(report)
    ax = fig.axes[0]
    assert [t.get_text().split("\n")[0] for t in ax.get_yticklabels()] == ["point 0", "point 1"]  # the winner on top
    seeds = [c for c in ax.collections if c.get_label() == "a fresh seed's final value"]
    assert sorted(round(float(x), 2) for x, _ in seeds[0].get_offsets()) == [0.60, 0.62, 0.64]
    means = {c.get_label(): c for c in ax.containers}
    mean_line, _, _ = means["their mean, 95% CI"]
    assert mean_line.get_xdata()[0] == pytest.approx(0.62)
    search_line, _, _ = means["the search's value (± std over its seeds)"]
    assert search_line.get_xdata()[0] == pytest.approx(0.55)  # point 0's mean over the search's seeds
    assert "significant" in ax.get_title()
