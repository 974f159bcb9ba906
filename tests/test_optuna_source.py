"""The Optuna search's decisions (sweep/optuna_search.py): what it tells the study for each job
outcome, and how a rerun settles what a dead sweeper left. A real study on a real journal file;
the jobs' results are written by the test instead of trained, so each decision takes milliseconds."""

from __future__ import annotations

import optuna
import pytest

from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import JobStatus
from rllm_sweeps.sweep.optuna_search import OptunaSource
from rllm_sweeps.sweep.parse_cli import parse_sweep

TrialState = optuna.trial.TrialState


def make_source(tmp_path, budget: int = 3, *extra: str) -> OptunaSource:
    request = parse_sweep(
        [
            "sweep.method=optuna",
            f"sweep.budget={budget}",
            "sweep.optuna.sampler=random",
            "trainer.lr=interval(0.0001,0.01)",
            "trainer.total_batches=2",
            *extra,
        ]
    )
    return OptunaSource(request.spec, list(request.base_overrides), tmp_path / "sweep")


def finish(source: OptunaSource, run, status: str = JobStatus.COMPLETED, value: float | None = 0.5, **fields) -> None:
    """What the job would have written, then the runner's hand-over of its end."""
    final = {"val_reward_mean": value} if value is not None else {}
    result = JobResult(status=status, config_hash=run.job.config_hash, final=final, steps=2, **fields)
    result.write(run.job_dir)
    source.on_result(run, result)


def states(source: OptunaSource) -> list[TrialState]:
    return [t.state for t in source.study.get_trials(deepcopy=False)]


def test_completed_jobs_tell_their_metric_and_the_budget_counts_finished_trials(tmp_path):
    source = make_source(tmp_path, budget=2)
    first, second = source.next_jobs(5)  # at most the budget in flight
    assert source.next_jobs(1) == []
    finish(source, first, value=0.25)
    finish(source, second, value=0.75)
    assert states(source) == [TrialState.COMPLETE, TrialState.COMPLETE]
    assert sorted(t.value for t in source.study.trials) == [0.25, 0.75]
    assert source.exhausted()
    source.close()


def test_a_failed_job_fails_its_trial_which_a_new_trial_replaces(tmp_path):
    source = make_source(tmp_path, budget=1)
    (run,) = source.next_jobs(1)
    finish(source, run, status=JobStatus.FAILED, value=None, error="Traceback ...\nZeroDivisionError: bug")
    assert states(source) == [TrialState.FAIL]
    assert "ZeroDivisionError" in source.study.trials[0].user_attrs["failed_because"]
    assert not source.exhausted() and len(source.next_jobs(1)) == 1  # failed trials do not count
    source.close()


def test_a_pruned_job_prunes_its_trial_and_counts_against_the_budget(tmp_path):
    source = make_source(tmp_path, budget=1)
    (run,) = source.next_jobs(1)
    finish(source, run, status=JobStatus.PRUNED)
    assert states(source) == [TrialState.PRUNED] and source.exhausted()
    source.close()


def test_a_metric_no_job_reports_stops_the_search_at_once(tmp_path):
    source = make_source(tmp_path, budget=3)
    (run,) = source.next_jobs(1)
    finish(source, run, status=JobStatus.FAILED, value=None, error="MetricNotReported: val_judge_acc is not reported")
    assert source.fatal and source.stopped and source.exhausted()
    source.close()


@pytest.mark.parametrize("jobs_finished", [True, False], ids=["jobs-had-ended", "jobs-died-with-it"])
def test_a_rerun_settles_the_trials_a_dead_sweeper_left_running(tmp_path, jobs_finished):
    source = make_source(tmp_path, budget=2)
    runs = source.next_jobs(2)
    for run in runs:  # the jobs end, but the sweeper dies before it can tell the study
        if jobs_finished:
            JobResult(
                status=JobStatus.COMPLETED, config_hash=run.job.config_hash, final={"val_reward_mean": 0.5}
            ).write(run.job_dir)
    # (the dead sweeper's lock on the sweep directory, sweep/sweeper_lock.py, goes with it)
    again = make_source(tmp_path, budget=2)
    expected = TrialState.COMPLETE if jobs_finished else TrialState.FAIL
    assert states(again)[:2] == [expected, expected]
    assert len(again.done_before()) == (2 if jobs_finished else 0)
    assert again.exhausted() == jobs_finished
    again.close()
