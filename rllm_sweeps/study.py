"""Where a sweep's Optuna study lives, and how a job finds its trial.

The study is in a storage named by one string, its URL: a journal file (the default,
SWEEP_DIR/optuna.journal: the storage Optuna recommends on shared file systems, no server
to run) or a database URL (`sqlite:///...`, `postgresql://...`). A job of an Optuna sweep
gets its trial's address in its environment, not in its config, so its config hash is that
of the training configuration alone:

    RLLM_SWEEPS_OPTUNA_STORAGE   the storage URL (a journal file: its absolute path)
    RLLM_SWEEPS_OPTUNA_STUDY     the study name
    RLLM_SWEEPS_OPTUNA_TRIAL     the trial number
    RLLM_SWEEPS_OPTUNA_REPLICA   which seed replicate of the trial this job is, of how many: "0/3"

What every job of the sweep needs besides (the metric names, the pruner) is stored once on
the study itself, as its user attribute `rllm_sweeps` (`SweepAttrs`).

Only the standard library is imported here; Optuna is imported when a storage is opened.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

JOURNAL_FILE = "optuna.journal"
STUDY_ATTR = "rllm_sweeps"
ENV_STORAGE = "RLLM_SWEEPS_OPTUNA_STORAGE"
ENV_STUDY = "RLLM_SWEEPS_OPTUNA_STUDY"
ENV_TRIAL = "RLLM_SWEEPS_OPTUNA_TRIAL"
ENV_REPLICA = "RLLM_SWEEPS_OPTUNA_REPLICA"


@dataclass(frozen=True)
class TrialAddress:
    """One job's trial: the storage URL, the study, the trial number, and which seed replicate."""

    storage: str
    study: str
    trial: int
    replica: int = 0
    replicas: int = 1

    def to_env(self) -> dict[str, str]:
        return {
            ENV_STORAGE: self.storage,
            ENV_STUDY: self.study,
            ENV_TRIAL: str(self.trial),
            ENV_REPLICA: f"{self.replica}/{self.replicas}",
        }

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> TrialAddress | None:
        """The address in `environ`, or None outside an Optuna sweep. Raises ValueError,
        naming the variable, when the address is incomplete or malformed."""
        names = (ENV_STORAGE, ENV_STUDY, ENV_TRIAL)
        present = [n for n in names if environ.get(n)]
        if not present:
            return None
        missing = [n for n in names if n not in present]
        if missing:
            raise ValueError(f"an Optuna trial's address is incomplete: {', '.join(missing)} not set")
        try:
            trial = int(environ[ENV_TRIAL])
            replica, replicas = (int(x) for x in environ.get(ENV_REPLICA, "0/1").split("/"))
        except ValueError:
            raise ValueError(
                f"{ENV_TRIAL}={environ[ENV_TRIAL]!r} / {ENV_REPLICA}={environ.get(ENV_REPLICA)!r}: "
                "expected a trial number and 'replica/replicas'"
            ) from None
        if trial < 0 or not 0 <= replica < replicas:
            raise ValueError(f"{ENV_TRIAL}={trial}, {ENV_REPLICA}={replica}/{replicas}: out of range")
        return cls(environ[ENV_STORAGE], environ[ENV_STUDY], trial, replica, replicas)


@dataclass(frozen=True)
class SweepAttrs:
    """What the jobs of a sweep need from the sweep, stored on its study (user attribute `rllm_sweeps`)."""

    metrics: list[str]  # the objectives, in the study's order
    pruner: str = "none"  # rllm_sweeps.sweep.optuna_settings.PRUNERS
    pruner_options: dict[str, Any] = field(default_factory=dict)
    sweep_dir: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SweepAttrs:
        return cls(
            metrics=list(data.get("metrics") or []),
            pruner=str(data.get("pruner") or "none"),
            pruner_options=dict(data.get("pruner_options") or {}),
            sweep_dir=str(data.get("sweep_dir") or ""),
        )


def is_database_url(url: str) -> bool:
    return "://" in url


def storage_url(setting: str | None, sweep_dir: Path) -> str:
    """The storage URL of a sweep: the setting (a journal file path is made absolute, so a job
    in another directory finds it), or the default journal file in the sweep directory."""
    if setting is None:
        return str((Path(sweep_dir) / JOURNAL_FILE).resolve())
    if is_database_url(setting):
        return setting
    return str(Path(setting).expanduser().resolve())


def open_storage(url: str) -> Any:
    """The Optuna storage a URL names: a database URL, or else a journal file's path."""
    import optuna

    if is_database_url(url):
        return optuna.storages.RDBStorage(url)
    from optuna.storages.journal import JournalFileBackend

    Path(url).parent.mkdir(parents=True, exist_ok=True)
    return optuna.storages.JournalStorage(JournalFileBackend(url))


__all__ = [
    "ENV_REPLICA",
    "ENV_STORAGE",
    "ENV_STUDY",
    "ENV_TRIAL",
    "JOURNAL_FILE",
    "STUDY_ATTR",
    "SweepAttrs",
    "TrialAddress",
    "is_database_url",
    "open_storage",
    "storage_url",
]
