"""Workflow settings are validated with the rest of the config, before anything is launched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rllm_sweeps.config.load import load_config
from rllm_sweeps.problems import ConfigError

pytestmark = pytest.mark.slow  # composes the real config tree; runs train.py

REPO = Path(__file__).resolve().parents[1]


def quiet(_: str) -> None:
    pass


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["workflow=solver_judge", "workflow.n_solutions=0"],
            "workflow.n_solutions=0 is invalid: expected an integer >= 1",
        ),
        (["workflow=solver_judge", "workflow.role_estimators.judge=gae"], "workflow.role_estimators.judge='gae'"),
        (
            ["workflow=solver_judge", "+workflow.role_estimators.jduge=rloo"],
            "has no role 'jduge' (its roles: solver, judge)",
        ),
        (["workflow=multi_turn", "workflow.env=gsm9k"], "not in skyrl-gym's registry (aime, gsm8k,"),
        (["workflow=multi_turn", "workflow.env=rllm_sweeps.tasks.toy:letters_reward"], "not a skyrl_gym BaseTextEnv"),
        (["workflow.max_turns=3"], "the single-turn workflow makes one call"),
        (["workflow.n_solutions=2"], "unknown key 'workflow.n_solutions'"),  # a solver_judge setting
        (["workflow.class=nowhere:Flow"], "workflow.class='nowhere:Flow': cannot import"),
    ],
    ids=["n_solutions", "estimator", "role", "env-id", "env-class", "max_turns", "other-workflows-key", "class"],
)
def test_a_bad_workflow_setting_is_refused_naming_the_key(overrides, message):
    with pytest.raises(ConfigError) as err:
        load_config(overrides, notify=quiet)
    assert message in str(err.value)


def test_skyrls_max_turns_key_is_the_workflows():
    cfg = load_config(["workflow=multi_turn", "generator.max_turns=3"], notify=quiet)
    assert cfg.workflow.max_turns == 3 and cfg.skyrl.train.generator.max_turns == 3


def test_train_py_exits_2_on_a_bad_workflow_setting_before_any_job_starts(tmp_path):
    proc = subprocess.run(
        [sys.executable, "train.py", "workflow=solver_judge", "workflow.n_solutions=0", f"hydra.run.dir={tmp_path}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "workflow.n_solutions=0 is invalid" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "result.json").exists()
