"""Records on shared storage are readable by colleagues: the atomic writers give a file the mode a
plain open() would (0644 under umask 022), not mkstemp's 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rllm_sweeps.records.atomic import write_json_atomic, write_text_atomic
from rllm_sweeps.records.result import JobResult

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_json_and_text_records_are_group_and_world_readable(tmp_path, umask_022):
    assert mode(write_json_atomic(tmp_path / "plan.json", {"a": 1})) == 0o644
    assert mode(write_text_atomic(tmp_path / "jobs.csv", "a,b\n")) == 0o644
    assert mode(JobResult(status="completed", config_hash="x").write(tmp_path)) == 0o644


def test_a_report_is_readable_by_everyone_who_can_read_the_sweep(tmp_path, umask_022):
    from rllm_sweeps.report import write_report
    from rllm_sweeps.sweep.planner import plan_sweep

    sweep = tmp_path / "sweep"
    assert mode(plan_sweep(["trainer.lr=1e-3,2e-3"], validate=False).write(sweep)) == 0o644  # plan.json
    for path in write_report(sweep, plots=False):  # jobs.csv, points.csv, report.md
        assert mode(path) == 0o644, path


def test_no_other_module_writes_records_through_its_own_temporary_file():
    users = [
        p.relative_to(REPO).as_posix()
        for p in (REPO / "rllm_sweeps").rglob("*.py")
        if "mkstemp" in p.read_text() or "NamedTemporaryFile" in p.read_text()
    ]
    assert users == ["rllm_sweeps/records/atomic.py"]
