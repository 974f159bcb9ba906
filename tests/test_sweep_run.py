"""Sweeps end to end on the local launcher: real jobs (tiny model, 2 steps), real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rllm_sweeps.records.result import JobResult

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
# Two steps of 8 prompts x 4 samples, one validation at the end on 8 prompts: the shortest job that still trains.
QUICK = ["trainer.total_batches=2", "trainer.val_before_train=false", "trainer.test_freq=0", "task.dataset.val_size=8"]
QUICK += ["data.train_batch_size=8", "rollout.n=4"]


def sweep_cmd(sweep_dir: Path, *args: str) -> list[str]:
    return [sys.executable, str(REPO / "train.py"), "-m", *QUICK, *args, f"hydra.sweep.dir={sweep_dir}"]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def run_sweep(sweep_dir: Path, *args: str, timeout: float) -> subprocess.CompletedProcess:
    cmd = sweep_cmd(sweep_dir, *args)
    return subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=timeout)


def job_results(sweep_dir: Path) -> dict[str, JobResult]:
    return {p.parent.name: JobResult.read(p.parent) for p in sorted(sweep_dir.glob("jobs/*/result.json"))}


def test_a_zip_crossed_with_seeds_runs_four_jobs_two_at_a_time_and_reports_two_rows_with_mean_and_std(tmp_path):
    # One sweep for both: a grid (the zipped pair x 2 seeds) launched two at a time and reported,
    # and its seeds aggregated into one row per point.
    proc = run_sweep(
        tmp_path,
        "trainer.lr=1e-3,3e-3",
        "rollout.n=2,4",
        "sweep.zip=[[trainer.lr,rollout.n]]",
        "sweep.seeds=[1,2]",
        "hydra.sweeper.parallel=2",
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = job_results(tmp_path)
    assert len(results) == 4 and all(r.status == "completed" for r in results.values())
    # Never more than 2 jobs at once: check the recorded start and end times.
    spans = sorted((r.started_at, r.ended_at) for r in results.values())
    for t, _ in spans:
        assert sum(1 for s, e in spans if s <= t < e) <= 2
    assert "val_reward_mean" in proc.stdout  # the table
    report = tmp_path / "report"
    for name in ("jobs.csv", "points.csv", "report.md", "learning_curves.png"):
        assert (report / name).stat().st_size > 0
    assert (tmp_path / "plan.json").exists() and (tmp_path / "manifest.json").exists()
    points = (report / "points.csv").read_text().strip().splitlines()
    assert len(points) == 1 + 2, points  # header + 2 points, seeds aggregated
    assert "std" in points[0]


@pytest.mark.timed
def test_dry_run_prints_the_plan_with_the_parallel_the_run_would_use_and_launches_nothing(tmp_path):
    start = time.monotonic()
    proc = run_sweep(
        tmp_path,
        "trainer.lr=range(1,101)",
        "rollout.n=range(1,1001)",
        "hydra.sweeper.dry_run=true",
        "hydra.sweeper.parallel=3",  # over the spec's parallel (1): what the run would use
        timeout=120,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "100000" in proc.stdout.replace(",", "")
    assert proc.stdout.splitlines()[0].endswith("jobs, parallel 3"), proc.stdout[:500]
    assert not (tmp_path / "jobs").exists()
    assert elapsed < 30  # process start included; the planning itself is timed in test_sweep_plan


def test_failing_jobs_are_recorded_out_of_memory_as_such_with_its_fix_the_others_complete_exit_nonzero(tmp_path):
    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.failures import out_of_memory_fix
    from rllm_sweeps.job import JobConfig
    from rllm_sweeps.records.status import OUT_OF_MEMORY_FIX, FailureKind

    rewards = "rllm_sweeps.tasks.toy:letters_reward,tests.probes.failing_reward:broken_reward"
    proc = run_sweep(
        tmp_path,
        f"task.reward={rewards},tests.probes.failing_reward:out_of_memory_reward",
        "hydra.sweeper.parallel=3",
        timeout=900,
    )
    assert proc.returncode != 0
    statuses = sorted(r.status for r in job_results(tmp_path).values())
    assert statuses == ["completed", "failed", "failed"]
    failed = {r.failure_kind: r for r in job_results(tmp_path).values() if r.status == "failed"}
    assert "bug in the user's reward function" in failed["user"].error
    # XLA's RESOURCE_EXHAUSTED (here an allocation past the host's memory; on a GPU, its memory share)
    oom = failed[FailureKind.OUT_OF_MEMORY]
    # The job's own fix (failures.out_of_memory_fix: what its config can still change) ends its error;
    # the sweep's summary gives the general one.
    job = JobConfig.of(load_config(oom.overrides, notify=lambda _: None))
    job_fix = out_of_memory_fix(job.engine_settings, oom.memory_fit)
    assert "RESOURCE_EXHAUSTED" in oom.error
    assert oom.error.splitlines()[-1] == f"out of accelerator memory: {job_fix}"
    assert "lower skyrl.jax.train_micro_batch_size" in job_fix
    assert f"note: 1 of the failed jobs ran out of accelerator memory: {OUT_OF_MEMORY_FIX}" in proc.stdout
    assert FailureKind.OUT_OF_MEMORY in (tmp_path / "report" / "jobs.csv").read_text()


def test_a_job_whose_loss_turns_nan_fails_diverged_with_step_and_quantity_and_its_sweep_counts_it_failed(tmp_path):
    from rllm_sweeps.records.attempts import read_attempts
    from rllm_sweeps.records.status import DIVERGED_FIX, FailureKind

    # lr 1e30: the first optimizer step overflows the weights; the next mini batch's loss is NaN
    proc = run_sweep(tmp_path, "trainer.lr=1e-3,1e30", "hydra.sweeper.parallel=2", timeout=600)
    assert proc.returncode != 0  # a failed job: the sweep says so, after recording everything
    by_status = {r.status: (name, r) for name, r in job_results(tmp_path).items()}
    assert sorted(by_status) == ["completed", "failed"]
    name, diverged = by_status["failed"]
    assert diverged.failure_kind is FailureKind.DIVERGED and diverged.divergence is not None
    assert (diverged.divergence.step, diverged.divergence.quantity) == (1, "loss")
    assert diverged.divergence.where.startswith("mini batch ") and diverged.error.endswith(DIVERGED_FIX)
    checkpoints = tmp_path / "jobs" / name / "checkpoints"
    assert not checkpoints.exists() or not any(checkpoints.iterdir())
    # It exports nothing, and says why (issue 55); the completed job exported its policy.
    assert diverged.exports.final is None and diverged.exports.best is None
    assert diverged.exports.not_exported.startswith("nothing exported: training diverged at step 1")
    assert not (tmp_path / "jobs" / name / "export").exists()
    assert by_status["completed"][1].exports.final is not None
    ends = [a for a in read_attempts(tmp_path / "jobs" / name) if a.exit_code is not None]
    assert ends and all(a.exit_code != 0 for a in ends)  # the job's process exited non-zero
    assert "1 failed" in proc.stdout and FailureKind.DIVERGED in (tmp_path / "report" / "jobs.csv").read_text()
    assert "1 of the failed jobs diverged (a NaN or infinite reward, loss or gradient norm)" in proc.stdout


def test_a_second_sweeper_is_refused_while_one_runs_and_after_a_sigkill_a_rerun_takes_over_rerunning_nothing_completed(
    tmp_path,
):
    args = sweep_cmd(tmp_path, "trainer.lr=1e-3,2e-3,3e-3,4e-3", "hydra.sweeper.parallel=1")
    sweeper = subprocess.Popen(args, cwd=REPO, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 600
    while not any(r.status == "completed" for r in job_results(tmp_path).values()):
        assert sweeper.poll() is None and time.monotonic() < deadline
        time.sleep(0.5)
    # The same command again while the first sweeper runs: refused at once, naming it; nothing touched.
    manifest = (tmp_path / "manifest.json").read_bytes()
    second = subprocess.run(args, cwd=REPO, env=env(), capture_output=True, text=True, timeout=300)
    assert sweeper.poll() is None, "the first sweeper ended before the second one was refused"
    assert second.returncode == 2, second.stdout[-2000:] + second.stderr[-2000:]
    assert f"pid {sweeper.pid} on {os.uname().nodename}" in second.stderr and "Traceback" not in second.stderr
    assert (tmp_path / "manifest.json").read_bytes() == manifest
    while sum(r.status == "completed" for r in job_results(tmp_path).values()) < 2:
        assert sweeper.poll() is None and time.monotonic() < deadline
        time.sleep(0.5)
    sweeper.kill()  # SIGKILL: no chance to clean up
    sweeper.wait()
    # Its running job got SIGTERM (parent death) and checkpoints/exits, or completes first: what the
    # rerun finds completed is known once no job is running (a loaded machine takes a while).
    time.sleep(3)
    settle = time.monotonic() + 120
    while any(r.status == "running" for r in job_results(tmp_path).values()) and time.monotonic() < settle:
        time.sleep(0.5)
    before = {n: r for n, r in job_results(tmp_path).items() if r.status == "completed"}
    assert len(before) >= 2

    again = subprocess.run(args, cwd=REPO, env=env(), capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:]
    after = job_results(tmp_path)
    assert len(after) == 4 and all(r.status == "completed" for r in after.values())
    for name, result in before.items():
        assert after[name].started_at == result.started_at, f"{name} ran again"
    assert f"{len(before)} jobs already completed" in again.stdout, again.stdout
    table = (tmp_path / "report" / "jobs.csv").read_text().strip().splitlines()
    assert len(table) == 1 + 4
    assert json.loads((tmp_path / "plan.json").read_text())["totals"]["jobs"] == 4


def test_ctrl_c_on_the_sweeper_stops_the_jobs_prints_the_table_so_far_and_exits_130(tmp_path):
    import signal

    from rllm_sweeps.records.attempts import read_attempts

    args = sweep_cmd(tmp_path, "trainer.lr=1e-3,2e-3", "hydra.sweeper.parallel=2")
    sweeper = subprocess.Popen(
        args,
        cwd=REPO,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Started as a background job (`cmd &`, nohup) is: SIGINT ignored, which Python keeps; the
        # sweeper still takes `kill -INT` as Ctrl-C.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    deadline = time.monotonic() + 300
    while len([d for d in tmp_path.glob("jobs/*") if read_attempts(d)]) < 2:  # both jobs' processes started
        assert sweeper.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    time.sleep(1)
    sweeper.send_signal(signal.SIGINT)  # what Ctrl-C sends
    out, err = sweeper.communicate(timeout=300)
    assert sweeper.returncode == 130, out[-2000:] + err[-2000:]
    assert "Traceback" not in out + err
    assert err.strip().splitlines()[-1].startswith("interrupted (Ctrl-C): rerun the same command to resume")
    assert "status" in out and "jobs:" in out  # the table so far
    for job_dir in tmp_path.glob("jobs/*"):
        result = JobResult.read(job_dir)  # a job stopped during its start-up still has its record
        assert result is not None and result.status == "preempted", job_dir
        assert read_attempts(job_dir)[-1].ended_at is not None


def test_a_model_path_that_does_not_exist_is_refused_before_any_job_is_launched(tmp_path):
    proc = run_sweep(tmp_path, "model.path=/nonexistent/model", "trainer.lr=1e-3,2e-3", timeout=120)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "model.path='/nonexistent/model'" in proc.stderr and "Traceback" not in proc.stderr
    assert not list(tmp_path.glob("jobs/*"))
