"""Users' own configs as Hydra users bring them (`--config-dir`, `hydra.searchpath`, experiment
overlays, their own `hydra/launcher`, `hydra.sweeper.params`) reach every stage through one
composition: the pre-flight check, `--cfg job`, the dry run's plan, a sweep's jobs and a single job
(docs/CONFIG.md, "Your own configs")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # starts train.py
QUICK = ["trainer.total_batches=2", "trainer.val_before_train=false", "trainer.test_freq=0", "task.dataset.val_size=8"]
QUICK += ["data.train_batch_size=8"]
DRY = "hydra.sweeper.dry_run=true"


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    """A directory of the user's own configs: a task, an experiment overlay, a launcher, a sweep
    kept in an overlay, a primary config of their own."""
    root = tmp_path / "my_conf"
    files = {
        "task/mytask.yaml": "# @package task\ndefaults:\n  - toy_letters\n  - _self_\nname: mytask\n"
        "dataset:\n  letters: ab\n",
        "experiment/fast.yaml": "# @package _global_\ntrainer:\n  lr: 0.002\n",
        "experiment/lrs.yaml": "# @package _global_\nhydra:\n  sweeper:\n    params:\n      trainer.lr: 1e-3,3e-3\n",
        "hydra/launcher/mine.yaml": "defaults:\n  - local\n",
        "sweep/mine.yaml": "method: grid\nparameters:\n  trainer.lr: {values: [0.001, 0.004]}\n",
        "mine.yaml": "defaults:\n  - config\n  - _self_\nrollout:\n  n: 2\nhydra:\n  sweeper:\n"
        "    params:\n      trainer.lr: 1e-3,2e-3,3e-3\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def by(how: str, root: Path) -> list[str]:
    """The arguments that bring `root`'s configs: --config-dir or hydra.searchpath."""
    return ["--config-dir", str(root)] if how == "config-dir" else [f"hydra.searchpath=[file://{root}]"]


def train(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "train.py"), *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), "RLLM_SWEEPS_WARM_SERVER": "off"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def plan_of(sweep_dir: Path) -> dict:
    """The sweep's plan: a dry run's, kept beside the directory (it writes nothing in it), else plan.json."""
    from rllm_sweeps.records.layout import SweepPaths

    dry = SweepPaths(sweep_dir).dry_run_plan
    return json.loads((dry if dry.is_file() else sweep_dir / "plan.json").read_text())


@pytest.mark.parametrize(
    "bring",
    [
        pytest.param(lambda root: [], id="no-overlay"),
        pytest.param(
            lambda root: [*by("config-dir", root), "+experiment=fast", "task=mytask"], id="config-dir-overlay"
        ),
        pytest.param(lambda root: [*by("searchpath", root), "task=mytask"], id="searchpath-task"),
    ],
)
def test_cfg_job_shows_exactly_the_config_yaml_the_single_job_runs_with(tmp_path, user_dir, bring):
    args = [*bring(user_dir), *QUICK, "rollout.n=4", f"hydra.run.dir={tmp_path / 'job'}"]
    shown = ok(train(tmp_path, *args, "--cfg", "job"))
    ok(train(tmp_path, *args))
    ran = (tmp_path / "job" / "config.yaml").read_text()
    assert shown == ran
    cfg = yaml.safe_load(ran)
    assert "experiment" not in cfg  # an overlay selected, not a key added
    if "+experiment=fast" in args:
        assert cfg["trainer"]["lr"] == 0.002
    if "task=mytask" in args:
        assert (cfg["task"]["name"], cfg["task"]["dataset"]["letters"]) == ("mytask", "ab")


@pytest.mark.parametrize("how", ["config-dir", "searchpath"])
def test_a_sweeps_dry_run_plans_with_the_users_task_overlay_and_launcher(tmp_path, user_dir, how):
    sweep_dir = tmp_path / "sweep"
    args = [*by(how, user_dir), "task=mytask", "+experiment=fast", "hydra/launcher=mine", "trainer.lr=1e-3,3e-3"]
    out = ok(train(tmp_path, "-m", *args, DRY, f"hydra.sweep.dir={sweep_dir}", timeout=120))
    assert "Launcher: hydra/launcher=mine -> local processes" in out
    plan = plan_of(sweep_dir)
    assert plan["base_overrides"] == ["task=mytask", "+experiment=fast"]
    assert [job["overrides"][-1] for job in plan["jobs"]][:2] == ["trainer.lr=0.001", "trainer.lr=0.003"]


