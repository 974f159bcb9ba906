"""`hydra/launcher` as users type it, end to end through train.py: launchers this sweeper does not
drive refused before anything is planned; hydra-submitit-launcher's fields (a user's own launcher
config built on submitit_slurm included) shown in the dry run; a SLURM sweep where SLURM cannot be
asked dry-runs with the reason and is refused for real, exit code 2, no traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # starts train.py
DRY = "hydra.sweeper.dry_run=true"


def train(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "train.py"), "-m", *args, f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), "RLLM_SWEEPS_WARM_SERVER": "off", **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def refusal(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    (line,) = [line for line in proc.stderr.strip().splitlines() if not line.startswith("note:")]
    return line


@pytest.mark.parametrize(
    ("launcher", "nearest"),
    [("joblib", ""), ("submitit_slrum", "did you mean 'submitit_slurm'"), ("basic", "")],
)
def test_a_launcher_this_sweeper_does_not_drive_is_refused_before_anything_is_planned(tmp_path, launcher, nearest):
    line = refusal(train(tmp_path, f"hydra/launcher={launcher}", "trainer.lr=1e-3,3e-3", DRY))
    assert line.startswith(f"error: hydra/launcher={launcher}: ") and nearest in line
    assert "local, slurm, ray_cluster, submitit_slurm, submitit_local" in line
    assert not (tmp_path / "sweep").exists()


def test_a_submitit_field_and_the_same_resource_given_or_swept_otherwise_are_refused_naming_both(tmp_path):
    submitit = ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=30"]
    line = refusal(train(tmp_path, *submitit, "resources.time_min=20", "trainer.lr=1e-3,3e-3", DRY))
    assert "hydra.launcher.timeout_min=30 and resources.time_min=20 set different values" in line
    line = refusal(train(tmp_path, *submitit, "resources.time_min=20,40", DRY))
    assert "hydra.launcher.timeout_min=30 and resources.time_min (swept)" in line


def test_a_users_launcher_built_on_submitit_slurm_dry_runs_without_slurm_and_a_run_is_refused_with_the_reason(
    tmp_path,
):
    (tmp_path / "conf" / "hydra" / "launcher").mkdir(parents=True)
    (tmp_path / "conf" / "hydra" / "launcher" / "mycluster.yaml").write_text(
        "defaults:\n  - submitit_slurm\npartition: gpu\ngpus_per_node: 8\ntimeout_min: 240\n"
    )
    args = ["--config-dir", str(tmp_path / "conf"), "hydra/launcher=mycluster", "trainer.lr=1e-3,3e-3"]
    no_slurm = {"PATH": str(tmp_path / "no-slurm-here")}  # no sbatch, no srun
    dry = train(tmp_path, *args, DRY, env=no_slurm)
    assert dry.returncode == 0 and "Traceback" not in dry.stderr, dry.stdout[-3000:] + dry.stderr[-3000:]
    assert "Launcher: hydra/launcher=mycluster -> SLURM partition gpu, 1 job at a time" in dry.stdout
    assert "2 jobs x (1 node x 8 GPUs, 2 CPUs, 8 GB, 240 min): sbatch " in dry.stdout
    assert "--gpus-per-node=8" in dry.stdout and "--partition=gpu" in dry.stdout and "--time=240" in dry.stdout
    (skipped,) = [line for line in dry.stdout.splitlines() if "check of these jobs was skipped" in line]
    assert "sbatch is not on PATH" in skipped and "make slurm-up" in skipped
    line = refusal(train(tmp_path, *args, env=no_slurm))
    assert line.startswith("error: cannot submit, nothing was submitted: no SLURM client here")
    assert not (tmp_path / "sweep" / "jobs").exists()


def test_cluster_local_with_the_local_cluster_down_dry_runs_with_make_slurm_up_and_a_run_is_refused(tmp_path):
    down = {"RLLM_SWEEPS_SLURM_BASE": str(tmp_path / "no-cluster")}  # conf/cluster/local.yaml's SLURM_CONF
    dry = train(tmp_path, "cluster=local", "trainer.lr=1e-3,3e-3", DRY, env=down)
    assert dry.returncode == 0 and "Traceback" not in dry.stderr, dry.stdout[-3000:] + dry.stderr[-3000:]
    assert "Launcher: hydra/launcher=slurm -> SLURM partition debug" in dry.stdout
    assert "skipped: " in dry.stdout and "make slurm-up" in dry.stdout
    line = refusal(train(tmp_path, "cluster=local", "trainer.lr=1e-3,3e-3", env=down))
    assert "cannot submit" in line and "make slurm-up" in line


def show(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """train.py without -m (--cfg shows one job's config)."""
    return subprocess.run(
        [sys.executable, str(REPO / "train.py"), *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )


SUBMITIT = ["hydra/launcher=submitit_slurm", "hydra.launcher.partition=gpu", "hydra.launcher.gpus_per_node=8"]


def test_cfg_job_shows_the_resources_a_sweeps_jobs_get_from_submitit_fields_each_with_its_source(tmp_path):
    proc = show(tmp_path, *SUBMITIT, "hydra.launcher.timeout_min=240", "resources.cpus_per_task=4", "--cfg", "job")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("# resources as each job of a sweep (-m) with hydra/launcher=submitit_slurm")
    resources = proc.stdout.split("\nresources:\n", 1)[1].split("\n")
    assert "  gpus_per_node: 8  # hydra.launcher.gpus_per_node" in resources
    assert "  time_min: 240  # hydra.launcher.timeout_min" in resources
    assert "  cpus_per_task: 4  # command line" in resources
    assert "  mem_gb: 8" in resources  # the config's own value: nothing to say


def test_cfg_hydra_marks_each_submitit_field_set_with_what_it_becomes(tmp_path):
    proc = show(tmp_path, *SUBMITIT, "hydra.launcher.exclude=node3", "--cfg", "hydra")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert "    gpus_per_node: 8  # -> every job's resources.gpus_per_node" in lines
    assert "    partition: gpu  # -> hydra/launcher=slurm's partition" in lines
    assert "    exclude: node3  # -> sbatch --exclude" in lines
    assert "    nodes: 1" in lines  # 1.2's default: not set, nothing to say
    package = show(tmp_path, *SUBMITIT, "--cfg", "hydra", "--package", "hydra.launcher")
    assert "gpus_per_node: 8  # -> every job's resources.gpus_per_node" in package.stdout.splitlines()


def test_cfg_with_m_and_a_submitit_field_against_the_command_line_are_refused_in_one_line(tmp_path):
    line = refusal(show(tmp_path, "-m", *SUBMITIT, "trainer.lr=1e-3,3e-3", "--cfg", "job"))
    assert line.startswith("error: --cfg job shows one job's config, and -m runs a sweep") and "dry_run=true" in line
    line = refusal(show(tmp_path, *SUBMITIT, "hydra.launcher.timeout_min=240", "resources.time_min=20", "--cfg", "job"))
    assert "hydra.launcher.timeout_min=240 and resources.time_min=20 set different values" in line


@pytest.mark.skipif(shutil.which("scontrol") is None, reason="needs the SLURM client (make slurm-deps)")
def test_a_slurm_dry_run_whose_controller_is_down_shows_the_plan_and_a_run_is_refused_with_the_reason(tmp_path):
    """SLURM_CONF names a real configuration whose slurmctld is not running (a cluster that is down,
    a login node whose controller is unreachable): `scontrol ping` answers DOWN at once."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=down\nSlurmctldHost=localhost\nSlurmctldPort=1\nAuthType=auth/munge\n"
        "NodeName=localhost CPUs=1 State=UNKNOWN\nPartitionName=debug Nodes=localhost Default=YES\n"
    )
    down = {"SLURM_CONF": str(conf)}
    args = ["hydra/launcher=slurm", "hydra.launcher.partition=debug", "trainer.lr=1e-3,3e-3"]
    dry = train(tmp_path, *args, DRY, env=down)
    assert dry.returncode == 0 and "Traceback" not in dry.stderr, dry.stdout[-3000:] + dry.stderr[-3000:]
    assert "Launcher: hydra/launcher=slurm -> SLURM partition debug" in dry.stdout
    (skipped,) = [line for line in dry.stdout.splitlines() if "check of these jobs was skipped" in line]
    assert "the SLURM controller does not answer" in skipped and "DOWN" in skipped
    line = refusal(train(tmp_path, *args, env=down))
    assert line.startswith("error: cannot submit, nothing was submitted: the SLURM controller does not answer")
    assert not (tmp_path / "sweep" / "jobs").exists()
