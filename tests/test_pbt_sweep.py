"""A PBT sweep end to end on the local launcher (real jobs, JAX on CPU): trials copy each other's
checkpoints inside their running jobs, their steps carry on without gap or repeat, and a trial's
schedule replayed from scratch as one job trains what its lineage trained, step for step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_sweep_records_kept import files
from test_sweep_run import env, job_results

from rllm_sweeps.records.layout import SweepPaths
from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.schedule import read_schedule
from rllm_sweeps.report import build_report

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
INTERVAL = 2  # a decision at step 2, then 2 more steps: what every assertion below needs, no more
STEPS = 2 * INTERVAL
# One trial at a time: each decides against the board of those before it, so the decisions (and
# so the test) do not depend on which process reaches step 2 first. The decision itself never
# waits either way.
PBT = [
    "trainer.val_before_train=false",
    "task.dataset.val_size=8",
    "data.train_batch_size=8",
    "rollout.n=4",
    "trainer.lr=tag(log,interval(1e-5,1e-2))",
    "sweep.method=pbt",
    "sweep.pbt.population=4",
    f"sweep.pbt.interval={INTERVAL}",
    f"trainer.total_batches={STEPS}",
    "hydra.sweeper.parallel=1",
    "sweep.confirm.top=2",  # then the 2 best trials' schedules again, with 2 fresh seeds each
    "sweep.confirm.seeds=2",
]


def per_step(records: list[dict]) -> list[dict]:
    """Each record but its times (the wall clock differs from run to run)."""
    return [{k: v for k, v in r.items() if not k.startswith("time")} for r in records]


def lineage_records(trials: dict, trial: int) -> list[dict]:
    """The train and val records of `trial`'s lineage: each step as the trial that trained it did."""
    schedule = read_schedule(trials[trial])
    out = []
    for kind in ("train", "val"):
        for step in range(1, STEPS + 1):
            by = schedule.trained_by(step, trial)
            out += [r for r in read_metrics(trials[by]) if r["kind"] == kind and r["step"] == step]
    return out


def replay(job_dir: Path, *more: str) -> None:
    """`rllm-sweeps rerun` of a trial (`more`: its options; none: into the sweep's reruns/)."""
    proc = subprocess.run(
        [sys.executable, "-m", "rllm_sweeps.cli", "rerun", str(job_dir), *more],
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def train_and_val(job_dir: Path) -> list[dict]:
    records = read_metrics(job_dir)
    return [r for kind in ("train", "val") for r in records if r["kind"] == kind]


def test_a_pbt_sweep_copies_checkpoints_its_schedules_replay_its_top_trials_are_confirmed_and_reruns_change_nothing(
    tmp_path,
):
    sweep = tmp_path / "sweep"
    cmd = [sys.executable, str(REPO / "train.py"), "-m", *PBT, f"hydra.sweep.dir={sweep}"]
    proc = subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = job_results(sweep)
    assert len(results) == 4 and all(r.status == "completed" for r in results.values())
    trials = {int(d.name[:4]): d for d in SweepPaths(sweep).job_dirs()}
    schedules = {t: read_schedule(d) for t, d in trials.items()}
    copied = {t: s.parents for t, s in schedules.items() if s.parents}
    assert copied, f"no trial copied another's checkpoint: {schedules}"
    assert len(list(SweepPaths(sweep).pbt_board.glob("trial_*.json"))) == 4
    assert (sweep / "report" / "pbt_schedules.png").stat().st_size > 0  # the schedules and the lineage

    for t, parents in copied.items():
        records = read_metrics(trials[t])
        # The same job went on after the copy: its steps carry on, none lost, none repeated.
        assert [r["step"] for r in records if r["kind"] == "train"] == list(range(1, STEPS + 1))
        assert [r["step"] for r in records if r["kind"] == "val"] == [INTERVAL, STEPS]
        ((start, parent),) = parents
        assert start == parent.step == INTERVAL and parent.trial != t
        lr = schedules[t].settings_at(start)["lr"]
        assert [r["lr"] for r in records if r["kind"] == "train" and r["step"] > start] == pytest.approx(
            [lr] * (STEPS - INTERVAL)
        )
        assert (
            f"pbt: step {INTERVAL}: trial {t} continues from trial {parent.trial}'s checkpoint"
            in (trials[t] / "job.log").read_text()
        )

    # Confirmation: the top 2 trials' schedules, each replayed with 2 fresh seeds (not the search's 42).
    stage = SweepPaths(sweep).confirm
    confirm_dirs = stage.job_dirs()
    assert len(confirm_dirs) == 4 and all(JobResult.read(d).status == "completed" for d in confirm_dirs)
    for d in confirm_dirs:
        schedule = read_schedule(d)
        assert schedule in schedules.values()
        lrs = [r["lr"] for r in read_metrics(d) if r["kind"] == "train"]
        assert lrs == pytest.approx([schedule.settings_at(step)["lr"] for step in range(STEPS)])
    confirmation = build_report(sweep).confirmation
    assert confirmation is not None and len(confirmation.stats.ranking) == 2 and confirmation.seeds == (43, 44)
    assert "confirmed: " in proc.stdout
    assert (stage.report / "report.md").is_file() and (stage.report / "jobs.csv").is_file()  # confirm/report/

    # The best trial's schedule, replayed from scratch as one job, gives its lineage's rewards step
    # for step (and, should the best be a trial that never copied, one that did too). The best's
    # replay is a rerun with its default output (issue 43): it lands in reruns/, and no trial's or
    # confirmation job's records change (pbt.json, schedules, results); then the sweep's command again
    # changes nothing either. (`rerun --out` is test_schedule_job.py's and test_sweep_records_kept.py's.)
    skip = ("report", "reruns", "sweeper.lock", "manifest.json", "confirm/manifest.json", "confirm/report")
    kept = files(sweep, skip=skip)
    finals = {t: results[d.name].final["val_reward_mean"] for t, d in trials.items()}
    best = max(finals, key=lambda t: (finals[t], -t))
    targets = [best] if best in copied else [best, min(copied)]
    rerun_dir = SweepPaths(sweep).reruns / trials[best].name / "1"
    for t in targets:
        out = rerun_dir if t == best else tmp_path / f"replay-{t}"
        replay(trials[t], *([] if t == best else ["--out", str(out)]))
        replayed = train_and_val(out)
        assert len(replayed) == STEPS + 2  # every step, and the validations at the interval and the end

        assert per_step(replayed) == per_step(lineage_records(trials, t))
        assert all("reward_mean" in r for r in replayed if r["kind"] == "train")

    assert JobResult.read(rerun_dir).status == "completed"
    assert files(sweep, skip=skip) == kept
    again = subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert files(sweep, skip=skip) == kept
