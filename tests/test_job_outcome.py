"""A job's last console line: what a user reads first when the run ends."""

from __future__ import annotations

import pytest

from rllm_sweeps.job.outcome import print_outcome
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import JobStatus


def completed(*rewards: float) -> JobResult:
    validations = [{"step": 2 * i, "val_reward_mean": r} for i, r in enumerate(rewards)]
    return JobResult(JobStatus.COMPLETED, "h", steps=4, final=validations[-1], validations=validations, wall_time_s=9.0)


def test_a_single_job_whose_reward_never_left_0_says_so_on_its_final_line(capsys: pytest.CaptureFixture[str]):
    print_outcome(completed(0.0, 0.0, 0.0))
    line = capsys.readouterr().out.strip()
    assert line.startswith("done: 4 steps in 9s, final val_reward_mean=0.0000; note: ")
    assert "was 0 in every validation (3): it never left 0" in line


def test_a_single_job_whose_reward_moved_says_nothing_more(capsys: pytest.CaptureFixture[str]):
    print_outcome(completed(0.0, 0.25))
    assert capsys.readouterr().out.strip() == "done: 4 steps in 9s, final val_reward_mean=0.2500"


def test_a_validation_line_of_a_workflow_with_several_roles_shows_each_roles_accuracy():
    import io

    from rllm_sweeps.trackers import ConsoleProgress

    out = io.StringIO()
    console = ConsoleProgress(total_steps=4, stream=out)
    console.log({"val_reward_mean": 0.5, "val_judge_acc": 0.25, "val_solver_acc": 0.75, "val_turns_mean": 3.0}, 2)
    console.log({"val_reward_mean": 0.5, "val_solver_acc": 0.5}, 4)  # one role: val_reward says it
    assert out.getvalue().splitlines() == [
        "[val]  step    2/4  val_reward 0.500  judge_acc 0.250  solver_acc 0.750",
        "[val]  step    4/4  val_reward 0.500",
    ]
