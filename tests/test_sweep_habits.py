"""Hydra's and W&B's habits: sweep files by path through train.py, W&B sweep files as W&B's docs
write them, dry runs that check what the real run checks, and a help that answers fast."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from rllm_sweeps.sweep.parse_cli import parse_sweep
from rllm_sweeps.sweep.planner import plan_sweep
from rllm_sweeps.sweep.spec import SweepError

pytestmark = pytest.mark.slow  # runs train.py and the CLI as processes

REPO = Path(__file__).resolve().parents[1]
TRAIN = str(REPO / "train.py")

# W&B's docs' shape: program/command/project/entity, bayes, nested parameters, hyperband.
WANDB_BAYES = """\
program: train.py
method: bayes
metric:
  name: val_reward_mean
  goal: maximize
parameters:
  trainer:
    parameters:
      lr:
        distribution: log_uniform_values
        min: 0.0001
        max: 0.01
  rollout.n:
    values: [2, 4]
early_terminate:
  type: hyperband
  min_iter: 3
  eta: 2
command:
  - ${env}
  - python
  - ${program}
  - ${args_no_hyphens}
project: my-project
entity: my-team
run_cap: 8
"""


def train(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, TRAIN, *args], cwd=tmp_path, capture_output=True, text=True, timeout=timeout)


def sweep_file(tmp_path: Path, text: str, name: str = "wandb.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_wandb_bayes_file_dry_runs_by_path_through_train_py_as_optuna_tpe_with_wandbs_hyperband(tmp_path):
    path = sweep_file(tmp_path, WANDB_BAYES)
    proc = train(tmp_path, "-m", f"+sweep={path}", "hydra.sweeper.dry_run=true", "trainer.total_batches=2")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "method optuna, 8 points" in proc.stdout and "sampler tpe, pruner asha" in proc.stdout
    assert "program, command, project, entity ignored" in proc.stdout
    assert "trainer.lr=" in proc.stdout and "rollout.n=" in proc.stdout  # nested parameters
    assert "Traceback" not in proc.stderr


def test_wandb_hyperband_brackets_give_successive_halvings_first_rung():
    import yaml

    from rllm_sweeps.sweep.spec import SweepSpec

    data = yaml.safe_load(WANDB_BAYES)
    data["early_terminate"] = {"type": "hyperband", "max_iter": 27, "eta": 3, "s": 2}  # min_iter = 27 / 3**2
    spec = SweepSpec.from_dict(data, source="w&b")
    # W&B's hyperband stopping: one set of brackets, the top 1/eta go on (Optuna's successive halving)
    assert spec.optuna.pruner == "asha"
    assert spec.optuna.pruner_options == {"min_resource": 3, "reduction_factor": 3, "min_early_stopping_rate": 0}


@pytest.mark.parametrize("method", ["grid", "random"])
def test_early_termination_of_a_grid_or_random_sweep_runs_through_optuna_with_that_sampler(tmp_path, method):
    text = f"method: {method}\nrun_cap: 4\nparameters:\n  trainer.lr: {{values: [1.0e-3, 2.0e-3]}}\n"
    text += "early_terminate: {type: hyperband, min_iter: 2}\n"
    request = parse_sweep([f"+sweep={sweep_file(tmp_path, text)}"])
    assert request.spec.method == "optuna" and request.spec.optuna.sampler == method
    assert request.spec.optuna.pruner == "asha"


def test_wandb_fields_without_a_meaning_here_are_refused_each_with_what_to_write(tmp_path):
    text = "method: random\nmetric: {name: val_reward_mean, goal: maximize, target: 0.9}\n"
    text += "parameters:\n  trainer.lr: {min: 0.001, max: 0.01}\nearly_terminate: {type: envelope}\n"
    with pytest.raises(SweepError) as info:
        parse_sweep([f"+sweep={sweep_file(tmp_path, text)}"])
    messages = [str(i) for i in info.value.issues]
    assert any("metric.target" in m and "budget" in m for m in messages)
    assert any("early_terminate" in m and "hyperband" in m for m in messages)
    assert any("needs a budget" in m for m in messages)
    assert len(messages) == 3


def test_a_sweep_file_path_that_does_not_exist_is_one_line_rc_2(tmp_path):
    proc = train(tmp_path, "-m", f"+sweep={tmp_path / 'nope.yaml'}", "hydra.sweeper.dry_run=true")
    assert proc.returncode == 2 and "no sweep file" in proc.stderr and "Traceback" not in proc.stderr


def test_a_dry_run_refuses_what_the_real_run_would_parallel_0_and_a_metric_no_job_reports(tmp_path):
    proc = train(tmp_path, "-m", "trainer.lr=1e-3,2e-3", "hydra.sweeper.dry_run=true", "hydra.sweeper.parallel=0")
    assert proc.returncode == 2 and "hydra.sweeper.parallel=0" in proc.stderr, proc.stderr
    with pytest.raises(SweepError) as info:
        plan_sweep(["trainer.lr=1e-3,2e-3", "sweep.metric=val_rewrd_mean"], limit=2)
    assert "did you mean 'val_reward_mean'" in str(info.value)


def test_help_lists_every_sweep_setting_and_the_dry_run(tmp_path):
    from omegaconf import OmegaConf

    from rllm_sweeps.config.compose import CONF_DIR

    proc = train(tmp_path, "--help")
    assert proc.returncode == 0
    settings = [k for k in OmegaConf.load(CONF_DIR / "config.yaml").sweep if k != "optuna"]
    for key in settings:
        assert f"sweep.{key} " in proc.stdout, key
    assert "hydra.sweeper.dry_run=true" in proc.stdout and "+sweep=PATH.yaml" in proc.stdout


@pytest.mark.timed
@pytest.mark.parametrize(
    "command",
    [["rllm-sweeps", "keys"], ["train.py", "--help"], ["rllm-sweeps", "validate", "trainer.lr=1e-4"]],
    ids=" ".join,
)
def test_the_lookup_commands_answer_in_under_3_seconds(tmp_path, command):
    exe = [str(Path(sys.executable).parent / "rllm-sweeps")] if command[0] == "rllm-sweeps" else [sys.executable, TRAIN]
    argv = [*exe, *command[1:]]
    subprocess.run(argv, cwd=tmp_path, capture_output=True, timeout=120)  # caches filled (a fresh machine's first run)
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 3.0, f"{' '.join(command)} took {elapsed:.2f}s"
    assert "<lambda>" not in proc.stdout


def test_early_termination_of_a_random_sweep_without_a_run_cap_says_to_add_one_a_grid_runs_whole(tmp_path):
    text = "method: random\nparameters:\n  trainer.lr: {values: [1.0e-3, 2.0e-3]}\n"
    text += "early_terminate: {type: hyperband, min_iter: 2}\n"
    with pytest.raises(SweepError) as info:
        parse_sweep([f"+sweep={sweep_file(tmp_path, text)}"])
    (issue,) = info.value.issues
    assert "needs a budget" in str(issue) and "run_cap" in str(issue)
    grid = parse_sweep([f"+sweep={sweep_file(tmp_path, text.replace('random', 'grid'), 'grid.yaml')}"]).spec
    assert grid.budget == 2 and grid.optuna.sampler == "grid"  # its size: every point once
