"""Where a sweep's Optuna study lives, and how a job finds its trial.

The study is in a storage named by one string, its URL: a journal file (the default,
SWEEP_DIR/optuna.journal: the storage Optuna recommends on shared file systems, no server
to run) or a database URL (`sqlite:///...`, `postgresql://...`). A job of an Optuna sweep
gets its trial's address (`TrialAddress`: the storage URL, the study, the trial number, which
seed replicate of how many) and the study's pruner in its launch record (records/launch.py),
not in its config, so its config hash is that of the training configuration alone.

The objectives' names are stored once on the study itself, as its user attribute `rllm_sweeps`
(`SweepAttrs`, a record: records/model.py), with the sweep's pruner settings (for people, and a
rerun's check).

Optuna is imported when a storage is opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, ClassVar

from pydantic.dataclasses import dataclass

from rllm_sweeps.records.launch import TrialAddress
from rllm_sweeps.records.model import Migration, dump, load, same_shape

JOURNAL_FILE = "optuna.journal"
STUDY_ATTR = "rllm_sweeps"
SWEEP_ATTRS_SCHEMA_VERSION = 1  # 0: the same shape, before records were versioned


@dataclass(frozen=True)
class SweepAttrs:
    """What the jobs of a sweep need from the sweep, stored on its study (user attribute `rllm_sweeps`)."""

    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: same_shape}

    metrics: list[str]  # the objectives, in the study's order
    pruner: str = "none"  # rllm_sweeps.sweep.optuna_settings.PRUNERS (jobs get theirs in their launch record)
    pruner_options: dict[str, Any] = field(default_factory=dict)
    sweep_dir: str = ""
    schema_version: int = SWEEP_ATTRS_SCHEMA_VERSION

    def attribute(self) -> dict[str, Any]:
        """The value stored as the study's user attribute `rllm_sweeps` (JSON data: Optuna's storages keep JSON)."""
        return dump(self)

    @classmethod
    def of_study(cls, user_attrs: Mapping[str, Any], study: str) -> SweepAttrs | None:
        """The study's attribute, None when it has none (not made by a sweep); RecordError when it does not read."""
        value = user_attrs.get(STUDY_ATTR)
        return None if value is None else load(cls, value, f"study {study!r}'s user attribute {STUDY_ATTR!r}")


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


def live_trial(study: Any, trial_id: int) -> Any:
    """Trial `trial_id` of `study` as an `optuna.trial.Trial`, for a process that did not ask it: the
    job reporting to it, a restarted sweeper settling a dead one's trials (the id from the storage's
    public `get_trial_id_from_study_id_trial_number`, never a FrozenTrial's private `_trial_id`).

    Optuna's only call that hands back an existing trial, here alone: `Study.ask` makes new ones, and
    the `Trial(study, trial_id)` constructor, public but documented as not for direct use, is what
    Optuna's own `optimize` calls."""
    import optuna

    return optuna.trial.Trial(study, trial_id)


__all__ = [
    "JOURNAL_FILE",
    "STUDY_ATTR",
    "SweepAttrs",
    "TrialAddress",
    "is_database_url",
    "live_trial",
    "open_storage",
    "storage_url",
]
