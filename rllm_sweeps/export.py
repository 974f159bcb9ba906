"""`rllm-sweeps export PATH [--best | --job ID] [--merge] --out DIR`: a trained policy, usable outside.

Every job exports its policies itself (training/policy_export.py: export/final/, export/best/, named in
result.json). This command hands one over: a job's (PATH is a job directory, or a sweep's with
--job), or a sweep's winner (--best: report/best_model.py says which). --out gets the
PEFT adapter, or with --merge a whole Hugging Face checkpoint (models/merge.py). Never inside a
sweep's records.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from rllm_sweeps.records.layout import BEST_POLICY, FINAL_POLICY, JobPaths, SweepPaths, sweep_holding
from rllm_sweeps.records.result import ExportedPolicy, JobResult


class ExportRefused(ValueError):
    """What was asked cannot be exported; the message says what and what to give instead."""


@dataclass(frozen=True)
class Chosen:
    """The job whose policy is handed over, and why it was chosen."""

    job_dir: Path
    result: JobResult
    why: str  # "job 0001-ab12cd34", "the sweep's best by val_reward_mean (0.75)"


def is_sweep(path: Path) -> bool:
    paths = SweepPaths(path)
    return paths.plan.is_file() or paths.manifest.is_file()


def chosen_job(path: Path, best: bool, job: str | None) -> Chosen:
    """The job PATH with --best / --job names (module docstring)."""
    if not path.is_dir():
        raise ExportRefused(f"{path} is not a directory: give a sweep's or a job's directory")
    if not is_sweep(path):
        if best or job:
            raise ExportRefused(f"{path} is not a sweep directory: --best and --job choose among a sweep's jobs")
        result = JobResult.read(path)
        if result is None:
            raise ExportRefused(f"{path} has no readable result.json: give a job's or a sweep's directory")
        return Chosen(path, result, f"job {path.name}")
    if job:
        return _sweep_job(path, job)
    if best:
        return sweep_winner(path)
    raise ExportRefused(f"{path} is a sweep: add --best (its winner) or --job ID (one of its jobs)")


def _sweep_job(sweep_dir: Path, job: str) -> Chosen:
    jobs = SweepPaths(sweep_dir).job_dirs()
    found = [d for d in jobs if d.name == job or (job.isdigit() and d.name.startswith(JobPaths.index_prefix(int(job))))]
    if len(found) != 1:
        names = ", ".join(d.name for d in jobs[:6]) + (" ..." if len(jobs) > 6 else "")
        raise ExportRefused(f"no single job {job!r} in {sweep_dir}: give a job's name or plan index ({names})")
    result = JobResult.read(found[0])
    if result is None:
        raise ExportRefused(f"{found[0]} has no readable result.json: the job has not run; give another --job")
    return Chosen(found[0], result, f"job {found[0].name}")


def sweep_winner(sweep_dir: Path) -> Chosen:
    """The sweep's winner (report/best_model.py)."""
    from rllm_sweeps.report.model import build_report

    best = build_report(sweep_dir).best_model
    if best is None:
        raise ExportRefused(f"{sweep_dir} has no completed job that reports its metric yet: no winner to export")
    result = JobResult.read(best.job_dir)
    if result is None:
        raise ExportRefused(f"{best.job_dir}'s result.json cannot be read: give another --job")
    value = f"{best.metric.name} {best.value:.4g}"
    return Chosen(best.job_dir, result, f"{best.why}: job {best.job_dir.name} ({value})")


def exported(chosen: Chosen, which: str) -> Path:
    """The adapter directory of the chosen job's `which` policy."""
    exports = chosen.result.exports
    policy: ExportedPolicy | None = exports.final if which == FINAL_POLICY else exports.best
    if policy is None:
        why = exports.not_exported or (
            "it validated after no training step"
            if which == BEST_POLICY and exports.final
            else f"it exported none (still running, or run before jobs exported their policy: "
            f"`rllm-sweeps rerun {chosen.job_dir}` trains it again)"
        )
        raise ExportRefused(f"{chosen.why} has no {which} policy: {why}")
    adapter = chosen.job_dir / policy.path
    if not adapter.is_dir():
        raise ExportRefused(f"{adapter} is missing (named in {JobPaths(chosen.job_dir).result}): was it deleted?")
    return adapter


def cmd_export(args: argparse.Namespace) -> int:
    """Hand over a trained policy: a job's, or a sweep's winner, as a PEFT adapter or merged."""
    out = Path(args.out)
    if (sweep := sweep_holding(out)) is not None:
        print(f"error: {out} is inside the records of sweep {sweep.root}: give another --out", file=sys.stderr)
        return 2
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(f"error: {out} exists and is not an empty directory: give a new --out", file=sys.stderr)
        return 2
    try:
        chosen = chosen_job(Path(args.path), args.best, args.job)
        adapter = exported(chosen, args.policy)
    except ExportRefused as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if out.exists():
        out.rmdir()
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.merge:
        from rllm_sweeps.models.merge import adapter_base_model, merge_adapter

        base = args.base_model or adapter_base_model(adapter)
        if not Path(base).is_dir():
            print(
                f"error: the base model {base} (named in {adapter}/adapter_config.json) is not on this machine: "
                "give its directory with --base-model",
                file=sys.stderr,
            )
            return 2
        merge_adapter(adapter, out, base)
        print(f"{chosen.why}: its {args.policy} policy merged into {base}: {out}")
    else:
        shutil.copytree(adapter, out)
        print(f"{chosen.why}: its {args.policy} policy (PEFT adapter): {out}")
    return 0


def add_export_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("export", help=cmd_export.__doc__)
    parser.add_argument("path", help="a sweep's directory, or a job's (it holds result.json)")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--best", action="store_true", help="the sweep's winner (or confirmed best)")
    choice.add_argument("--job", help="one job of the sweep: its directory name or plan index")
    parser.add_argument(
        "--policy",
        choices=(FINAL_POLICY, BEST_POLICY),
        default=FINAL_POLICY,
        help="the job's policy as training ended (final, what a sweep ranks) or at its best validation",
    )
    parser.add_argument("--merge", action="store_true", help="write a whole Hugging Face checkpoint (base + adapter)")
    parser.add_argument("--base-model", help="--merge: the base model's directory (default: the adapter's own)")
    parser.add_argument("--out", required=True, help="a new directory, outside every sweep's records")
    parser.set_defaults(func=cmd_export)
    return parser
