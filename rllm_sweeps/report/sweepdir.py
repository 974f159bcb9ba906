"""Reading a sweep directory: the manifest, the plan, and each planned job's directory.

    SWEEP_DIR/manifest.json      the command, sweep id, creation time, launcher
    SWEEP_DIR/plan.json          the plan (records/plan.py: PlanRecord, written by sweep/plan.py)
    SWEEP_DIR/jobs/<index:04d>-<config_hash[:8]>/   result.json, metrics.jsonl, config.yaml, job.log

Plan jobs are matched to job directories by the config hash in each directory's
result.json (a directory's name is a hint, not the key); a directory with no result.json
(the job died before writing one) is matched by the short hash in its name.

Only the standard library and rllm_sweeps' records are imported here: reading a sweep
directory must stay fast and must not need the training stack. (A plan.json of schema 1,
which does not state its facts, is the exception: the spec parser derives them, once.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rllm_sweeps.records.layout import JOBS_DIR, MANIFEST_FILE, PLAN_FILE, RESULT_FILE, JobPaths
from rllm_sweeps.records.manifest import SweepManifest
from rllm_sweeps.records.model import RecordError, json_data, load
from rllm_sweeps.records.plan import PlanRecord
from rllm_sweeps.records.result import JobResult


class ReportError(Exception):
    """A sweep directory that cannot be read; the message says why and what to pass instead."""


@dataclass
class SweepDir:
    path: Path
    plan: PlanRecord
    manifest: SweepManifest | None = None  # None when manifest.json is missing
    results: dict[Path, JobResult] = field(default_factory=dict)  # every jobs/*/result.json that reads
    unreadable: dict[Path, str] = field(default_factory=dict)  # those that do not: why (RecordError)

    @property
    def jobs_dir(self) -> Path:
        return self.path / JOBS_DIR

    def job_dir_of(self, index: int, config_hash: str) -> tuple[Path | None, JobResult | None]:
        """The directory of the planned job (index, config_hash), with its result (None when
        it has none). Several directories with the hash: a completed (or pruned) one first, as
        resume sees it, then the one named for this index, then the most recently started.
        No directory: (None, None), the job never started."""
        matches = [(d, r) for d, r in self.results.items() if r.config_hash == config_hash]
        if matches:
            prefix = JobPaths.index_prefix(index)
            return max(
                matches,
                key=lambda m: (m[1].status.is_final, m[0].name.startswith(prefix), m[1].started_at or 0),
            )
        if config_hash and self.jobs_dir.is_dir():
            suffix = JobPaths.hash_suffix(config_hash)
            bare = sorted(d for d in self.jobs_dir.glob(f"*{suffix}") if d.is_dir() and d not in self.results)
            named = [d for d in bare if d.name.startswith(JobPaths.index_prefix(index))]
            if named or bare:
                return (named or bare)[0], None
        return None, None

    def unplanned(self, planned_hashes: set[str]) -> list[Path]:
        """Job directories whose result.json names a config the plan does not have."""
        return sorted(d for d, r in self.results.items() if r.config_hash not in planned_hashes)


def not_a_sweep_dir(path: Path) -> str | None:
    """Why `path` is not a sweep directory, with the one to pass instead where it is near (a job's
    directory: its sweep's), or None when it is one. `report` and `status` say the same."""
    if not path.exists():
        return f"{path}: no such directory"
    if not path.is_dir():
        return f"{path} is a file, not a sweep directory"
    if (path / PLAN_FILE).is_file():
        return None
    hint = ""
    if (path / RESULT_FILE).is_file() or path.parent.name == JOBS_DIR:
        sweep = path.parent.parent
        hint = f"; it is one job's directory: pass its sweep directory ({sweep})"
        if not (sweep / PLAN_FILE).is_file():
            hint = "; it is the directory of a job run by hand: read its result.json and metrics.jsonl"
    elif (path.parent / PLAN_FILE).is_file():
        hint = f"; did you mean {path.parent}?"
    return (
        f"{path} is not a sweep directory (it has no {PLAN_FILE}; a sweep directory holds "
        f"{MANIFEST_FILE}, {PLAN_FILE} and {JOBS_DIR}/){hint}"
    )


def open_sweep_dir(path: Path | str) -> SweepDir:
    """Read manifest.json, plan.json and every job's result.json. Raises ReportError,
    saying what is wrong, when `path` is not a sweep directory."""
    path = Path(path)
    if (problem := not_a_sweep_dir(path)) is not None:
        raise ReportError(problem)
    try:
        plan = read_sweep_plan(path / PLAN_FILE)
        manifest = SweepManifest.read(path)
        results: dict[Path, JobResult] = {}
        unreadable: dict[Path, str] = {}
        jobs_dir = path / JOBS_DIR
        for job_dir in sorted(jobs_dir.iterdir()) if jobs_dir.is_dir() else ():
            if job_dir.is_dir() and (result := _job_result(job_dir, unreadable)) is not None:
                results[job_dir] = result
    except RecordError as err:
        raise ReportError(str(err)) from None
    except OSError as err:
        raise ReportError(f"{err.filename}: cannot be read ({err.strerror or err})") from None
    return SweepDir(path, plan, manifest, results, unreadable)


def _job_result(job_dir: Path, unreadable: dict[Path, str]) -> JobResult | None:
    """A job's result; one that does not read (cut short by a full disk, not a job record) is
    kept aside with why, and its job shows as having none (the report's note names it)."""
    try:
        return JobResult.read(job_dir)
    except RecordError as err:
        unreadable[job_dir] = str(err)
        return None


def read_sweep_plan(path: Path) -> PlanRecord:
    """plan.json through its model; one of schema 1 (no facts) first gets them from its spec."""
    return load(PlanRecord, with_facts(json_data(path.read_text(), str(path))), str(path))


def with_facts(data: Any) -> Any:
    """A plan.json of schema 1 with the facts it lacks, from its stored spec (imported here only:
    the spec parser needs Hydra, and records/ is below it)."""
    if not isinstance(data, dict) or int(data.get("schema_version") or 1) >= 2 or "seed_key" in data:
        return data
    from rllm_sweeps.records.plan import migrate_spec
    from rllm_sweeps.sweep.spec import stored_plan_facts

    spec = data.get("spec")
    facts = stored_plan_facts(migrate_spec(spec, 1) if isinstance(spec, dict) else {})
    return {**data, "metrics": facts.metrics, "seed_key": facts.seed_key, "swept": facts.swept}
