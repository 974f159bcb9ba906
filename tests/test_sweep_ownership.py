"""Which sweep may use a sweep directory (sweep/ownership.py), where a rerun goes and what counts as
inside a sweep's records (records/layout.py), decided without running a job."""

from __future__ import annotations

from rllm_sweeps.records.layout import SweepPaths, sweep_holding
from rllm_sweeps.records.manifest import SweepManifest, record_invocation
from rllm_sweeps.records.model import write_record
from rllm_sweeps.records.plan import PlanFacts, PlanRecord, Totals
from rllm_sweeps.rerun import default_out
from rllm_sweeps.sweep.ownership import refusal, sweep_family, sweep_id

SPEC = {"method": "optuna", "parameters": {"trainer.lr": {"min": 1e-4, "max": 1e-2}}, "budget": 12}
BASE = ["trainer.total_batches=2"]


def made(tmp_path, spec=SPEC, family=True):  # noqa: ANN001
    sweep_dir = tmp_path / "sweep"
    record_invocation(
        sweep_dir,
        sweep_id=sweep_id(spec, BASE),
        family=sweep_family(spec, BASE) if family else None,
        command=["train.py", "-m", "x"],
        launcher="local",
    )
    return sweep_dir


def test_the_same_sweep_and_its_extension_by_a_larger_budget_may_use_its_directory(tmp_path):
    sweep_dir = made(tmp_path)
    assert refusal(tmp_path / "empty", sweep_id(SPEC, BASE), sweep_family(SPEC, BASE)) is None
    assert refusal(sweep_dir, sweep_id(SPEC, BASE), sweep_family(SPEC, BASE)) is None
    larger = {**SPEC, "budget": 24}
    assert sweep_id(larger, BASE) != sweep_id(SPEC, BASE)
    assert refusal(sweep_dir, sweep_id(larger, BASE), sweep_family(larger, BASE)) is None


def test_another_sweep_is_refused_naming_both_ids_and_an_older_manifest_gets_its_family_from_the_plan(tmp_path):
    other = {**SPEC, "parameters": {"trainer.lr": {"min": 1e-3, "max": 1e-1}}}
    for family in (True, False):
        sweep_dir = made(tmp_path / str(family), family=family)
        totals = Totals(0, 0, 1, 0, 0, 0, 0.0, 0.0)
        facts = PlanFacts((), "trainer.seed", ("trainer.lr",))
        plan = PlanRecord.of(facts, spec=SPEC, source="cli", base_overrides=tuple(BASE), complete=True, totals=totals)
        write_record(sweep_dir / "plan.json", plan)
        why = refusal(sweep_dir, sweep_id(other, BASE), sweep_family(other, BASE))
        assert f"holds sweep {sweep_id(SPEC, BASE)}" in why and f"another sweep, {sweep_id(other, BASE)}" in why
        assert "hydra.sweep.dir=DIR" in why
        larger = {**SPEC, "budget": 24}  # without a recorded family: the plan's
        assert refusal(sweep_dir, sweep_id(larger, BASE), sweep_family(larger, BASE)) is None


def test_the_manifest_keeps_the_first_command_and_appends_each_later_one(tmp_path):
    sweep_dir = made(tmp_path)
    first = SweepManifest.read(sweep_dir)
    record_invocation(sweep_dir, sweep_id="other", family=None, command=["again"], launcher="slurm")
    again = SweepManifest.read(sweep_dir)
    assert (again.sweep_id, again.command, again.created_at) == (first.sweep_id, first.command, first.created_at)
    assert [(h.command, h.launcher, h.sweep_id) for h in again.history] == [(["again"], "slurm", "other")]


def test_a_rerun_of_a_sweeps_job_goes_to_its_reruns_and_any_other_job_beside_its_directory(tmp_path):
    sweep_dir = made(tmp_path)
    job = SweepPaths(sweep_dir).jobs / "0003-abcdef12"
    job.mkdir(parents=True)
    assert default_out(job) == sweep_dir.resolve() / "reruns" / "0003-abcdef12" / "1"
    (sweep_dir / "reruns" / "0003-abcdef12" / "1").mkdir(parents=True)
    assert default_out(job).name == "2"
    hand = tmp_path / "outputs" / "trainer.lr=0.001"
    hand.mkdir(parents=True)
    assert default_out(hand) == tmp_path / "outputs" / "trainer.lr=0.001-rerun"


def test_inside_a_sweeps_records_is_its_directory_its_jobs_and_confirmation_but_not_its_reruns(tmp_path):
    sweep_dir = made(tmp_path)
    for inside in (sweep_dir, sweep_dir / "plan.json", sweep_dir / "jobs" / "x", sweep_dir / "confirm" / "jobs" / "y"):
        assert sweep_holding(inside) == SweepPaths(sweep_dir.resolve())
    assert sweep_holding(sweep_dir / "reruns" / "x" / "1") is None
    assert sweep_holding(tmp_path / "elsewhere") is None
    assert SweepPaths(sweep_dir).dry_run_plan.parent == sweep_dir.parent
