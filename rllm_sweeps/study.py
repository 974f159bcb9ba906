"""Where a sweep's Optuna study lives, and how a job finds its trial.

The study is in a storage named by one string, its URL: a journal file (the default,
SWEEP_DIR/optuna.journal: the storage Optuna recommends on shared file systems, no server
to run) or a database URL (`sqlite:///...`, `postgresql://...`). A job of an Optuna sweep
gets its trial's address (`TrialAddress`: the storage URL, the study, the trial number, which
seed replicate of how many) and the study's pruner in its launch record (records/launch.py),
not in its config, so its config hash is that of the training configuration alone.

The objectives' names are stored once on the study itself, as its user attribute `rllm_sweeps`
(`SweepAttrs`), with the sweep's pruner settings (for people, and a rerun's check).

Only the standard library is imported here; Optuna is imported when a storage is opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

JOURNAL_FILE = "optuna.journal"
STUDY_ATTR = "rllm_sweeps"


@dataclass(frozen=True)
class TrialAddress:
    """One job's trial: the storage URL, the study, the trial number, and which seed replicate."""

    storage: str
    study: str
    trial: int
    replica: int = 0
    replicas: int = 1


@dataclass(frozen=True)
class SweepAttrs:
    """What the jobs of a sweep need from the sweep, stored on its study (user attribute `rllm_sweeps`)."""

    metrics: list[str]  # the objectives, in the study's order
    pruner: str = "none"  # rllm_sweeps.sweep.optuna_settings.PRUNERS (jobs get theirs in their launch record)
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
    "JOURNAL_FILE",
    "STUDY_ATTR",
    "SweepAttrs",
    "TrialAddress",
    "is_database_url",
    "open_storage",
    "storage_url",
]
