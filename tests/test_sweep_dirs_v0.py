"""Upgrades never strand a sweep: whole sweep directories written by the release before versioned
records (tests/data/sweeps_v0/, by 99972d4: a finished grid, a PBT sweep killed mid-run, an Optuna
study killed mid-study) read, report and resume under this code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from rllm_sweeps.pbt.board import PopulationBoard
from rllm_sweeps.pbt.decision import TrialState
from rllm_sweeps.records.layout import JobPaths, SweepPaths
from rllm_sweeps.records.manifest import SweepManifest
from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.model import version_of
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import JobStatus
from rllm_sweeps.study import open_storage

REPO = Path(__file__).resolve().parents[1]
OLD = REPO / "tests" / "data" / "sweeps_v0"
WRITTEN_AT = Path("/tmp/h46_fx")  # where the old code ran them (tests/data/sweeps_v0/README.md)
FIXTURES = {"grid_finished": "grid", "pbt_midrun": "pbt", "optuna_midrun": "optuna_mid"}


def copy_of(name: str, tmp_path: Path) -> Path:
    """The fixture, copied where this test may write. A sweep directory records absolute paths (its
    command's hydra.sweep.dir, its study's journal, a PBT trial's population, a job's launch record)
    and is read where it was written; a copy elsewhere gets its own paths, as a user's `sed` would
    (and keeps its directory's name: the study's name is the sweep directory's)."""
    sweep = tmp_path / FIXTURES[name]
    shutil.copytree(OLD / name, sweep)
    old = str(WRITTEN_AT / FIXTURES[name])
    for path in sweep.rglob("*"):
        if path.is_file() and "checkpoints" not in path.parts:
            text = path.read_bytes()
            if old.encode() in text:
                path.write_bytes(text.replace(old.encode(), str(sweep).encode()))
    return sweep


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def cli(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "rllm_sweeps.cli", *args]
    return subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=300)


def rerun(sweep: Path) -> subprocess.CompletedProcess:
    """The sweep's own command (its manifest's), run again."""
    manifest = SweepManifest.read(sweep)
    assert manifest is not None
    cmd = [sys.executable, str(REPO / manifest.command[0]), *manifest.command[1:]]
    return subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=900)


def results(sweep: Path) -> dict[Path, JobResult | None]:
    return {d: JobResult.read(d) for d in SweepPaths(sweep).job_dirs()}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_an_old_sweep_directory_reports_and_shows_its_status(name, tmp_path):
    sweep = copy_of(name, tmp_path)
    jobs = SweepPaths(sweep).job_dirs()
    assert all(read_metrics(j) for j, r in results(sweep).items() if r and r.status is JobStatus.COMPLETED)
    assert all(JobPaths(j).attempts.exists() for j in jobs)
    report = cli("report", str(sweep))
    assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-3000:]
    assert (sweep / "report" / "report.md").exists()
    status = cli("status", str(sweep))
    assert status.returncode == 0, status.stdout[-3000:] + status.stderr[-3000:]
    assert all(d.name in status.stdout for d in jobs)


def test_an_old_pbt_board_reads_each_trials_last_report():
    states = PopulationBoard(SweepPaths(OLD / "pbt_midrun").pbt_board).states()
    assert [(s.trial, s.step) for s in states] == [(0, 8), (1, 4)]
    assert all(set(s.settings) == {"trainer.lr"} and s.schema_version == version_of(TrialState) for s in states)


@pytest.mark.slow
def test_a_finished_old_sweep_rerun_runs_no_job(tmp_path):
    sweep = copy_of("grid_finished", tmp_path)
    before = {d.name: JobPaths(d).attempts.read_text() for d in SweepPaths(sweep).job_dirs()}
    proc = rerun(sweep)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert {d.name: JobPaths(d).attempts.read_text() for d in SweepPaths(sweep).job_dirs()} == before
    assert all(r is not None and r.status is JobStatus.COMPLETED for r in results(sweep).values())


@pytest.mark.slow
def test_an_old_pbt_sweep_killed_mid_run_resumes_to_its_end(tmp_path):
    sweep = copy_of("pbt_midrun", tmp_path)
    proc = rerun(sweep)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert all(r is not None and r.status is JobStatus.COMPLETED for r in results(sweep).values())
    for job in SweepPaths(sweep).job_dirs():  # the killed trial went on from its checkpoint: no step lost or repeated
        assert [r.step for r in read_metrics(job) if r.kind == "train"] == list(range(1, 11))


@pytest.mark.slow
def test_an_old_optuna_study_killed_mid_study_resumes_to_its_budget(tmp_path):
    sweep = copy_of("optuna_midrun", tmp_path)
    before = results(sweep)
    proc = rerun(sweep)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    study = optuna.load_study(study_name=sweep.name, storage=open_storage(str(sweep / "optuna.journal")))
    finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    assert sum(t.state in finished for t in study.get_trials()) == 3  # the sweep's budget
    # The trial the killed sweeper left running failed (its job kept as it was); the finished ones kept.
    (orphan,) = [t for t in study.get_trials() if t.state is optuna.trial.TrialState.FAIL]
    assert "sweeper died" in orphan.user_attrs["failed_because"]
    after = results(sweep)
    assert all(after[j] == r for j, r in before.items() if r is not None and r.status is JobStatus.COMPLETED)
    new = [r for j, r in after.items() if j not in before]
    assert new and all(r is not None and r.status in (JobStatus.COMPLETED, JobStatus.PRUNED) for r in new)
