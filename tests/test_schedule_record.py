"""A job's schedule record (rllm_sweeps/records/schedule.py): settings per step range, parents."""

from __future__ import annotations

import pytest
from config_problems import quiet

from rllm_sweeps.config.load import load_config
from rllm_sweeps.records.schedule import Parent, Schedule, Segment, read_schedule, write_schedule
from rllm_sweeps.training.settings import LoopSettings


def _schedule() -> Schedule:
    return Schedule(
        (
            Segment(0, {"lr": 1e-4, "kl_beta": 0.01}),
            Segment(3, {"lr": 2e-4}, Parent(trial=2, step=3)),
            Segment(6, {"kl_beta": 0.02}, Parent(trial=1, step=6)),
        )
    )


def test_the_settings_in_force_at_a_step_are_the_latest_segments() -> None:
    schedule = _schedule()
    assert schedule.settings_at(2) == {"lr": 1e-4, "kl_beta": 0.01}
    assert schedule.settings_at(3) == {"lr": 2e-4, "kl_beta": 0.01}
    assert schedule.settings_at(7) == {"lr": 2e-4, "kl_beta": 0.02}
    assert schedule.parents == ((3, Parent(2, 3)), (6, Parent(1, 6)))


def test_a_schedule_applies_to_the_loops_settings_at_a_step() -> None:
    loop = LoopSettings.from_config(load_config([], notify=quiet))
    applied = _schedule().apply(loop, 4)
    assert (applied.lr, applied.kl_beta) == (2e-4, 0.01)
    assert applied.temperature == loop.temperature


def test_a_new_segment_replaces_those_from_its_step_on() -> None:
    schedule = _schedule().then(Segment(3, {"lr": 5e-5}, Parent(0, 3)))
    assert [s.start_step for s in schedule.segments] == [0, 3]
    assert schedule.settings_at(9) == {"lr": 5e-5, "kl_beta": 0.01}


def test_a_schedule_refuses_a_setting_the_loop_cannot_change_mid_run() -> None:
    with pytest.raises(ValueError, match="cannot change train_batch_size"):
        Schedule((Segment(0, {"train_batch_size": 8}),))
    with pytest.raises(ValueError, match="increasing steps"):
        Schedule((Segment(3, {"lr": 1e-4}), Segment(3, {"lr": 2e-4})))


def test_a_schedule_survives_its_file(tmp_path) -> None:  # noqa: ANN001
    assert read_schedule(tmp_path) == Schedule()
    write_schedule(tmp_path, _schedule())
    assert read_schedule(tmp_path) == _schedule()
    assert not list(tmp_path.glob(".*.tmp"))
