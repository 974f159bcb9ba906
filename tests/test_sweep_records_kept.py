"""Nothing a user types loses or hides a finished result (issue 43): a dry run writes nothing into a
sweep's directory, another sweep is refused there, a rerun lands beside the sweep's jobs, and
trainer.resume_mode=disable moves a completed job's records aside. Each sequence compares the
directory's files byte for byte before and after; one finished sweep serves several of them."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from finished_sweeps import GRID, QUICK, REPO, run, sweep

from rllm_sweeps.records.layout import SweepPaths
from rllm_sweeps.records.manifest import SweepManifest

pytestmark = pytest.mark.slow
OPTUNA = ["+sweep=lr_optuna", "sweep.budget=2", "sweep.parallel=2", "trainer.total_batches=2", "trainer.test_freq=1"]
OPTUNA += ["data.train_batch_size=8", "task.dataset.val_size=8"]


def cli(*args: str) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "rllm_sweeps.cli", *args])


def files(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every file under `root` (but those under the `skip` directories) -> its content's digest."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not any(rel == s or rel.startswith(s + "/") for s in skip):
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def own_lines(report: str) -> list[str]:
    """A report's lines but the reruns' (and blank ones)."""
    return [line for line in report.splitlines() if line.strip() and not line.startswith(("Reruns", "  rerun "))]


@pytest.fixture(scope="module")
def finished_optuna(tmp_path_factory) -> Path:
    """A 2-trial Optuna study (conf/sweep/lr_optuna.yaml, shortened), finished once."""
    sweep_dir = tmp_path_factory.mktemp("kept") / "optuna"
    proc = sweep(sweep_dir, *OPTUNA)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return sweep_dir


def test_a_dry_run_of_a_finished_sweep_leaves_its_directory_byte_identical_and_keeps_its_plan_beside_it(
    finished_sweep,
):
    before = files(finished_sweep)
    proc = sweep(finished_sweep, *QUICK, *GRID, "hydra.sweeper.dry_run=true")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert files(finished_sweep) == before
    beside = SweepPaths(finished_sweep).dry_run_plan
    assert beside.parent == finished_sweep.parent and f"plan: {beside}" in proc.stdout
    assert json.loads(beside.read_text())["totals"]["jobs"] == 2


def test_a_dry_run_of_a_finished_optuna_sweep_draws_nothing_into_its_journal_or_plan(finished_optuna):
    before = files(finished_optuna)
    proc = sweep(finished_optuna, *OPTUNA, "hydra.sweeper.dry_run=true")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert files(finished_optuna) == before  # optuna.journal and plan.json included
    report = cli("report", str(finished_optuna))
    assert report.returncode == 0 and "2 jobs: 2 completed" in report.stdout, report.stdout


def test_another_sweep_in_a_finished_sweeps_directory_is_refused_rc2_naming_both_ids_before_any_write(
    finished_sweep,
):
    before = files(finished_sweep)
    first = SweepManifest.read(finished_sweep)
    for extra in ([], ["hydra.sweeper.dry_run=true"]):
        proc = sweep(finished_sweep, *QUICK, "trainer.lr=1e-4,3e-4", *extra)
        assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("error: ") and f"holds sweep {first.sweep_id}" in line
        assert "another sweep, " in line and "hydra.sweep.dir=DIR" in line
        assert files(finished_sweep) == before


def test_the_same_sweep_again_resumes_running_nothing_and_its_manifest_keeps_the_first_command(finished_sweep):
    jobs_before = files(finished_sweep / "jobs")
    first = SweepManifest.read(finished_sweep)
    proc = sweep(finished_sweep, *QUICK, *GRID)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert files(finished_sweep / "jobs") == jobs_before
    again = SweepManifest.read(finished_sweep)
    assert (again.sweep_id, again.command, again.created_at) == (first.sweep_id, first.command, first.created_at)
    assert len(again.history) == len(first.history) + 1 and again.history[-1].sweep_id == first.sweep_id


def test_a_rerun_of_a_sweeps_job_lands_in_reruns_listed_apart_and_leaves_the_sweeps_records_unchanged(
    finished_sweep,
):
    job = sorted((finished_sweep / "jobs").iterdir())[0]
    before = files(finished_sweep, skip=("report", "reruns"))
    table = cli("report", str(finished_sweep)).stdout
    proc = cli("rerun", str(job))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rerun_dir = SweepPaths(finished_sweep).reruns / job.name / "1"
    assert (rerun_dir / "result.json").is_file()
    assert files(finished_sweep, skip=("report", "reruns")) == before  # nothing in jobs/, plan, manifest
    report = cli("report", str(finished_sweep)).stdout
    assert own_lines(report) == own_lines(table)  # the sweep's own rows, best and notes, as before
    assert f"rerun 1 of job {job.name}: completed" in report
    # The sweep's command again: it sees no rerun, and no record changes (plan.json included) but the
    # manifest's history, the live sweeper's lock and the report it writes.
    skip = ("report", "reruns", "sweeper.lock", "manifest.json")
    kept = files(finished_sweep, skip=skip)
    assert sweep(finished_sweep, *QUICK, *GRID).returncode == 0
    assert files(finished_sweep, skip=skip) == kept


def test_a_rerun_or_plan_out_inside_a_sweeps_records_is_refused_rc2(finished_sweep, tmp_path):
    job = sorted((finished_sweep / "jobs").iterdir())[0]
    before = files(finished_sweep)
    for out in (finished_sweep / "jobs" / "mine", finished_sweep, job / "again"):
        proc = cli("rerun", str(job), "--out", str(out))
        assert proc.returncode == 2 and "inside the records of sweep" in proc.stderr, proc.stderr
        plan = cli("plan", "trainer.lr=1e-3,3e-3", "--out", str(out / "plan.json"))
        assert plan.returncode == 2 and "inside the records of sweep" in plan.stderr, plan.stderr
        export = cli("export", str(finished_sweep), "--best", "--out", str(out / "model"))
        assert export.returncode == 2 and "inside the records of sweep" in export.stderr, export.stderr
    assert files(finished_sweep) == before


def test_resume_mode_disable_over_a_completed_job_moves_its_records_aside_byte_identical(tmp_path):
    job_dir = tmp_path / "job"
    hand = [sys.executable, str(REPO / "train.py"), *QUICK, f"hydra.run.dir={job_dir}"]
    assert run(hand).returncode == 0
    before = files(job_dir, skip=(".lock",))
    proc = run([*hand, "trainer.lr=3e-3", "trainer.resume_mode=disable"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "records (" in proc.stdout and f"moved to {job_dir / 'replaced' / '1'}" in proc.stdout
    assert files(job_dir / "replaced" / "1") == before
    assert json.loads((job_dir / "result.json").read_text())["status"] == "completed"


def test_make_clean_lists_what_it_would_delete_and_without_a_yes_deletes_nothing(tmp_path):
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    (tmp_path / "multirun" / "sweep").mkdir(parents=True)
    (tmp_path / "multirun" / "sweep" / "result.json").write_text("{}")
    proc = subprocess.run(
        ["make", "-s", "clean"], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True
    )
    assert proc.returncode != 0 and "multirun" in proc.stdout and "nothing deleted" in proc.stdout
    assert (tmp_path / "multirun" / "sweep" / "result.json").read_text() == "{}"
    proc = subprocess.run(["make", "-s", "clean"], cwd=tmp_path, input="y\n", capture_output=True, text=True)
    assert proc.returncode == 0 and not (tmp_path / "multirun").exists()
