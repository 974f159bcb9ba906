"""What a job records of where it ran (package versions, git revision, its process starts) and the
libraries' log levels it runs with."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import logging
import os
import subprocess
import sys
from pathlib import Path

from rllm_sweeps.records.attempts import read_attempts
from rllm_sweeps.records.result import JobResult

VERSIONED_PACKAGES = ("rllm-sweeps", "skyrl", "jax", "ray", "hydra-core", "optuna", "submitit", "torch")
LIBRARY_LOGS_ENV = "RLLM_SWEEPS_LIBRARY_LOGS"  # "info": keep SkyRL's own INFO lines in the job's log


def package_versions() -> dict[str, str]:
    versions = {"python": sys.version.split()[0]}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def git_revision() -> str | None:
    """The revision of the package's own files when they are a git work tree's (a checkout, installed
    editable), else None (an installed wheel)."""
    repo = Path(str(importlib.resources.files("rllm_sweeps")))
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if rev.returncode != 0:
        return None
    return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def process_starts(job_dir: Path, previous: JobResult | None, chash: str) -> int:
    """This job's process starts, this one included: a launcher records each in attempts.jsonl; a job
    run by hand again (an interrupted one resumed) counts on from its own earlier record."""
    recorded = len(read_attempts(job_dir))  # the launcher recorded this attempt's start
    earlier = previous.attempts if previous is not None and previous.config_hash == chash else 0
    return max(1, recorded, earlier + 1)


def quiet_library_logs() -> None:
    """SkyRL logs every optimizer step and checkpoint at INFO; our progress lines say it shorter.
    SkyRL sets its logger's level when `skyrl.utils.log` is first imported, so that comes first:
    the level set here then holds whether SkyRL was imported already (a job forked from the local
    launcher's fork server) or is imported later."""
    import skyrl.utils.log  # noqa: F401

    level = logging.INFO if os.environ.get(LIBRARY_LOGS_ENV, "").lower() == "info" else logging.WARNING
    for name in ("skyrl", "absl", "jax._src.xla_bridge"):
        logging.getLogger(name).setLevel(level)
    if level > logging.INFO and not any(isinstance(f, _NoTensorflowNotice) for f in logging.getLogger("absl").filters):
        logging.getLogger("absl").addFilter(_NoTensorflowNotice())


class _NoTensorflowNotice(logging.Filter):
    """Drops the warning a library of JAX's (etils' gfile) gives on every run without TensorFlow,
    which this project never uses ("Tensorflow library not found, ... GCS paths cannot be accessed")."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.getMessage()).startswith("Tensorflow library not found")


__all__ = ["LIBRARY_LOGS_ENV", "git_revision", "package_versions", "process_starts", "quiet_library_logs"]
