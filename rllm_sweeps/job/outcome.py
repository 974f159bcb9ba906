"""How a run that did not complete is recorded (stopped, diverged, failed: the error, its kind, and
what to change), and the line each outcome ends the job's output with."""

from __future__ import annotations

import sys
import traceback

from rllm_sweeps.failures import failure_kind, out_of_memory_fix
from rllm_sweeps.job.config import JobConfig
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.metrics import DEFAULT_METRIC, never_moved
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import FailureKind, JobStatus
from rllm_sweeps.training.divergence import Diverged
from rllm_sweeps.training.memory_retry import MemoryExhausted


def record_failure(result: JobResult, err: BaseException, job: JobConfig, paths: JobPaths) -> None:
    """`result` as the run ended by `err`: stopped (KeyboardInterrupt: a signal outside the loop, or
    Ctrl-C twice), diverged (no traceback: the message says where and what to try) or failed."""
    if isinstance(err, KeyboardInterrupt):
        result.status, result.error = JobStatus.PREEMPTED, f"stopped by {err}"
    elif isinstance(err, Diverged):
        from rllm_sweeps.training.policy_export import discard_exports

        result.status, result.failure_kind = JobStatus.FAILED, FailureKind.DIVERGED
        result.divergence, result.error = err.divergence, str(err)
        why = f"nothing exported: training diverged at step {err.divergence.step}, the policy's weights are not finite"
        result.exports = discard_exports(paths, why)
    else:  # recorded; the caller turns it into the exit status
        _record_error(result, err, job)


def _record_error(result: JobResult, err: BaseException, job: JobConfig) -> None:
    from rllm_sweeps.training.skyrl_failure import skyrl_origin

    result.status = JobStatus.FAILED
    result.error = "".join(traceback.format_exception(err))[-4000:]
    result.failure_kind = failure_kind(err)
    if (origin := skyrl_origin(err, job.loop)) is not None:  # SkyRL's terse errors, placed
        result.error += f"\n{origin}"
    if isinstance(err, MemoryExhausted):  # its sizes and every retry at half size
        result.memory_fit = err.fit
    if result.failure_kind is FailureKind.OUT_OF_MEMORY:  # said plainly, with the fix, as the error's last line
        result.error += f"\nout of accelerator memory: {out_of_memory_fix(job.engine_settings, result.memory_fit)}"


def print_outcome(result: JobResult) -> None:
    if result.status is JobStatus.COMPLETED:
        reward = result.final.get(DEFAULT_METRIC)
        shown = f"{reward:.4f}" if isinstance(reward, int | float) else "not measured"
        seen = [float(v[DEFAULT_METRIC]) for v in result.validations if isinstance(v.get(DEFAULT_METRIC), int | float)]
        flat = never_moved(DEFAULT_METRIC, seen, f"every validation ({len(seen)})")
        print(
            f"done: {result.steps} steps in {result.wall_time_s:.0f}s, final {DEFAULT_METRIC}={shown}"
            + (f"; note: {flat}" if flat else "")
        )
    elif result.status is JobStatus.PRUNED:
        print(f"pruned at step {result.steps}: the trial's pruner stopped it")
    elif result.status is JobStatus.PREEMPTED:
        print(f"stopped after step {result.steps}: rerun the same command to resume", file=sys.stderr)
    else:
        print(f"failed: {(result.error or '').strip().splitlines()[-1]}", file=sys.stderr)


__all__ = ["print_outcome", "record_failure"]
