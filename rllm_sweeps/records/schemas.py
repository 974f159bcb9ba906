"""The published JSON Schemas of the records a sweep directory holds (`rllm-sweeps schema`,
docs/schemas/): one file per record, generated from its model, so other tools read the sweep
directory against what this release writes (tests/test_record_migrations.py fails when they drift)."""

from __future__ import annotations

import json
from pathlib import Path

from rllm_sweeps.records.model import adapter

# file name -> the record's model, imported where listed (pbt/ and study.py are above records/).
RECORDS = {
    "manifest": ("rllm_sweeps.records.manifest", "SweepManifest"),
    "plan": ("rllm_sweeps.records.plan", "PlanRecord"),
    "result": ("rllm_sweeps.records.result", "JobResult"),
    "metrics_row": ("rllm_sweeps.records.metric_rows", "MetricsRow"),  # a line of metrics.jsonl
    "attempt_event": ("rllm_sweeps.records.attempt_events", "AttemptEvent"),  # a line of attempts.jsonl
    "launch": ("rllm_sweeps.records.launch", "JobLaunch"),
    "schedule": ("rllm_sweeps.records.schedule", "Schedule"),
    "pbt": ("rllm_sweeps.pbt.membership", "PbtMembership"),
    "pbt_board_trial": ("rllm_sweeps.pbt.decision", "TrialState"),  # pbt_board/trial_<k>.json
    "optuna_study_attrs": ("rllm_sweeps.study", "SweepAttrs"),
    "ray": ("rllm_sweeps.records.ray_cluster", "RayClusterRecord"),  # a job's ray.json
    "ray_worker": ("rllm_sweeps.records.ray_cluster", "RayWorkerRecord"),  # a job's ray-worker-K.json
}


def schemas() -> dict[str, str]:
    """File name (`<record>.schema.json`) -> the JSON Schema's text."""
    import importlib

    out = {}
    for name, (module, cls) in RECORDS.items():
        model = getattr(importlib.import_module(module), cls)
        schema = adapter(model).json_schema(mode="serialization")
        out[f"{name}.schema.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return out


def write_schemas(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in schemas().items():
        (out / name).write_text(text)
        written.append(out / name)
    return written
