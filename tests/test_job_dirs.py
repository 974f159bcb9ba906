"""Where a job run by hand works: a directory named after its command (as Hydra's
`override_dirname`), so another command never lands in a finished job's directory and the same
command finds its own again (a rerun resumes)."""

from __future__ import annotations

import os
import subprocess
import sys
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
    # An experiment name is SkyRL's run name, a '/' included: its directory is one safe name under the project.
    for name in ("gsm8k_Qwen/Qwen3-0.6B", "../../../escape"):
        place = hand_run_dir(f"trainer.experiment_name={name}")
        assert place.startswith("outputs/rllm-sweeps/") and place.count("/") == 3 and ".." not in place.split("/")


def as_user_without_override() -> list[str]:
    """A command prefix under which a read-only directory is read-only: root bypasses permission
    bits through CAP_DAC_OVERRIDE, so root's commands run without it (as in a user's shell)."""
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


@pytest.mark.slow
def test_a_read_only_place_is_one_line_naming_it_rc_2_for_a_job_and_a_sweep(tmp_path):
    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o555)
    env = {**os.environ, "PYTHONPATH": str(REPO), "RLLM_SWEEPS_WARM_SERVER": "off"}
    train = [*as_user_without_override(), sys.executable, str(REPO / "train.py")]
    commands = {
        "job": [*train, f"hydra.run.dir={read_only / 'job'}"],
        "sweep": [*train, "-m", "trainer.lr=1e-3,2e-3", f"hydra.sweep.dir={read_only / 'sweep'}"],
    }
    for what, command in commands.items():
        proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, (what, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr and "PermissionError" not in proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("error: permission denied:") and f"{read_only} is not writable" in line
    assert not list(read_only.iterdir())
