"""PBT's shared board of the trials' latest scores (rllm_sweeps/pbt/board.py)."""

from __future__ import annotations

from pathlib import Path

from rllm_sweeps.pbt.board import PopulationBoard
from rllm_sweeps.pbt.decision import Exploit, PbtSettings, TrialState, decide


def test_each_trial_sees_everyones_latest_report(tmp_path: Path) -> None:
    board = PopulationBoard(tmp_path / "board")
    board.report(TrialState(0, 3, 0.2, {"lr": 1e-4}))
    board.report(TrialState(1, 3, 0.6, {"lr": 3e-4}))
    board.report(TrialState(1, 6, 0.7, {"lr": 3e-4}))
    board.report(TrialState(1, 3, 0.1, {"lr": 3e-4}))  # a late, older report does not go back in time
    assert board.states() == [TrialState(0, 3, 0.2, {"lr": 1e-4}), TrialState(1, 6, 0.7, {"lr": 3e-4})]
    assert not list((tmp_path / "board").glob(".*"))  # no temporary file left behind


def test_a_trial_decides_against_the_board_without_waiting_for_stragglers(tmp_path: Path) -> None:
    board = PopulationBoard(tmp_path)
    board.report(TrialState(1, 6, 0.9, {"lr": 3e-4}))
    board.report(TrialState(2, 3, 0.5, {"lr": 2e-4}))  # a straggler, one interval behind
    me = TrialState(0, 6, 0.1, {"lr": 1e-4})
    board.report(me)
    decision = decide(me, board.states(), PbtSettings(population=4, interval=3, quantile=0.34), total_steps=12)
    assert decision == Exploit(source_trial=1, source_step=6, settings={"lr": 3e-4})
