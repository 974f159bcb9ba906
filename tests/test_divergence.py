"""A non-finite loss, gradient or metric fails the job as `diverged` where it first appears
(training/divergence.py): never a completed run, never retried, a failed Optuna trial, and a PBT
trial no other copies. The decisions in milliseconds; the job and its sweep in test_sweep_run.py."""

from __future__ import annotations

import numpy as np
import optuna
import pytest

from rllm_sweeps.failures import failure_kind
from rllm_sweeps.pbt.board import PopulationBoard
from rllm_sweeps.pbt.decision import Continue, Exploit, PbtSettings, TrialState, decide
from rllm_sweeps.pbt.member import PbtMember
from rllm_sweeps.pbt.membership import PbtMembership, write_membership
from rllm_sweeps.records.plan import Metric
from rllm_sweeps.records.result import Divergence, JobResult
from rllm_sweeps.records.status import DIVERGED_FIX, NON_FINITE_REWARD_FIX, FailureKind, JobStatus
from rllm_sweeps.training.divergence import Diverged, check_finite, first_non_finite


def test_the_first_non_finite_number_is_found_in_order_whatever_its_float_type():
    quantities = [("steps", 3), ("loss", 0.5), ("note", None), ("grad_norm", np.float32("nan")), ("kl", float("inf"))]
    assert first_non_finite(quantities) == ("grad_norm", pytest.approx(float("nan"), nan_ok=True))
    assert first_non_finite([("loss", np.float64(-1.0)), ("tokens", 12)]) is None
    with pytest.raises(Diverged) as info:
        check_finite({"is_ratio_mean": 1.0, "loss": float("-inf")}.items(), step=7, where="mini batch 2 of 8")
    assert info.value.divergence == Divergence(7, "loss", "-inf", "mini batch 2 of 8")
    assert str(info.value) == f"training diverged at step 7 (mini batch 2 of 8): loss is -inf; {DIVERGED_FIX}"
    with pytest.raises(Diverged) as info:  # a reward is the reward function's to fix, not the optimizer's
        check_finite([("reward", 0.5), ("reward", float("nan"))], step=2, where="the rewards")
    assert str(info.value).endswith(NON_FINITE_REWARD_FIX)
    check_finite([("loss", 0.0), ("grad_norm", None)], step=1, where="mini batch 1 of 1")  # finite: nothing


def test_a_diverged_job_is_a_failure_of_its_own_kind_that_is_not_retried_and_its_record_round_trips(tmp_path):
    err = Diverged(Divergence(3, "grad_norm", "nan", "mini batch 2 of 8"))
    assert failure_kind(err) is FailureKind.DIVERGED
    assert (
        FailureKind.DIVERGED.is_user and not FailureKind.DIVERGED.is_infrastructure
    )  # the same settings diverge again
    result = JobResult(JobStatus.FAILED, "abc", failure_kind=FailureKind.DIVERGED, divergence=err.divergence)
    result.write(tmp_path)
    back = JobResult.read(tmp_path)
    assert back.divergence == err.divergence and back.failure_kind is FailureKind.DIVERGED
    assert '"value": "nan"' in (tmp_path / "result.json").read_text()  # JSON, not Python's NaN


def test_a_diverged_pbt_trial_leaves_the_board_and_no_trial_exploits_it(tmp_path):
    board_dir = tmp_path / "board"
    settings = PbtSettings(population=4, interval=2, quantile=0.25)
    total = 4  # the trials' steps: step 2 is past the default burn-in (half of them)
    trials = {k: tmp_path / f"trial{k}" for k in range(4)}
    for k, job_dir in trials.items():
        job_dir.mkdir()
        write_membership(job_dir, PbtMembership(k, board_dir, trials, settings, Metric(), ("trainer.lr",)))
    board = PopulationBoard(board_dir)
    for k, score in enumerate([0.9, 0.5, 0.4, 0.1]):
        board.report(TrialState(k, 2, score, {"trainer.lr": 1e-3}))
    worst = TrialState(3, 2, 0.1, {"trainer.lr": 1e-3})
    assert decide(worst, board.states(), settings, total) == Exploit(0, 2, {"trainer.lr": 1e-3})  # the best so far
    PbtMember.for_job(trials[0], None).withdraw(step=3)  # trial 0 diverges at step 3
    assert board.read(0) == TrialState(0, 3, None)
    decision = decide(worst, board.states(), settings, total)
    assert isinstance(decision, Exploit) and decision.source_trial == 1  # the best of those still training
    assert decide(TrialState(0, 4, None), board.states(), settings, total) == Continue()


def test_a_diverged_job_fails_its_optuna_trial_with_the_reason(tmp_path):
    from test_optuna_source import finish, make_source, states

    source = make_source(tmp_path, budget=1)
    (run,) = source.next_jobs(1)
    divergence = Divergence(1, "loss", "nan", "mini batch 2 of 8")
    finish(source, run, status=JobStatus.FAILED, value=None, failure_kind=FailureKind.DIVERGED, divergence=divergence,
           error=divergence.message())  # fmt: skip
    assert states(source) == [optuna.trial.TrialState.FAIL]
    assert "training diverged at step 1" in source.study.trials[0].user_attrs["failed_because"]
    source.close()
