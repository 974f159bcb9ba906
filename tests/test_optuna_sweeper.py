"""hydra-optuna-sweeper's `hydra/sweeper=optuna`, as its users type it and keep it in their configs,
runs real trials on this project's Optuna search; a field that cannot be honoured is refused by name
before anything is written (docs/OPTUNA.md, "Coming from hydra-optuna-sweeper")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from rllm_sweeps.records.layout import SweepPaths
from rllm_sweeps.study import open_storage

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # starts train.py
QUICK = ["trainer.total_batches=2", "trainer.val_before_train=false", "trainer.test_freq=0", "task.dataset.val_size=8"]
QUICK += ["data.train_batch_size=8"]
SEARCH = """# @package _global_
defaults:
  - override /hydra/sweeper: optuna
hydra:
  sweeper:
    sampler:
      _target_: optuna.samplers.TPESampler
      seed: 123
      n_startup_trials: 2
    direction: maximize
    n_trials: 4
    n_jobs: 2
    params:
      rollout.n: range(2, 5, step=2)
      trainer.lr: choice(1e-3, 3e-3)
"""


def train(cwd: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "train.py"), "-m", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), "RLLM_SWEEPS_WARM_SERVER": "off"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def study_of(sweep_dir: Path) -> optuna.Study:
    return optuna.load_study(study_name=sweep_dir.name, storage=open_storage(str(sweep_dir / "optuna.journal")))


def finished(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return [t for t in study.get_trials() if t.state.is_finished()]


def test_hydra_optuna_sweepers_command_runs_four_trials_on_the_products_optuna_search(tmp_path):
    sweep_dir = tmp_path / "lr_search"
    proc = train(
        tmp_path,
        "hydra/sweeper=optuna",
        "hydra.sweeper.n_trials=4",
        "hydra.sweeper.direction=maximize",
        "hydra.sweeper.params.trainer.lr=tag(log, interval(1e-5, 1e-2))",
        *QUICK,
        "rollout.n=4",
        f"hydra.sweep.dir={sweep_dir}",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    note = "hydra/sweeper=optuna: the search maximizes val_reward_mean, the product's default metric"
    assert note in proc.stdout  # said, and kept in the plan
    assert any(n.startswith(note) for n in json.loads((sweep_dir / "plan.json").read_text())["notes"])
    study = study_of(sweep_dir)
    trials = finished(study)
    assert len(trials) == 4 and all(t.state is optuna.trial.TrialState.COMPLETE for t in trials)
    assert study.direction is optuna.study.StudyDirection.MAXIMIZE
    assert {repr(t.distributions["trainer.lr"]) for t in trials} == {
        repr(optuna.distributions.FloatDistribution(1e-5, 1e-2, log=True))
    }


def test_the_same_search_in_a_users_config_runs_by_config_dir(tmp_path):
    user_dir = tmp_path / "my_conf"
    (user_dir / "experiment").mkdir(parents=True)
    (user_dir / "experiment" / "search.yaml").write_text(SEARCH)
    sweep_dir = tmp_path / "search"
    proc = train(tmp_path, "--config-dir", str(user_dir), "+experiment=search", *QUICK, f"hydra.sweep.dir={sweep_dir}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    study = study_of(sweep_dir)
    trials = finished(study)
    assert len(trials) == 4 and study.direction is optuna.study.StudyDirection.MAXIMIZE
    assert {t.params["rollout.n"] for t in trials} <= {2, 4}
    assert {t.params["trainer.lr"] for t in trials} <= {1e-3, 3e-3}
    plan = json.loads((sweep_dir / "plan.json").read_text())
    assert (plan["spec"]["seed"], plan["spec"]["parallel"], plan["spec"]["budget"]) == (123, 2, 4)
    assert plan["spec"]["optuna"]["sampler"] == "tpe"
    assert plan["spec"]["optuna"]["sampler_options"] == {"n_startup_trials": 2}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["hydra.sweeper.custom_search_space=my.module.space"], "error: hydra.sweeper.custom_search_space: not suppor"),
        (["hydra/sweeper/sampler=motpe"], "error: hydra.sweeper.sampler._target_=optuna.samplers.MOTPESampler: Optu"),
        (["+hydra.sweeper.search_space={x: {type: float}}"], "error: hydra.sweeper.search_space: not supported by"),
    ],
)
def test_a_field_that_cannot_be_honoured_is_refused_by_name_with_nothing_written(tmp_path, args, message):
    sweep_dir = tmp_path / "sweep"
    proc = train(tmp_path, "hydra/sweeper=optuna", *args, "trainer.lr=1e-3,3e-3", f"hydra.sweep.dir={sweep_dir}")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(message) and line.endswith("nothing was planned or run")
    assert not sweep_dir.exists()


def test_a_users_primary_config_chooses_optuna_and_brings_its_own_search_path(tmp_path):
    """hydra-optuna-sweeper's docs' form: `override hydra/sweeper: optuna` in the primary config, the
    sampler's arguments over its default (tpe), a task found through the primary's hydra.searchpath."""
    mine, more = tmp_path / "my_conf", tmp_path / "more_conf"
    (more / "task").mkdir(parents=True)
    (more / "task" / "other.yaml").write_text("# @package task\ndefaults:\n  - toy_letters\n  - _self_\nname: other\n")
    mine.mkdir()
    (mine / "search.yaml").write_text(
        "defaults:\n  - config\n  - override hydra/sweeper: optuna\n  - _self_\nhydra:\n"
        f"  searchpath:\n    - file://{more}\n  sweeper:\n    sampler:\n      seed: 7\n      n_startup_trials: 3\n"
        "    direction: maximize\n    n_trials: 3\n    params:\n      trainer.lr: interval(1e-4, 1e-2)\n"
    )
    sweep_dir = tmp_path / "sweep"
    args = ["--config-dir", str(mine), "--config-name", "search", "task=other", "hydra.sweeper.dry_run=true"]
    proc = train(tmp_path, *args, f"hydra.sweep.dir={sweep_dir}", timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    plan = json.loads(SweepPaths(sweep_dir).dry_run_plan.read_text())
    assert plan["base_overrides"] == ["task=other"]
    assert (plan["spec"]["method"], plan["spec"]["budget"], plan["spec"]["seed"]) == ("optuna", 3, 7)
    assert plan["spec"]["optuna"]["sampler_options"] == {"n_startup_trials": 3}
    assert plan["spec"]["parameters"]["trainer.lr"] == {"distribution": "uniform", "min": 1e-4, "max": 1e-2}


def test_the_plugins_sampler_group_picks_the_sampler(tmp_path):
    sweep_dir = tmp_path / "sweep"
    args = ["hydra/sweeper=optuna", "hydra/sweeper/sampler=random", "hydra.sweeper.n_trials=2", "trainer.lr=1e-3,3e-3"]
    proc = train(tmp_path, *args, "hydra.sweeper.dry_run=true", f"hydra.sweep.dir={sweep_dir}", timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert json.loads(SweepPaths(sweep_dir).dry_run_plan.read_text())["spec"]["optuna"]["sampler"] == "random"
