"""rllm-sweeps as its users install it: the wheel, installed into a fresh virtual environment, run
from directories outside the checkout (a bare one, and a user's project with its own configs and
workflow class): validate, `--cfg job`, a one-step job, two-job sweeps on the local launcher and on
SLURM, every job through the installed entry point (README, "Use it in your own project").

One wheel and one environment for the whole module (built once, about 20 s); every job trains one
step of the tiny model.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from rllm_sweeps.records.attempts import latest_scheduler_id

REPO = Path(__file__).resolve().parents[1]
# What the wheel is built from: the checkout's packaging and sources (no tests/, bench/, docs/).
WHEEL_SOURCES = ("pyproject.toml", "setup.py", "README.md", "conf", "rllm_sweeps", "launchers", "hydra_plugins")
ONE_STEP = [
    "trainer.total_batches=1",
    "trainer.val_before_train=false",
    "trainer.test_freq=0",
    "task.dataset.val_size=8",
    "data.train_batch_size=8",
    "data.val_batch_size=8",
]
ON_SLURM = ["cluster=local", "resources.cpus_per_task=1", "resources.mem_gb=4", "resources.time_min=10"]
WORKFLOW = "my_project.workflows:ShoutWorkflow"
# The user's project: a package with a workflow class, a config directory with a task, a workflow
# and an experiment, and the three-line train.py the README shows.
USER_PROJECT = {
    "my_project/__init__.py": "",
    "my_project/workflows.py": (
        "from rllm_sweeps.workflows.single_turn import SingleTurnWorkflow\n\n\n"
        "class ShoutWorkflow(SingleTurnWorkflow):\n"
        '    """The user\'s own workflow (single-turn episodes)."""\n'
    ),
    "conf/task/letters_ab.yaml": "# @package task\ndefaults:\n  - toy_letters\n  - _self_\nname: letters_ab\n"
    "dataset:\n  letters: ab\n",
    "conf/workflow/shout.yaml": f"# @package workflow\nname: shout\nclass: {WORKFLOW}\nmax_turns: 1\n"
    "role_estimators: {policy: null}\n",
    "conf/experiment/one_step.yaml": "# @package _global_\n"
    "trainer:\n  total_batches: 1\n  val_before_train: false\n  test_freq: 0\n"
    "data:\n  train_batch_size: 8\n  val_batch_size: 8\n",
    "train.py": 'from rllm_sweeps.train import main\n\nif __name__ == "__main__":\n    main(config_dir="conf")\n',
}
pytestmark = pytest.mark.slow  # builds a wheel and a virtual environment, trains


