"""Where a job run by hand works: a directory named after its command (as Hydra's
`override_dirname`), so another command never lands in a finished job's directory and the same
command finds its own again (a rerun resumes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from rllm_sweeps.config.native import register
from rllm_sweeps.records.layout import NO_OVERRIDES_RUN, run_name

REPO = Path(__file__).resolve().parents[1]


def test_a_run_name_is_the_overrides_as_hydra_writes_them_and_none_is_defaults():
    assert run_name("") == NO_OVERRIDES_RUN
    assert run_name("rollout.n=8,trainer.lr=3e-3") == "rollout.n=8,trainer.lr=3e-3"


def test_a_run_name_never_holds_a_path_separator_and_stays_short_and_distinct():
    slash = run_name("model.path=/data/models/a")
    assert "/" not in slash and slash != run_name("model.path=_data_models_a")
    long = "trainer.lr=" + "1" * 300
    assert len(run_name(long)) <= 80 and run_name(long) != run_name(long + "2")


def hand_run_dir(*overrides: str) -> str:
    """hydra.run.dir as train.py resolves it for this command (Hydra's own composition)."""
    register()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(str(REPO / "conf"), version_base=None):
            cfg = compose("config", overrides=list(overrides), return_hydra_config=True)
            return str(cfg.hydra.run.dir)
    finally:
        GlobalHydra.instance().clear()


@pytest.mark.slow
def test_each_command_by_hand_gets_its_own_directory_and_the_same_command_finds_it_again():
    default = hand_run_dir()
    assert default == f"outputs/rllm-sweeps/default/{NO_OVERRIDES_RUN}"
    mine = hand_run_dir("trainer.lr=3e-3", "rollout.n=8")
    assert mine == "outputs/rllm-sweeps/default/rollout.n=8,trainer.lr=3e-3"
    assert hand_run_dir("rollout.n=8", "trainer.lr=3e-3") == mine  # the same command, in another order
    assert hand_run_dir("workflow=multi_turn") not in (default, mine)
    # The experiment and project name the place; resume_mode=disable starts over in the same one.
    assert hand_run_dir("trainer.experiment_name=clob", "trainer.lr=3e-3") == "outputs/rllm-sweeps/clob/trainer.lr=3e-3"
    assert hand_run_dir("trainer.lr=3e-3", "rollout.n=8", "trainer.resume_mode=disable") == mine
