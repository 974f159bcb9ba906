"""The confirmation stage (`sweep.confirm`), planned and reported from a sweep directory's records:
the top points of the search again with fresh seeds, ranked by mean with a confidence interval,
and `best` meaning the confirmed best. Records written here stand in for trained jobs (the
training is tests/test_pbt_sweep.py's, which confirms a PBT search end to end)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rllm_sweeps.records.layout import SweepPaths
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.schedule import Schedule, Segment, read_schedule, write_schedule
from rllm_sweeps.report import build_report, render_table
from rllm_sweeps.sweep import parse_sweep, plan_request
from rllm_sweeps.sweep.confirm import ConfirmSource, plan_stage
from rllm_sweeps.sweep.runner import job_dir_for

pytestmark = pytest.mark.slow  # composes the real config tree


def finish(sweep_dir: Path, jobs, values: dict[int, float]) -> None:  # noqa: ANN001
    """Each planned job's record, as a completed job with its final val_reward_mean writes it."""
    for job in jobs:
        final = {"val_reward_mean": values[job.index]}
        JobResult(status="completed", config_hash=job.config_hash, steps=2, final=final).write(
            job_dir_for(sweep_dir, job)
        )


def test_the_top_points_run_again_with_fresh_seeds_and_best_is_the_confirmed_best(tmp_path: Path) -> None:
    confirm = ["sweep.confirm.top=2", "sweep.confirm.seeds=3"]
    request = parse_sweep(["trainer.lr=1e-4,1e-3,3e-3", "sweep.seeds=[0,1]", *confirm])
    plan = plan_request(request, validate=False)
    plan.write(tmp_path)
    # The search: point 2 (lr 3e-3) looks best (0.7), point 1 second (0.55), point 0 last.
    finish(tmp_path, plan.jobs, {0: 0.1, 1: 0.1, 2: 0.5, 3: 0.6, 4: 0.7, 5: 0.7})
    write_schedule(job_dir_for(tmp_path, plan.jobs[4]), Schedule((Segment(0, {"lr": 3e-3}),)))

    stage = plan_stage(plan.spec, plan.base_overrides, tmp_path)
    jobs = list(stage.plan.jobs)
    assert [(j.params["trainer.lr"], j.seed) for j in jobs] == [(3e-3, s) for s in (2, 3, 4)] + [
        (1e-3, s) for s in (2, 3, 4)
    ]  # best first; seeds no search job used
    assert all(f"trainer.seed={j.seed}" in j.overrides for j in jobs)
    assert [j.point_id for j in jobs[:3]] == [plan.jobs[4].point_id] * 3  # the same config, new seeds
    # A search job's schedule (a PBT trial's) goes with its point's replicates.
    stage_dir = SweepPaths(tmp_path).confirm.root
    stage.plan.write(stage_dir)
    ConfirmSource(stage, stage_dir)
    assert all(read_schedule(job_dir_for(stage_dir, j)).segments for j in jobs[:3])
    assert not any(read_schedule(job_dir_for(stage_dir, j)).segments for j in jobs[3:])

    # With fresh seeds the search's runner-up wins clearly: the confirmed best is point 1.
    finish(stage_dir, jobs, {0: 0.30, 1: 0.35, 2: 0.32, 3: 0.61, 4: 0.60, 5: 0.63})
    report = build_report(tmp_path)
    c = report.confirmation
    assert c is not None and [r.name for r in c.stats.ranking] == ["point 1", "point 2"]
    assert c.winner.overrides == ("trainer.lr=0.001",) and c.stats.significant
    assert c.stats.ranking[0].ci[0] < 0.61333 < c.stats.ranking[0].ci[1]
    text = render_table(report)
    assert "best val_reward_mean (maximize), confirmed: 0.6133" in text
    assert "point 1's lead over point 2 is significant" in text
    assert "the search's best val_reward_mean (maximize): 0.7 ± 0 (n=2) at point 2: trainer.lr=0.003" in text
    # The best model: of the confirmed point's jobs (the stage's and the search's), the best final one.
    best = report.best_model
    assert best.job_dir.resolve() == job_dir_for(stage_dir, jobs[5]).resolve() and best.value == 0.63
    assert best.why == "the confirmed best (point 1) by val_reward_mean"
    assert best.adapter is None and "best model: none (not exported)" in text  # these records exported none


def test_the_dry_run_budgets_the_confirmation_jobs_and_bad_settings_are_refused() -> None:
    request = parse_sweep(["trainer.lr=1e-4,1e-3,3e-3", "sweep.confirm.top=2", "sweep.confirm.seeds=3"])
    plan = plan_request(request, limit=3, validate=False)
    assert "Then confirmation: the top 2 points x 3 fresh seeds = 6 more jobs" in plan.render()
    from rllm_sweeps.sweep.spec import SweepError

    with pytest.raises(SweepError) as err:
        parse_sweep(["trainer.lr=1e-4,1e-3", "sweep.seeds=[1,2]", "sweep.confirm.seeds=[2,5]", "sweep.confirm.top=0"])
    assert "confirm.top is the number of best points re-run, an integer >= 1; got 0" in str(err.value)
    assert "confirm.seeds [2] are seeds of the search: give fresh ones" in str(err.value)
