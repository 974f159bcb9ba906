"""The report, from synthetic sweep directories written with the real writers (plan.json
in Plan.to_dict's shape, JobResult.write, MetricsLog). Pure logic: nothing trains."""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from rllm_sweeps.records.attempt_events import Ended, Started
from rllm_sweeps.records.metric_rows import TrainRow, ValRow
from rllm_sweeps.records.metrics import MetricsLog
from rllm_sweeps.records.model import load
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import JobStatus
from rllm_sweeps.report import (
    NO_RESULT,
    NOT_STARTED,
    add_report_parser,
    build_report,
    jobs_csv,
    points_csv,
    render_markdown,
    render_table,
    write_report,
)
from rllm_sweeps.report.plots import spans_decade

BASE = ["trainer.total_batches=4", "task=toy_letters"]


def plan_dict(
    points: list[dict[str, Any]],
    seeds: list[int] | None = (0, 1),
    metric: Any = None,
    parameters: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A plan.json as Plan.to_dict writes it: the seeds of a point are consecutive jobs."""
    jobs = []
    for p_index, params in enumerate(points):
        point_id = f"p{p_index:07d}" + "0" * 56
        for seed in seeds or [None]:
            overrides = BASE + [f"{k}={v}" for k, v in params.items()]
            if seed is not None:
                overrides.append(f"trainer.seed={seed}")
            index = len(jobs)
            jobs.append(
                {
                    "index": index,
                    "overrides": overrides,
                    "params": dict(params),
                    "point_id": point_id,
                    "point_index": p_index,
                    "seed": seed,
                    "config_hash": f"{index:04d}beef" + "a" * 56,
                    "resources": {
                        "nodes": 1,
                        "gpus_per_node": 0,
                        "cpus_per_task": 2,
                        "jobs_per_gpu": 1,
                        "mem_gb": 8,
                        "time_min": 60,
                    },
                    "engine": "jax",
                    "gpu_memory_gib": None,
                    "gpu_memory_need": None,
                }
            )
    spec = {
        "method": "grid",
        "metric": metric or {"name": "val_reward_mean", "goal": "maximize"},
        "parameters": parameters or {k: {"values": sorted({p[k] for p in points})} for k in points[0]},
        "parallel": 2,
        "seed": 0,
    }
    if seeds:
        spec["seeds"] = list(seeds)
    metrics = spec["metric"] if isinstance(spec["metric"], list) else [spec["metric"]]
    swept = [k for k, body in spec["parameters"].items() if len(body.get("values", [])) > 1 or "distribution" in body]
    n = len(points)
    totals = {"points": n, "jobs": len(jobs), "seeds": len(seeds or [None]), "candidates": n, "dropped": 0}
    totals |= {"validated": len(jobs), "node_hours": len(jobs), "gpu_hours": 0.0, "plan_seconds": 0.01}
    return {
        "schema_version": 2,
        "spec": spec,
        "source": "command line",
        "metrics": metrics,  # what the planner states (records/plan.py)
        "seed_key": "trainer.seed",
        "swept": swept,
        "base_overrides": BASE,
        "complete": True,
        "totals": totals,
        "notes": [],
        "jobs": jobs,
    }


def make_sweep(tmp_path: Path, plan: dict[str, Any], name: str = "sweep") -> Path:
    sweep = tmp_path / name
    (sweep / "jobs").mkdir(parents=True)
    (sweep / "plan.json").write_text(json.dumps(plan, indent=2))
    (sweep / "manifest.json").write_text(
        json.dumps({"command": ["train.py", "-m", "x=1,2"], "sweep_id": "s-test", "created_at": 0, "launcher": "local"})
    )
    return sweep


def job_dir_of(sweep: Path, job: dict[str, Any]) -> Path:
    return sweep / "jobs" / f"{job['index']:04d}-{job['config_hash'][:8]}"


def write_job(
    sweep: Path,
    job: dict[str, Any],
    status: str = JobStatus.COMPLETED,
    val: list[float] = (0.5,),
    error: str | None = None,
    steps: int = 4,
    **extra: Any,
) -> Path:
    """A job's directory as the job writes it: metrics.jsonl (train + val lines) and result.json."""
    extra.setdefault("started_at", 1000.0)
    extra.setdefault("wall_time_s", 12.5)
    job_dir = job_dir_of(sweep, job)
    job_dir.mkdir(parents=True, exist_ok=True)
    log = MetricsLog(job_dir)
    for step in range(1, steps + 1):
        log.append(TrainRow(step=step, time=1000.0 + step, reward_mean=0.1 * step))
    for i, v in enumerate(val):
        log.append(ValRow(step=2 * (i + 1), time=1000.0 + 2 * (i + 1), val_reward_mean=v))
    log.close()
    final = {"val_reward_mean": val[-1]} if val and status == JobStatus.COMPLETED else {}
    best = {"val_reward_mean": max(val)} if val and status == JobStatus.COMPLETED else {}
    JobResult(
        status=status,
        config_hash=job["config_hash"],
        overrides=job["overrides"],
        steps=steps,
        final=final,
        best=best,
        ended_at=1012.5,
        error=error,
        **extra,
    ).write(job_dir)
    return job_dir


# A zip of two keys, 2 values each -> 2 points; x 2 seeds -> 4 jobs.
ZIP_POINTS = [{"trainer.lr": 1e-6, "rollout.n": 4}, {"trainer.lr": 1e-4, "rollout.n": 8}]


def finished_sweep(tmp_path: Path, metric: Any = None, values: list[float] = (0.2, 0.4, 0.7, 0.9)) -> Path:
    plan = plan_dict(ZIP_POINTS, seeds=[0, 1], metric=metric)
    sweep = make_sweep(tmp_path, plan)
    for job, v in zip(plan["jobs"], values, strict=True):
        write_job(sweep, job, val=[v / 2, v])
    return sweep


def test_plan_dict_shape_matches_plan_to_dict():
    """The synthetic plan.json has the keys the real Plan writes (so these tests read real plans)."""
    from rllm_sweeps.records.plan import PlannedJob, Totals
    from rllm_sweeps.sweep.plan import Plan
    from rllm_sweeps.sweep.spec import SweepSpec

    ours = plan_dict(ZIP_POINTS)
    spec = SweepSpec.from_dict({"metric": {"name": "val_reward_mean", "goal": "maximize"}, "seeds": 2})
    jobs = [load(PlannedJob, j, "plan") for j in ours["jobs"]]
    real = Plan(spec, BASE, jobs, Totals(2, 4, 2, 2, 0, 4, 0.0, 0.0)).to_dict()
    assert set(real) == set(ours)
    assert set(real["totals"]) == set(ours["totals"])
    assert real["jobs"] == ours["jobs"]
    assert real["spec"]["metric"] == ours["spec"]["metric"]


def test_a_plan_json_of_schema_1_gets_its_facts_from_its_spec(tmp_path):
    """A sweep directory from before the planner stated metrics, seed key and swept keys still reads."""
    plan = plan_dict(ZIP_POINTS, seeds=[0, 1], metric={"name": "val_reward_mean", "goal": "minimize"})
    old = {k: v for k, v in plan.items() if k not in ("metrics", "seed_key", "swept")} | {"schema_version": 1}
    sweep = make_sweep(tmp_path, old)
    for job, v in zip(plan["jobs"], (0.2, 0.4, 0.7, 0.9), strict=True):
        write_job(sweep, job, val=[v])
    report = build_report(sweep)
    assert report.swept == ["trainer.lr", "rollout.n"] and report.seed_key == "trainer.seed"
    assert [(m.name, m.goal) for m in report.metrics] == [("val_reward_mean", "minimize")]
    assert report.best[0].point.point_index == 0  # the lower mean wins


def test_seeds_aggregated_as_mean_std(tmp_path):
    report = build_report(finished_sweep(tmp_path))
    assert len(report.jobs) == 4 and len(report.points) == 2
    assert report.swept == ["trainer.lr", "rollout.n"]  # the seed is never a parameter
    assert report.has_seeds and report.counts == {JobStatus.COMPLETED: 4}
    a, b = report.points
    assert a.params == {"trainer.lr": 1e-6, "rollout.n": 4} and a.seeds == [0, 1] and a.jobs == [0, 1]
    agg = a.metrics["val_reward_mean"]
    assert agg.n == 2
    assert agg.mean == pytest.approx(0.3)
    assert agg.std == pytest.approx(statistics.stdev([0.2, 0.4]))
    assert b.metrics["val_reward_mean"].mean == pytest.approx(0.8)
    assert not any("trainer.seed" in o for o in a.overrides)
    assert a.swept_overrides == ["trainer.lr=1e-06", "rollout.n=4"]
    job = report.jobs[3]
    assert job.seed == 1 and job.final == {"val_reward_mean": 0.9} and job.best == {"val_reward_mean": 0.9}
    assert job.steps == 4 and job.wall_time_s == 12.5 and job.status == JobStatus.COMPLETED


@pytest.mark.parametrize(("goal", "expected"), [("maximize", 1), ("minimize", 0)], ids=["maximize", "minimize"])
def test_best_point_by_goal(tmp_path, goal, expected):
    report = build_report(finished_sweep(tmp_path, metric={"name": "val_reward_mean", "goal": goal}))
    (best,) = report.best
    assert best.metric.goal == goal
    assert best.point.point_index == expected
    assert best.point.overrides == BASE + [f"{k}={v}" for k, v in ZIP_POINTS[expected].items()]
    assert f"best val_reward_mean ({goal})" in render_table(report)


def test_several_metrics_each_has_its_best(tmp_path):
    """Two metrics, opposite goals; the train metric (not in result.json's final) is read from metrics.jsonl."""
    metric = [{"name": "val_reward_mean", "goal": "maximize"}, {"name": "reward_mean", "goal": "minimize"}]
    plan = plan_dict(ZIP_POINTS, seeds=None, metric=metric)
    sweep = make_sweep(tmp_path, plan)
    write_job(sweep, plan["jobs"][0], val=[0.3], steps=2)  # final reward_mean 0.2
    write_job(sweep, plan["jobs"][1], val=[0.6], steps=5)  # final reward_mean 0.5
    report = build_report(sweep)
    best = {b.metric.name: b.point.point_index for b in report.best}
    assert best == {"val_reward_mean": 1, "reward_mean": 0}
    assert report.jobs[1].final["reward_mean"] == pytest.approx(0.5)
    assert report.jobs[1].best["reward_mean"] == pytest.approx(0.1)  # minimize: the lowest
    assert not report.has_seeds
    assert report.points[0].metrics["reward_mean"].std is None  # one seed: no std


def test_missing_and_failed_jobs_shown_and_left_out(tmp_path):
    points = ZIP_POINTS + [{"trainer.lr": 1e-5, "rollout.n": 6}]
    plan = plan_dict(points, seeds=[0, 1])
    sweep = make_sweep(tmp_path, plan)
    jobs = plan["jobs"]
    write_job(sweep, jobs[0], val=[0.4])
    trace = "Traceback (most recent call last):\n  File x\nValueError: reward exploded\n"
    write_job(sweep, jobs[1], status=JobStatus.FAILED, val=[0.99], error=trace, failure_kind="user")
    write_job(sweep, jobs[2], status=JobStatus.RUNNING, val=[0.1, 0.3], steps=3, restarts=1)
    job_dir_of(sweep, jobs[3]).mkdir()  # died before writing result.json
    # jobs 4 and 5 never started: no directory
    report = build_report(sweep)
    statuses = [j.status for j in report.jobs]
    assert statuses == [JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.RUNNING, NO_RESULT, NOT_STARTED, NOT_STARTED]
    assert report.counts == {
        JobStatus.COMPLETED: 1,
        JobStatus.RUNNING: 1,
        JobStatus.FAILED: 1,
        NO_RESULT: 1,
        NOT_STARTED: 2,
    }
    assert report.status_line() == "6 jobs: 1 completed, 1 running, 1 failed, 1 no-result, 2 not-started"
    assert not report.finished
    failed = report.jobs[1]
    assert failed.error == "ValueError: reward exploded" and failed.failure_kind == "user"
    a, b, c = report.points
    # only the completed seed counts: the failed one's 0.99 is out
    assert a.metrics["val_reward_mean"].n == 1 and a.metrics["val_reward_mean"].mean == pytest.approx(0.4)
    assert a.completed == 1
    assert b.metrics["val_reward_mean"] is None and c.metrics["val_reward_mean"] is None
    assert report.best[0].point.point_index == 0
    running = report.jobs[2]
    assert running.final == {"val_reward_mean": pytest.approx(0.3)}  # progress so far, from metrics.jsonl
    assert running.restarts == 1
    assert report.jobs[4].job_dir is None and report.jobs[4].final == {}
    table = render_table(report)
    for text in ("failed", "running", "no-result", "not-started", "ValueError: reward exploded", "1/2", "0/2"):
        assert text in table


def test_jobs_over_their_time_limit_with_their_requeues_spent_are_counted_in_a_note_with_the_fix(tmp_path):
    plan = plan_dict(ZIP_POINTS)
    sweep = make_sweep(tmp_path, plan)
    for job in plan["jobs"][:2]:
        write_job(
            sweep, job, status=JobStatus.FAILED, val=[0.1], error="over its time limit", failure_kind="time-limit"
        )
    report = build_report(sweep)
    (note,) = [n for n in report.notes if "time limit" in n]
    assert note.startswith("2 of the failed jobs reached their time limit with their requeues spent: ")
    assert "resources.time_min" in note and "max_requeues" in note


def test_jobs_matched_by_config_hash_not_name(tmp_path):
    plan = plan_dict(ZIP_POINTS, seeds=None)
    sweep = make_sweep(tmp_path, plan)
    moved = write_job(sweep, plan["jobs"][1], val=[0.7])
    moved.rename(sweep / "jobs" / "0007-whatever")
    again = {**plan["jobs"][1], "index": 1}  # a later, failed attempt at the same config, in its own directory
    write_job(sweep, again, status=JobStatus.FAILED, started_at=2000.0)
    stray = {**plan["jobs"][0], "config_hash": "f" * 64, "index": 9}
    write_job(sweep, stray, val=[0.1])
    report = build_report(sweep)
    assert [j.status for j in report.jobs] == [
        NOT_STARTED,
        JobStatus.COMPLETED,
    ]  # the completed attempt wins, as in resume
    assert report.jobs[1].job_dir.name == "0007-whatever"
    assert "0 not-started" not in render_table(report) and "1 not-started" in render_table(report)
    assert [d.name for d in report.unplanned] == ["0009-ffffffff"]
    assert any("plan does not have" in n for n in report.notes)


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_csv_contents(tmp_path):
    plan = plan_dict(ZIP_POINTS, seeds=[0, 1])
    sweep = make_sweep(tmp_path, plan)
    for job, v in zip(plan["jobs"][:3], (0.2, 0.4, 0.7), strict=True):
        write_job(sweep, job, val=[v])
    write_job(sweep, plan["jobs"][3], status=JobStatus.FAILED, val=[], error="boom\nRuntimeError: x, y")
    report = build_report(sweep)

    jobs = _csv_rows(jobs_csv(report))
    assert len(jobs) == 4
    assert list(jobs[0])[:5] == ["index", "trainer.lr", "rollout.n", "seed", "status"]
    assert jobs[0]["trainer.lr"] == "1e-06" and jobs[0]["rollout.n"] == "4" and jobs[0]["seed"] == "0"
    assert float(jobs[1]["val_reward_mean_final"]) == pytest.approx(0.4)
    assert jobs[3]["status"] == "failed" and jobs[3]["error"] == "RuntimeError: x, y"
    assert jobs[3]["val_reward_mean_final"] == ""
    assert jobs[2]["job_dir"] == "jobs/0002-0002beef"

    points = _csv_rows(points_csv(report))
    assert len(points) == 2
    assert float(points[0]["val_reward_mean_mean"]) == pytest.approx(0.3)
    assert float(points[0]["val_reward_mean_std"]) == pytest.approx(statistics.stdev([0.2, 0.4]))
    assert points[0]["val_reward_mean_n"] == "2"
    assert points[1]["val_reward_mean_n"] == "1" and points[1]["val_reward_mean_std"] == ""
    assert points[1]["completed"] == "1" and points[1]["jobs"] == "2"
    assert points[1]["overrides"] == "trainer.lr=0.0001 rollout.n=8"


def test_markdown_contents(tmp_path):
    report = build_report(finished_sweep(tmp_path))
    md = render_markdown(report, plots=[report.sweep_dir / "report" / "learning_curves.png"])
    assert md.startswith("# Sweep s-test\n")
    assert "train.py -m x=1,2" in md
    assert "**Status:** 4 jobs: 4 completed" in md
    assert "## Best configuration" in md
    assert " ".join(BASE + ["trainer.lr=0.0001", "rollout.n=8"]) in md
    assert "| point | `trainer.lr` | `rollout.n` | done | val_reward_mean |" in md
    assert "| 1 | 1e-4 | 8 | 2/2 | 0.8 ± 0.14 (n=2) |" in md
    assert md.count("| completed |") == 4
    assert "![learning_curves](learning_curves.png)" in md


def test_table_is_aligned_and_truncated(tmp_path):
    long = "/very/long/path/to/some/model/checkpoint/"
    points = [{"model.path": long + d, "trainer.lr": lr} for d, lr in (("a", 1), ("b", 2), ("a", 3))]
    plan = plan_dict(points, seeds=None)
    sweep = make_sweep(tmp_path, plan)
    for job in plan["jobs"]:
        write_job(sweep, job)
    table = render_table(build_report(sweep), max_rows=2)
    lines = table.splitlines()
    assert lines[2].split() == ["#", "path", "lr", "status", "val_reward_mean", "steps", "time"]
    rows = "\n".join(lines[3:6])
    assert "/very/long/path/to/some…" in rows and "checkpoint/dir" not in rows
    assert "model.path=/very/long/path/to/some/model/checkpoint/a" in table  # the best config, in full
    assert "... 1 more jobs" in table
    assert len(lines[3]) == len(lines[4])  # aligned columns


def test_write_report_files_and_plots(tmp_path):
    sweep = finished_sweep(tmp_path)
    paths = write_report(sweep)
    names = sorted(p.name for p in paths)
    assert names == sorted(
        [
            "jobs.csv",
            "points.csv",
            "report.md",
            "learning_curves.png",
            "val_reward_mean_vs_trainer.lr.png",
            "val_reward_mean_vs_rollout.n.png",
        ]
    )
    for path in paths:
        assert path.parent == sweep / "report" and path.stat().st_size > 0
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (
        "![val_reward_mean_vs_trainer.lr](val_reward_mean_vs_trainer.lr.png)"
        in (sweep / "report/report.md").read_text()
    )
    no_plots = write_report(sweep, plots=False)
    assert sorted(p.name for p in no_plots) == ["jobs.csv", "points.csv", "report.md"]


def test_a_plot_the_previous_report_drew_and_this_one_does_not_is_removed_and_no_other_file(tmp_path):
    sweep = finished_sweep(tmp_path)
    write_report(sweep)
    out = sweep / "report"
    # an older version's report drew old_plot.png (its report.md shows it); a user put notes.png beside it
    (out / "report.md").write_text((out / "report.md").read_text() + "\n![old_plot](old_plot.png)\n")
    (out / "old_plot.png").write_bytes(b"\x89PNG")
    (out / "notes.png").write_bytes(b"\x89PNG")
    pngs = {p.name for p in write_report(sweep) if p.suffix == ".png"}
    assert not (out / "old_plot.png").exists()
    assert (out / "notes.png").exists() and all((out / name).exists() for name in pngs)
    write_report(sweep, plots=False)  # no plots drawn: none removed
    assert all((out / name).exists() for name in pngs)


def test_log_axis_for_parameters_spanning_a_decade():
    assert spans_decade([1e-6, 1e-4])
    assert not spans_decade([2, 4, 8])
    assert spans_decade([3e-4, 1e-3, 3e-3])  # lr_grid's: exactly a decade
    assert not spans_decade([0.0, 1.0, 100.0])  # not all positive
    assert not spans_decade(["a", "b"])


def test_plots_categorical_and_unfinished(tmp_path):
    """A categorical parameter, a job with no metrics yet: the plots still draw."""
    points = [{"task": "toy_letters", "trainer.lr": 1e-6}, {"task": "gsm8k", "trainer.lr": 1e-6}]
    plan = plan_dict(points, seeds=None)
    sweep = make_sweep(tmp_path, plan)
    write_job(sweep, plan["jobs"][0], val=[0.5])
    pngs = [p for p in write_report(sweep) if p.suffix == ".png"]
    assert sorted(p.name for p in pngs) == ["learning_curves.png", "val_reward_mean_vs_task.png"]


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="rllm-sweeps")
    add_report_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return args.func(args)


