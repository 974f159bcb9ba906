"""records/ is the contract between the stages: the job states and failure kinds are enums whose
strings result.json keeps, and plan.json's jobs read back as PlannedJob."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.model import RecordError, dump, load, write_record
from rllm_sweeps.records.plan import PlanFacts, PlannedJob, PlanRecord, Totals, read_plan
from rllm_sweeps.records.resources import Resources
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import FailureKind, JobStatus


def test_result_json_keeps_the_status_and_failure_kind_strings_and_reads_them_back_as_enums(tmp_path):
    JobResult(status=JobStatus.FAILED, config_hash="h", failure_kind=FailureKind.OUT_OF_MEMORY).write(tmp_path)
    data = json.loads(JobPaths(tmp_path).result.read_text())
    assert (data["status"], data["failure_kind"]) == ("failed", "out-of-memory")
    back = JobResult.read(tmp_path)
    assert back.status is JobStatus.FAILED and back.failure_kind is FailureKind.OUT_OF_MEMORY


def test_only_completed_and_pruned_are_final_and_only_infrastructure_failures_are_retried():
    assert {s for s in JobStatus if s.is_final} == {JobStatus.COMPLETED, JobStatus.PRUNED}
    assert [k for k in FailureKind if k.is_infrastructure] == [FailureKind.INFRASTRUCTURE]
    assert all(k.is_user for k in FailureKind if k is not FailureKind.INFRASTRUCTURE)


def test_a_status_no_writer_knows_is_one_error_naming_the_file_and_the_field(tmp_path):
    JobPaths(tmp_path).result.write_text(json.dumps({"status": "exploded", "config_hash": "h"}))
    with pytest.raises(RecordError) as err:
        JobResult.read(tmp_path)
    assert str(JobPaths(tmp_path).result) in str(err.value) and "field 'status'" in str(err.value)
    assert "'completed'" in str(err.value)  # what was expected


def test_plan_json_jobs_and_totals_read_back_as_records_and_a_malformed_one_is_named(tmp_path):
    resources = Resources(nodes=1, gpus_per_node=0, cpus_per_task=2, jobs_per_gpu=1, mem_gb=8, time_min=60)
    job = PlannedJob(0, ["trainer.lr=0.1"], {"trainer.lr": 0.1}, "p", 0, 1, "h", resources, gpu_memory_gib=2.5)
    totals = Totals(1, 1, 1, 1, 0, 1, 0.5, 0.5)
    facts = PlanFacts((), "trainer.seed", ("trainer.lr",))
    written = PlanRecord.of(facts, spec={}, source="cli", base_overrides=(), complete=True, totals=totals, jobs=(job,))
    path = write_record(tmp_path / "plan.json", written)
    record = read_plan(path)
    assert record == written and record.jobs[0] == job and record.facts == facts
    data = json.loads(path.read_text())
    assert data["jobs"][0]["resources"] == dump(resources)  # plan.json keeps resources.*'s keys
    path.write_text(json.dumps({**data, "totals": {**data["totals"], "jobs": "many"}}))
    with pytest.raises(RecordError, match=r"plan.json: not a valid PlanRecord: field 'totals.jobs': .*got 'many'"):
        read_plan(path)


def test_resources_hold_every_key_of_the_configs_resources_and_an_incomplete_record_is_named():
    from omegaconf import OmegaConf

    from rllm_sweeps.records.resources import FIELDS

    # conf/config.yaml holds the defaults, and the record every key of them: no reader needs one of its own.
    conf = OmegaConf.load(Path(__file__).resolve().parents[1] / "conf" / "config.yaml")
    assert set(FIELDS) == set(conf.resources)
    full = {"nodes": 2, "gpus_per_node": 4, "cpus_per_task": 8, "jobs_per_gpu": 1, "mem_gb": 64, "time_min": 90}
    assert load(Resources, full, "x").hours() == (3.0, 12.0)
    with pytest.raises(RecordError, match="field 'cpus_per_task': field required, got nothing"):
        load(Resources, {"nodes": 1, "gpus_per_node": 0, "time_min": 60}, "x")
