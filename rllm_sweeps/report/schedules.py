"""The report's view of schedules (records/schedule.py): which jobs trained settings that changed
mid-run (PBT trials, and the confirmation replicates and reruns that replay one), and a schedule
in words for a legend. Such a job's plan.json values are only its first ones: a plot must not
place it by them."""

from __future__ import annotations

from collections.abc import Mapping

from rllm_sweeps.records.schedule import Schedule, read_schedule
from rllm_sweeps.report.model import Report
from rllm_sweeps.report.render import fmt_value


def job_schedules(report: Report) -> dict[int, Schedule]:
    """Each job's schedule.json by job index (a PBT trial is the job of its index); empty where none."""
    return {j.index: read_schedule(j.job_dir) for j in report.jobs if j.job_dir is not None}


def changing(report: Report) -> dict[int, Schedule]:
    """The jobs whose schedule changes a setting mid-run (more than one segment)."""
    return {i: s for i, s in job_schedules(report).items() if len(s.segments) > 1}


def schedule_words(schedule: Schedule, names: Mapping[str, str] | None = None) -> str:
    """'lr 0.00123 → 0.001 (after step 5)': each setting the schedule changes, its values in order."""
    parts = []
    for field in sorted({k for seg in schedule.segments for k in seg.settings}):
        values, steps = [], []
        for seg in schedule.segments:
            if field in seg.settings and (not values or seg.settings[field] != values[-1]):
                values.append(seg.settings[field])
                steps.append(seg.start_step)
        if len(values) > 1:
            at = ", ".join(str(s) for s in steps[1:])
            name = (names or {}).get(field, field)
            parts.append(f"{name} {' → '.join(fmt_value(v) for v in values)} (after step {at})")
    return "; ".join(parts)