def test_cli_prints_table_and_writes_files(tmp_path, capsys):
    sweep = finished_sweep(tmp_path)
    assert run_cli("report", str(sweep), "--no-plots") == 0
    out, err = capsys.readouterr()
    assert "Sweep s-test" in out and "4 jobs: 4 completed" in out and "best val_reward_mean" in out
    assert "wrote 3 files" in err
    assert not list((sweep / "report").glob("*.png"))
    assert run_cli("report", str(sweep), "--no-plots", "--format", "csv") == 0
    out, _ = capsys.readouterr()
    assert out.startswith("index,trainer.lr,rollout.n,seed,status,")


@pytest.mark.parametrize("what", ["missing", "empty", "job_dir", "bad_plan"])
def test_cli_error_on_non_sweep_dir(tmp_path, capsys, what):
    path = tmp_path / "x"
    if what == "empty":
        path.mkdir()
    elif what == "job_dir":
        sweep = finished_sweep(tmp_path)
        path = next((sweep / "jobs").iterdir())
    elif what == "bad_plan":
        path.mkdir()
        (path / "plan.json").write_text("{not json")
    assert run_cli("report", str(path)) == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: ") and "Traceback" not in err and out == ""
    expected = {
        "missing": "no such directory",
        "empty": "is not a sweep directory",
        "job_dir": "one job's directory",
        "bad_plan": "not valid JSON",
    }[what]
    assert expected in err


