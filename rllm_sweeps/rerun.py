"""`rllm-sweeps rerun JOB_DIR`: train a job again from its records alone.

The job's overrides (result.json) and its schedule (schedule.json: a PBT trial's settings per
step range, records/schedule.py) go to a fresh job directory: a sweep's job to SWEEP_DIR/reruns/
<job name>/<k>/, never into jobs/ or any other of a sweep's records (nothing a rerun does changes a
completed job's or trial's records; the report lists reruns apart); the same seeds give the same
per-step metrics on the same code and packages, so a rerun warns where those differ from the
recorded ones.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from rllm_sweeps.app_command import app_command
from rllm_sweeps.override_text import override_key
from rllm_sweeps.records.layout import JobPaths, sweep_holding
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.schedule import read_schedule, write_schedule


def drift(recorded: JobResult, versions: dict[str, str], revision: str | None) -> list[str]:
    """One line per difference between the recorded code and packages and these."""
    lines = []
    if recorded.git_revision and revision and recorded.git_revision != revision:
        lines.append(f"git revision {revision} differs from the recorded {recorded.git_revision}")
    for name in sorted(set(recorded.versions) | set(versions)):
        was, now = recorded.versions.get(name), versions.get(name)
        if was != now:
            lines.append(f"{name} {now or 'not installed'} differs from the recorded {was or 'not installed'}")
    return lines


def default_out(job_dir: Path) -> Path:
    """Where a rerun goes: a sweep's job to the sweep's reruns/<job name>/<k>/ (never jobs/, which
    the sweep, its report and its search read as their own), any other job beside its directory."""
    paths = JobPaths(job_dir.resolve())
    if paths.in_sweep:
        return paths.sweep.next_rerun(job_dir.name).root
    return job_dir.with_name(job_dir.name + "-rerun")


def cmd_rerun(args: argparse.Namespace) -> int:
    """Train a job again from its records: its overrides and schedule, in a new directory."""
    from rllm_sweeps.job.provenance import git_revision, package_versions

    job_dir = Path(args.job_dir)
    recorded = JobResult.read(job_dir)
    if recorded is None:
        print(f"error: {job_dir} has no {JobPaths(job_dir).result.name}: give the directory of a job", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else default_out(job_dir)
    if (sweep := sweep_holding(out)) is not None:
        print(
            f"error: {out} is inside the records of sweep {sweep.root}: a rerun never writes there; "
            f"give another --out (or leave it out: {default_out(job_dir)})",
            file=sys.stderr,
        )
        return 2
    if JobResult.read(out) is not None:
        print(f"error: {out} already holds a job: give another --out", file=sys.stderr)
        return 2
    for line in drift(recorded, package_versions(), git_revision()):
        print(f"warning: {line}; the rerun may not reproduce the job's metrics", file=sys.stderr)
    schedule = read_schedule(job_dir)
    if schedule.segments:
        write_schedule(out, schedule)
    overrides = [o for o in recorded.overrides if not override_key(o).startswith("hydra.")]
    print(f"rerun of {job_dir} in {out}: train.py {' '.join(overrides)}", flush=True)
    return subprocess.run(app_command([*overrides, f"hydra.run.dir={out}"]), check=False).returncode


def add_rerun_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("rerun", help=cmd_rerun.__doc__)
    parser.add_argument("job_dir", help="a job's directory (it holds result.json)")
    parser.add_argument(
        "--out",
        help="the new job's directory (default: SWEEP_DIR/reruns/<job name>/<k> for a sweep's job, else JOB_DIR-rerun)",
    )
    parser.set_defaults(func=cmd_rerun)
    return parser