def test_a_group_choice_the_search_path_lacks_is_refused_with_every_directorys_choices(tmp_path, user_dir):
    proc = train(tmp_path, "--config-dir", str(user_dir), "task=mytsk", "--cfg", "job")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"looked in task/ of conf/, {user_dir}" in proc.stderr
    assert "the choices are gsm8k, guess_letter, mytask, toy_letters; did you mean 'mytask'?" in proc.stderr


@pytest.mark.parametrize("how", ["config-dir", "searchpath"])
def test_a_two_job_sweep_runs_the_users_task_and_overlay_in_every_job(tmp_path, user_dir, how):
    sweep_dir = tmp_path / "sweep"
    args = [*by(how, user_dir), "task=mytask", "+experiment=fast", "hydra/launcher=mine", *QUICK, "rollout.n=2,4"]
    ok(train(tmp_path, "-m", *args, f"hydra.sweep.dir={sweep_dir}", timeout=600))
    configs = [yaml.safe_load(p.read_text()) for p in sorted(sweep_dir.glob("jobs/*/config.yaml"))]
    assert [c["rollout"]["n"] for c in configs] == [2, 4]
    assert {(c["trainer"]["lr"], c["task"]["name"], c["task"]["dataset"]["letters"]) for c in configs} == {
        (0.002, "mytask", "ab")
    }


def test_hydra_sweeper_params_on_the_command_line_sweep_as_the_same_overrides_do(tmp_path):
    sweep_dir = tmp_path / "sweep"
    ok(train(tmp_path, "-m", "+hydra.sweeper.params={trainer.lr: '1e-3,3e-3'}", DRY, f"hydra.sweep.dir={sweep_dir}"))
    assert [job["overrides"] for job in plan_of(sweep_dir)["jobs"]] == [["trainer.lr=0.001"], ["trainer.lr=0.003"]]


def test_hydra_sweeper_params_in_an_overlay_or_the_users_primary_config_sweep(tmp_path, user_dir):
    overlay, primary = tmp_path / "overlay", tmp_path / "primary"
    ok(train(tmp_path, "-m", "--config-dir", str(user_dir), "+experiment=lrs", DRY, f"hydra.sweep.dir={overlay}"))
    assert [job["overrides"][-1] for job in plan_of(overlay)["jobs"]] == ["trainer.lr=0.001", "trainer.lr=0.003"]
    mine = ["--config-dir", str(user_dir), "--config-name", "mine"]
    ok(train(tmp_path, "-m", *mine, DRY, f"hydra.sweep.dir={primary}"))
    assert len(plan_of(primary)["jobs"]) == 3
    shown = yaml.safe_load(ok(train(tmp_path, *mine, "--cfg", "job")))
    assert shown["rollout"]["n"] == 2


def test_rllm_sweeps_validate_shows_what_cfg_job_shows_with_the_users_configs(tmp_path, user_dir):
    args = ["--config-dir", str(user_dir), "task=mytask", "+experiment=fast"]
    shown = ok(train(tmp_path, *args, "--cfg", "job"))
    validated = subprocess.run(
        [sys.executable, "-m", "rllm_sweeps.cli", "validate", "--cfg", *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ok(validated) == shown
    assert yaml.safe_load(shown)["trainer"]["lr"] == 0.002


def test_a_sweep_file_in_the_users_directory_is_found_by_name(tmp_path, user_dir):
    sweep_dir = tmp_path / "sweep"
    ok(train(tmp_path, "-m", "--config-dir", str(user_dir), "+sweep=mine", DRY, f"hydra.sweep.dir={sweep_dir}"))
    assert [job["overrides"][-1] for job in plan_of(sweep_dir)["jobs"]] == ["trainer.lr=0.001", "trainer.lr=0.004"]