def test_a_minimizing_sweeps_best_comes_from_the_validation_history_by_its_goal(tmp_path):
    # A job's own `best` was once always the maximum; the report reads each validation instead.
    plan = plan_dict([{"trainer.lr": 1e-3}], seeds=None, metric={"name": "val_loss", "goal": "minimize"})
    sweep = make_sweep(tmp_path, plan)
    job = plan["jobs"][0]
    history = [{"step": 2, "val_loss": 0.9}, {"step": 4, "val_loss": 0.3}, {"step": 6, "val_loss": 0.6}]
    write_job(sweep, job, val=[], steps=6, validations=history)
    result = JobResult.read(job_dir_of(sweep, job))
    result.final, result.best = {"val_loss": 0.6}, {"val_loss": 0.9}  # a maximum, the wrong way round
    result.write(job_dir_of(sweep, job))
    row = build_report(sweep).jobs[0]
    assert row.best["val_loss"] == 0.3 and row.final["val_loss"] == 0.6


def test_a_jobs_time_covers_every_attempt_not_only_the_last(tmp_path):
    from rllm_sweeps.records import attempts

    plan = plan_dict([{"trainer.lr": 1e-3}], seeds=None)
    sweep = make_sweep(tmp_path, plan)
    job_dir = write_job(sweep, plan["jobs"][0], started_at=2000.0, wall_time_s=30.0, restarts=1, attempts=2)
    events = [(Started, 1000.0, "7"), (Ended, 1100.0, "7"), (Started, 1970.0, "8"), (Ended, 2030.0, "8")]
    for event, at, sid in events:
        attempts.append_event(job_dir, event(time=at, scheduler_id=sid, generation=1))
    report = build_report(sweep)
    assert report.jobs[0].wall_time_s == 100.0 + 60.0  # both attempts, not the last one's 30 s
    assert report.jobs[0].attempts == 2
    table = render_table(report)
    assert "attempts" in table and "2m40s" in table


