"""Upgrades never strand a run: records as the releases before versioned records wrote them
(tests/data/records_v0/, no schema_version) read through today's models; a file of a newer
schema, or one that does not validate, is one error naming the file and the field; the
published JSON Schemas (docs/schemas/) are the models'."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rllm_sweeps.pbt.membership import read_membership
from rllm_sweeps.records import attempts
from rllm_sweeps.records.attempt_events import Ended, Started
from rllm_sweeps.records.launch import read_launch
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.manifest import SweepManifest, record_invocation
from rllm_sweeps.records.metric_rows import TrainRow, ValRow
from rllm_sweeps.records.metrics import MetricsLog, read_metrics
from rllm_sweeps.records.model import RecordError, version_of
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.schedule import Schedule, read_schedule
from rllm_sweeps.records.schemas import schemas
from rllm_sweeps.records.status import JobStatus
from rllm_sweeps.report.sweepdir import read_sweep_plan
from rllm_sweeps.study import SweepAttrs

REPO = Path(__file__).resolve().parents[1]
OLD = REPO / "tests" / "data" / "records_v0"


def test_a_sweep_directorys_records_of_before_versions_read_through_todays_models(tmp_path):
    manifest = SweepManifest.read(OLD)
    assert manifest is not None and manifest.sweep_id == "c4adb909" and manifest.schema_version == 1
    plan = read_sweep_plan(OLD / "plan.json")
    assert plan.facts.swept == ("trainer.lr",) and len(plan.jobs) == 2 and plan.jobs[1].resources is not None
    result = JobResult.read(OLD / "job")
    assert result is not None and result.status is JobStatus.COMPLETED and result.exports.final is not None
    launch = read_launch(OLD / "job" / "launch.1.json")
    assert launch.generation == 1 and launch.metrics[0].name == "val_reward_mean"
    # a later command appends to the old manifest's history; what is written is today's version
    sweep = tmp_path / "sweep"
    shutil.copytree(OLD, sweep)
    again = record_invocation(sweep, sweep_id="c4adb909", family="c4adb909", command=["x"], launcher="local")
    assert again.created_at == manifest.created_at and len(again.history) == 1
    assert json.loads((sweep / "manifest.json").read_text())["schema_version"] == version_of(SweepManifest)


def test_a_pbt_trials_membership_and_schedule_of_before_versions_read_on_requeue():
    membership = read_membership(OLD)
    assert membership is not None and membership.trial == 2 and membership.settings.interval == 3
    assert [m.domain.key for m in membership.settings.mutations] == ["trainer.lr", "algorithm.kl_beta"]
    schedule = read_schedule(OLD)
    assert schedule.settings_at(5) == {"lr": 0.0012} and schedule.parents[0][1].trial == 0
    assert read_schedule(OLD / "job") == Schedule()  # a plain job: none


def test_a_membership_older_still_names_the_missing_settings_and_the_fix_not_a_key_error(tmp_path):
    shutil.copy(OLD / "pbt_spec_shape.json", tmp_path / "pbt.json")
    with pytest.raises(RecordError) as err:
        read_membership(tmp_path)
    assert str(tmp_path / "pbt.json") in str(err.value) and "field 'settings'" in str(err.value)
    assert "run the sweep's command again" in str(err.value)


def test_the_optuna_studys_attribute_of_before_versions_reads():
    attrs = SweepAttrs.of_study({"rllm_sweeps": json.loads((OLD / "optuna_study_attrs.json").read_text())}, "s")
    assert attrs is not None and attrs.metrics == ["val_reward_mean"] and attrs.pruner == "median"
    assert SweepAttrs.of_study({}, "s") is None


def test_a_jobs_metrics_rows_and_attempt_events_of_before_versions_read_typed(tmp_path):
    rows = read_metrics(OLD / "job")
    assert [(r.kind, r.step) for r in rows] == [("val", 0), ("train", 1), ("train", 2), ("val", 2)]
    assert isinstance(rows[1], TrainRow) and rows[1].total_steps == 2 and rows[1].value("loss") is not None
    assert isinstance(rows[3], ValRow) and rows[3].value("val_num_samples") == 32
    start, end = attempts.read_events(OLD / "job")
    assert isinstance(start, Started) and start.forked and start.scheduler_id == "local-29756"
    assert isinstance(end, Ended) and end.exit_code == 0 and end.restart_count is None
    # a job resumed under this code keeps its old rows, rewritten in today's schema
    shutil.copytree(OLD / "job", tmp_path / "job")
    MetricsLog(tmp_path / "job", resume_from_step=1).close()
    kept = [json.loads(line) for line in JobPaths(tmp_path / "job").metrics.read_text().splitlines()]
    assert [r["step"] for r in kept] == [0, 1] and {r["schema_version"] for r in kept} == {version_of(TrainRow)}


def test_a_metrics_row_with_no_kind_is_an_error_naming_the_file_and_line_not_a_guess(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"kind": "train", "step": 1}\n{"step": 2, "loss": 0.1}\n')
    with pytest.raises(RecordError, match=r"metrics.jsonl:2: not a metrics row: field 'kind'"):
        read_metrics(tmp_path)


def test_a_record_of_a_newer_schema_says_to_upgrade(tmp_path):
    data = json.loads((OLD / "job" / "result.json").read_text())
    (tmp_path / "result.json").write_text(json.dumps({**data, "schema_version": 99}))
    with pytest.raises(RecordError, match=r"result.json: written by a newer rllm-sweeps .*schema 99.*upgrade"):
        JobResult.read(tmp_path)


def test_a_result_that_does_not_validate_names_the_file_the_field_and_what_was_expected(tmp_path):
    data = json.loads((OLD / "job" / "result.json").read_text())
    (tmp_path / "result.json").write_text(json.dumps({**data, "steps": "two"}))
    with pytest.raises(RecordError, match=r"result.json: not a valid JobResult: field 'steps': .*integer.*got 'two'"):
        JobResult.read(tmp_path)


def test_a_command_on_a_sweep_with_a_record_that_does_not_validate_says_which_in_one_line_exit_2(tmp_path):
    import subprocess
    import sys

    from rllm_sweeps.records.layout import SweepPaths

    plan = json.loads((OLD / "plan.json").read_text())
    result = json.loads((OLD / "job" / "result.json").read_text())
    job = next(j for j in plan["jobs"] if j["config_hash"] == result["config_hash"])
    for name in ("manifest.json", "plan.json"):
        shutil.copy(OLD / name, tmp_path / name)
    job_dir = SweepPaths(tmp_path).job(job["index"], job["config_hash"]).root
    job_dir.mkdir(parents=True)
    (job_dir / "result.json").write_text(json.dumps({**result, "steps": "two"}))
    proc = subprocess.run(
        [sys.executable, "-m", "rllm_sweeps.cli", "status", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {job_dir / 'result.json'}: not a valid JobResult: field 'steps'")


def test_the_published_schemas_are_the_models():
    published = {p.name: p.read_text() for p in (REPO / "docs" / "schemas").glob("*.schema.json")}
    assert published == schemas(), "docs/schemas/ drifted from the models: run `rllm-sweeps schema --out docs/schemas`"


def test_a_jobs_ray_records_of_before_versions_read_typed():
    from rllm_sweeps.records.model import read_record
    from rllm_sweeps.records.ray_cluster import RayClusterRecord, RayWorkerRecord

    head = read_record(RayClusterRecord, OLD / "job" / "ray.json")
    assert head.ray and head.ended and head.address == "127.0.0.1:24608" and head.ports["gcs"] == 24608
    assert head.process_nodes == ("127.0.0.1",) and head.listening[0].port in head.ports.values()
    worker = read_record(RayWorkerRecord, OLD / "job" / "ray-worker-1.json")
    assert worker.head == head.address.replace("127.0.0.1", "10.0.0.1") and worker.token == "41.0"
    # a job without Ray, as the sweeps of before wrote it (tests/data/sweeps_v0/)
    job = REPO / "tests" / "data" / "sweeps_v0" / "grid_finished" / "jobs" / "0000-ecef3794"
    none = read_record(RayClusterRecord, job / "ray.json")
    assert none.ray is False and none.address is None and none.pids == () and "JaxBackend" in (none.why or "")