@dataclass(frozen=True)
class Installed:
    """The wheel and the virtual environment it is installed in (its dependencies: the checkout's .venv's)."""

    wheel: Path
    venv: Path

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def env(self) -> dict[str, str]:
        """The user's shell: the environment's bin/ first, nothing of the checkout on the path."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        return {**env, "PATH": f"{self.venv / 'bin'}{os.pathsep}{env['PATH']}", "RLLM_SWEEPS_WARM_SERVER": "off"}

    def run(self, cwd: Path, *command: str, timeout: float = 600) -> str:
        """`command` in `cwd`; its rc must be 0. Returns its stdout."""
        proc = subprocess.run(command, cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=timeout)
        assert proc.returncode == 0, f"{command}: rc {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return proc.stdout


def build_wheel(out: Path) -> Path:
    """`pip wheel .` of a copy of the checkout's sources (the build's own files stay out of the
    checkout), offline: setuptools from the running environment."""
    src = out / "src"
    src.mkdir()
    for name in WHEEL_SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, src / name)
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--no-build-isolation"]
    subprocess.run([*pip, "-w", str(out / "dist"), str(src)], check=True, capture_output=True, timeout=300)
    (wheel,) = (out / "dist").glob("rllm_sweeps-*.whl")
    return wheel


def fresh_venv(root: Path) -> Path:
    """A new virtual environment whose dependencies are the already-installed ones: a .pth line puts
    this environment's site-packages after its own (a venv of a venv cannot --system-site-packages
    them). Its .pth files are not run there, so the checkout's editable rllm_sweeps is not importable."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    (own,) = (root / "lib").glob("python3.*/site-packages")
    (own / "installed_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return root


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("installed")
    wheel, venv = build_wheel(root), fresh_venv(root / "venv")
    # pip runs in the new environment (--python): its scripts are that interpreter's. --force-reinstall:
    # the checkout's own (editable) rllm-sweeps is visible there too, and stays where it is.
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q"]
    subprocess.run([*pip, "--no-deps", "--no-index", "--force-reinstall", str(wheel)], check=True, timeout=300)
    return Installed(wheel, venv)


@pytest.fixture(scope="module")
def user_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("my_project")
    for name, text in USER_PROJECT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def results(root: Path, pattern: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(root.glob(pattern))]


def completed_jobs(root: Path, pattern: str, count: int) -> list[dict]:
    """`count` completed jobs' result.json under `root`, none run from the checkout's package."""
    found = results(root, pattern)
    assert [r["status"] for r in found] == ["completed"] * count, found
    assert all(r["git_revision"] is None for r in found)  # the installed wheel's files, not a checkout's
    return found


def test_the_wheel_holds_the_package_its_configs_and_plugins_and_nothing_of_the_tests(installed):
    names = zipfile.ZipFile(installed.wheel).namelist()
    conf = sorted(n.removeprefix("rllm_sweeps/conf/") for n in names if n.startswith("rllm_sweeps/conf/"))
    checkout_conf = sorted(str(p.relative_to(REPO / "conf")) for p in (REPO / "conf").rglob("*.yaml"))
    assert conf == sorted([*checkout_conf, "__init__.py"])
    for name in ("rllm_sweeps/__main__.py", "rllm_sweeps/train.py", "rllm_sweeps/tasks/data/gsm8k_sample.jsonl"):
        assert name in names
    assert {n.split("/")[1] for n in names if n.startswith("hydra_plugins/")} >= {
        "rllm_sweeps_sweeper",
        "rllm_sweeps_launcher",
        "hydra_optuna_sweeper",
    }
    assert not [n for n in names if n.split("/")[0] in ("tests", "bench", "docs", "conf") or "test_" in n]
    metadata = zipfile.ZipFile(installed.wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "Version: 0.1.0" in metadata and "Requires-Dist: hydra-core==1.3.2" in metadata
    assert (
        "console_scripts"
        in zipfile.ZipFile(installed.wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    )


def test_from_a_directory_outside_the_checkout_the_installed_package_validates_trains_and_sweeps_locally(
    installed, tmp_path
):
    where = installed.run(tmp_path, "python", "-c", "import rllm_sweeps; print(rllm_sweeps.__file__)")
    assert where.startswith(str(installed.venv))
    assert installed.run(tmp_path, "rllm-sweeps", "validate", "trainer.lr=3e-3").strip() == "valid"
    shown = yaml.safe_load(installed.run(tmp_path, "python", "-m", "rllm_sweeps", "--cfg", "job", "trainer.lr=3e-3"))
    assert shown["trainer"]["lr"] == 3e-3
    assert "Common keys" in installed.run(tmp_path, "rllm-sweeps", "train", "--help")
    installed.run(tmp_path, "rllm-sweeps", "train", *ONE_STEP)
    completed_jobs(tmp_path, "outputs/rllm-sweeps/default/*/result.json", 1)
    installed.run(tmp_path, "python", "-m", "rllm_sweeps", "-m", *ONE_STEP, "rollout.n=2,4")
    completed_jobs(tmp_path, "multirun/rllm-sweeps/*/jobs/*/result.json", 2)


def test_a_users_project_runs_its_own_task_and_workflow_class_through_the_installed_package_locally(
    installed, user_project
):
    mine = ["--config-dir", "conf", "task=letters_ab", "workflow=shout"]
    assert installed.run(user_project, "rllm-sweeps", "validate", *mine).strip() == "valid"
    shown = yaml.safe_load(installed.run(user_project, "python", "-m", "rllm_sweeps", *mine, "--cfg", "job"))
    assert (shown["workflow"]["class"], shown["task"]["dataset"]["letters"]) == (WORKFLOW, "ab")
    # The user's own three-line train.py (its config_dir: conf/), then a two-job sweep on the local launcher.
    installed.run(user_project, "python", "train.py", "task=letters_ab", "workflow=shout", "+experiment=one_step")
    (job,) = completed_jobs(user_project, "outputs/rllm-sweeps/default/*/result.json", 1)
    installed.run(user_project, "rllm-sweeps", "train", "-m", *mine, "+experiment=one_step", "rollout.n=2,4")
    sweep = completed_jobs(user_project, "multirun/rllm-sweeps/*/jobs/*/result.json", 2)
    assert {r["workflow"] for r in [job, *sweep]} == {WORKFLOW}


@pytest.mark.slurm
def test_two_job_sweeps_on_slurm_run_the_installed_package_and_the_users_workflow_on_the_nodes(
    installed, user_project, slurm_env, tmp_path
):
    installed.run(tmp_path, "rllm-sweeps", "train", "-m", *ONE_STEP, *ON_SLURM, "rollout.n=2,4")
    plain = completed_jobs(tmp_path, "multirun/rllm-sweeps/*/jobs/*/result.json", 2)
    mine = ["--config-dir", "conf", "task=letters_ab", "workflow=shout", "+experiment=one_step"]
    sweep_dir = f"hydra.sweep.dir={user_project / 'on_slurm'}"
    installed.run(user_project, "python", "-m", "rllm_sweeps", "-m", *mine, *ON_SLURM, "rollout.n=2,4", sweep_dir)
    theirs = completed_jobs(user_project, "on_slurm/jobs/*/result.json", 2)
    assert {r["workflow"] for r in theirs} == {WORKFLOW}
    assert {r["workflow"] for r in plain} == {"rllm_sweeps.workflows.single_turn:SingleTurnWorkflow"}
    for job_dir in [*tmp_path.glob("multirun/*/*/jobs/*"), *(user_project / "on_slurm").glob("jobs/*")]:
        assert re.fullmatch(r"\d+(_\d+)?", latest_scheduler_id(job_dir) or ""), job_dir  # SLURM's job ids