def test_a_metric_that_never_left_0_is_said_plainly_and_the_best_on_a_tie_says_it_is_a_tie(tmp_path):
    # task=gsm8k with the tiny model: every job's reward stays 0; the best point means nothing.
    sweep = finished_sweep(tmp_path, values=(0.0, 0.0, 0.0, 0.0))
    for job_dir in sorted((sweep / "jobs").iterdir()):  # every validation 0, not only the last
        result = JobResult.read(job_dir)
        result.validations = [{"step": 2, "val_reward_mean": 0.0}, {"step": 4, "val_reward_mean": 0.0}]
        result.best = {"val_reward_mean": 0.0}
        result.write(job_dir)
    report = build_report(sweep)
    table, markdown = render_table(report), render_markdown(report)
    assert report.best[0].tied == [1]
    assert "(a tie: all 2 points give the same)" in table and "(a tie: all 2 points give the same)" in markdown
    note = "val_reward_mean was 0 in all 4 completed jobs: it never left 0"
    assert note in table and note in markdown


def test_a_metric_equal_in_every_job_is_said_and_one_that_moved_is_not(tmp_path):
    flat = build_report(finished_sweep(tmp_path / "flat", values=(0.5, 0.5, 0.5, 0.5)))
    assert any("was 0.5 in all 4 completed jobs: it never moved" in n for n in flat.notes)
    moved = build_report(finished_sweep(tmp_path / "moved"))
    assert not moved.best[0].tied and not any("never" in n for n in moved.notes)
    assert "tie" not in render_table(moved)


def test_a_tie_between_some_points_names_them():
    from rllm_sweeps.records.plan import Metric
    from rllm_sweeps.report.model import Aggregate, PointRow, best_point

    def point(i: int, mean: float) -> PointRow:
        return PointRow(i, f"p{i}", {}, [], [], [i], [None], 1, {"m": Aggregate(mean, None, 1)})

    best = best_point([point(0, 0.2), point(1, 0.7), point(2, 0.7), point(3, 0.1)], Metric("m", "maximize"))
    assert best.point.point_index == 1 and best.tied == [2]


def test_a_truncated_result_json_shows_as_no_result_with_a_note_that_names_it(tmp_path):
    sweep = finished_sweep(tmp_path)
    damaged = sorted((sweep / "jobs").iterdir())[1]
    text = (damaged / "result.json").read_text()
    (damaged / "result.json").write_text(text[: len(text) // 2])  # a disk that filled up mid-write
    report = build_report(sweep)
    assert report.jobs[1].status == NO_RESULT and "cannot be read" in report.jobs[1].error
    table = render_table(report)
    assert (
        f"1 job shown no-result has a result.json that cannot be read (truncated or not JSON): {damaged.name}" in table
    )
