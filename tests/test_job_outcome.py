"""A job's last console line: what a user reads first when the run ends."""

from __future__ import annotations

import pytest

from rllm_sweeps.job import _print_outcome
from rllm_sweeps.results import COMPLETED, JobResult


def completed(*rewards: float) -> JobResult:
    validations = [{"step": 2 * i, "val_reward_mean": r} for i, r in enumerate(rewards)]
    return JobResult(COMPLETED, "h", steps=4, final=validations[-1], validations=validations, wall_time_s=9.0)


def test_a_single_job_whose_reward_never_left_0_says_so_on_its_final_line(capsys: pytest.CaptureFixture[str]):
    _print_outcome(completed(0.0, 0.0, 0.0))
    line = capsys.readouterr().out.strip()
    assert line.startswith("done: 4 steps in 9s, final val_reward_mean=0.0000; note: ")
    assert "was 0 in every validation (3): it never left 0" in line


def test_a_single_job_whose_reward_moved_says_nothing_more(capsys: pytest.CaptureFixture[str]):
    _print_outcome(completed(0.0, 0.25))
    assert capsys.readouterr().out.strip() == "done: 4 steps in 9s, final val_reward_mean=0.2500"
