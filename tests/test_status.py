"""`rllm-sweeps status` from a sweep directory's records (pure reading: nothing runs)."""

from __future__ import annotations

import json

from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import JobStatus
from rllm_sweeps.status import status_rows


def test_elapsed_covers_every_attempt_and_attempts_are_counted(tmp_path):
    job_dir = tmp_path / "jobs" / "0000-abcdef12"
    job_dir.mkdir(parents=True)
    (tmp_path / "plan.json").write_text("{}")
    JobResult(status=JobStatus.COMPLETED, config_hash="abcdef12", started_at=1970.0, ended_at=2030.0, restarts=1).write(
        job_dir
    )
    events = [("start", 1000.0, "local-1"), ("end", 1100.0, "local-1"), ("start", 1970.0, "local-2")]
    lines = [json.dumps({"event": e, "time": t, "scheduler_id": s, "generation": 1}) for e, t, s in events]
    JobPaths(job_dir).attempts.write_text("\n".join(lines) + "\n")  # the last end was never seen
    (row,) = status_rows(tmp_path)
    assert row["elapsed"] == "160s"  # 100 s + 60 s (to the result's end), not the last attempt's 60 s
    assert row["attempts"] == "2" and row["restarts"] == "1"


def test_status_on_a_job_directory_names_its_sweep_directory(tmp_path, capsys):
    import argparse

    from rllm_sweeps.status import cmd_status

    job_dir = tmp_path / "jobs" / "0000-abcdef12"
    job_dir.mkdir(parents=True)
    (tmp_path / "plan.json").write_text("{}")
    JobResult(status=JobStatus.COMPLETED, config_hash="abcdef12").write(job_dir)
    assert cmd_status(argparse.Namespace(sweep_dir=str(job_dir))) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and f"it is one job's directory: pass its sweep directory ({tmp_path})" in err
