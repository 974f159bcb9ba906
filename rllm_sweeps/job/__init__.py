"""One training job, start to end, in its own directory; its modules in the order a job uses them:

config.py       JobConfig: the composed, validated tree read once, typed and frozen
start.py        the directory claimed (lock, attempt fence, earlier record, refusal) -> JobStart
run.py          run_job: start, resume point, train, record, stop
train.py        Ray up (where used), the engine's backend, the RL loop -> TrainingSummary
hooks.py        what the loop's hooks do (metrics.jsonl, trackers, exports, Optuna trial, PBT member)
stop_signal.py  SIGTERM/SIGINT/SIGUSR2 -> stop at the next step boundary
outcome.py      a run that did not complete, recorded; the outcome's line
provenance.py   versions, git revision, process starts; the libraries' log levels
"""

from rllm_sweeps.job.config import JobConfig
from rllm_sweeps.job.provenance import LIBRARY_LOGS_ENV, git_revision, package_versions
from rllm_sweeps.job.run import EXIT_PREEMPTED, run_job

__all__ = ["EXIT_PREEMPTED", "LIBRARY_LOGS_ENV", "JobConfig", "git_revision", "package_versions", "run_job"]
