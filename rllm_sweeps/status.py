"""`rllm-sweeps status SWEEP_DIR`: where each job of a sweep is now.

Per job: its scheduler id, state, node(s), GPUs, elapsed time, last metric and restarts, read
from the sweep directory (result.json, metrics.jsonl, submitit's files) and, for SLURM
jobs, from `sacct` in one call, for Ray jobs (hydra/launcher=ray_cluster) from Ray's job API, one
call per cluster.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from rllm_sweeps.records import attempts
from rllm_sweeps.records.attempt_events import Submitted
from rllm_sweeps.records.layout import SweepPaths
from rllm_sweeps.records.metrics import DEFAULT_METRIC, read_metrics
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import JobStatus
from rllm_sweeps.report.sweepdir import not_a_sweep_dir


def sacct_states(ids: list[str]) -> dict[str, dict[str, str]]:
    if not ids:
        return {}
    try:
        out = subprocess.run(
            ["sacct", "-n", "-X", "-P", "-j", ",".join(ids), "-o", "JobID,State,NodeList,Elapsed"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    rows = {}
    for line in out.splitlines():
        job_id, state, nodes, elapsed = line.split("|")
        rows[job_id] = {"state": state.split()[0], "node_list": nodes, "elapsed": elapsed}
    return rows


def ray_states(job_dirs: list[Path]) -> dict[str, dict[str, str]]:
    """Each Ray job's state, asked of the cluster its submission names (`ray_address`), where it answers."""
    by_address: dict[str, set[str]] = {}
    for job_dir in job_dirs:
        for event in attempts.read_events(job_dir):
            if isinstance(event, Submitted) and event.ray_address:
                by_address.setdefault(event.ray_address, set()).add(event.scheduler_id)
    rows: dict[str, dict[str, str]] = {}
    for address, ids in by_address.items():
        try:
            from ray.job_submission import JobSubmissionClient

            listed = JobSubmissionClient(address).list_jobs()
        except Exception:  # noqa: BLE001 (the cluster gone or unreachable: the records still say the rest)
            continue
        for job in listed:
            if job.submission_id in ids:
                rows[job.submission_id] = {
                    "state": job.status.value,
                    "node_list": f"ray:{(job.driver_node_id or '')[:8]}",
                }
    return rows


def status_rows(sweep_dir: Path) -> list[dict[str, str]]:
    job_dirs = SweepPaths(sweep_dir).job_dirs()
    ids = {d: attempts.latest_scheduler_id(d) for d in job_dirs}
    slurm = sacct_states([i for i in ids.values() if i and not i.startswith(attempts.RAY_ID_PREFIX)])
    slurm.update(ray_states(job_dirs))
    rows = []
    for job_dir in job_dirs:
        result = JobResult.read(job_dir)
        metrics = read_metrics(job_dir)
        last = metrics[-1] if metrics else None
        shown = [(k, last.value(k)) for k in (DEFAULT_METRIC, "reward_mean")] if last else []
        metric = next((f"{k}={v:.4g}" for k, v in shown if v is not None), "")
        sched = slurm.get(ids[job_dir] or "", {})
        runs = attempts.read_attempts(job_dir)
        # Every attempt's time, not only the last one's (a job still running counts to now).
        if runs:
            live = sched.get("state") in ("RUNNING", "PENDING") or (
                result is not None and result.status is JobStatus.RUNNING
            )
            last_end = time.time() if live else (result.ended_at if result else None) or (last.time if last else None)
            elapsed = f"{attempts.total_time_s(runs, last_end):.0f}s"
        else:
            elapsed = sched.get("elapsed") or (
                f"{(result.ended_at or time.time()) - result.started_at:.0f}s" if result and result.started_at else ""
            )
        rows.append(
            {
                "job": job_dir.name,
                "scheduler_id": ids[job_dir] or "-",  # SLURM job id or Ray job id
                "state": sched.get("state") or (result.status if result else "no-result"),
                "result": result.status if result else "-",
                "nodes": sched.get("node_list", "local"),
                "gpus": (result.gpus if result else None) or "-",  # the CUDA_VISIBLE_DEVICES it ran with
                "elapsed": elapsed,
                "step": str(last.step) if last else "",
                "last_metric": metric,
                "attempts": str(len(runs)),  # process starts, SLURM's requeues included
                "restarts": str(result.restarts if result else 0),  # resumes from a checkpoint
                "retries": str(result.retries if result else 0),  # after infrastructure failures
                "exported": _exported(result),  # the policies it exported (export/), or none
            }
        )
    return rows


def _exported(result: JobResult | None) -> str:
    """'final+best', 'final', 'none' (a job that says why: result.json's exports.not_exported) or '-'."""
    if result is None:
        return "-"
    exports = result.exports
    which = [name for name, policy in (("final", exports.final), ("best", exports.best)) if policy is not None]
    return "+".join(which) or ("none" if exports.not_exported else "-")


def cmd_status(args: argparse.Namespace) -> int:
    """Per job of a sweep: scheduler id, state, node(s), GPUs, elapsed, last metric, restarts, retries,
    exported policies; then where the best model is."""
    from rllm_sweeps.problems import ConfigError
    from rllm_sweeps.sweep.storage import readable_sweep_dir

    try:
        sweep_dir = readable_sweep_dir(args.sweep_dir)
    except ConfigError as err:
        print(f"error: {err.issues[0].message}", file=sys.stderr)
        return 2
    if (problem := not_a_sweep_dir(sweep_dir)) is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    rows = status_rows(sweep_dir)
    if not rows:
        print(f"{sweep_dir}: no job has started yet")
        return 0
    # Aligned by hand, not by rich (text_table.py): a row each job, and rich costs ~1 ms a row.
    columns = list(rows[0])
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for row in rows:
        print("  ".join(row[c].ljust(widths[c]) for c in columns))
    from rllm_sweeps.report.model import build_report
    from rllm_sweeps.report.sweepdir import ReportError

    try:  # where the winner's model is; a plan.json the report cannot read leaves the table as it is
        best = build_report(sweep_dir).best_model
    except ReportError:
        best = None
    if best is not None:
        print(f"\n{best.line()}")  # under the table, apart from its rows
    return 0


def add_status_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("status", help=cmd_status.__doc__)
    parser.add_argument("sweep_dir", help="a sweep directory (multirun/<project>/<sweep>), or its object store's URI")
    parser.set_defaults(func=cmd_status)
    return parser
