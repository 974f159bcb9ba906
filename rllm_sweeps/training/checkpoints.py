"""A training checkpoint: a directory ``step_<k>/`` holding the backend's checkpoint of the policy
(LoRA weights + optimizer state) as ``<model_id>.ckpt`` and ``trainer_state.json`` (the step, the
data position, the KL controller; everything else is a function of them). ``latest`` names the newest complete one.

Written under ``step_<k>.tmp`` and renamed: a directory named ``step_<k>`` is complete.
``skyrl.train.trainer.max_ckpts_to_keep=K`` keeps the newest K (SkyRL's setting and meaning: -1
keeps all); SkyRL's own ``cleanup_old_checkpoints`` cannot be called here: its module imports the
GPU trainer's stack (torchdata, absent from the JAX install) and knows only ``global_step_<k>``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import ClassVar

from pydantic.dataclasses import dataclass as record

from rllm_sweeps.records.layout import LATEST_FILE, TRAINER_STATE_FILE
from rllm_sweeps.records.model import Migration, dumps, read_record, same_shape
from rllm_sweeps.training.policy import Policy

TRAINER_STATE_SCHEMA_VERSION = 1  # 0: the same shape, before records were versioned


@record
class TrainerState:
    """Everything the loop needs to resume besides the backend's checkpoint (a record: records/model.py)."""

    MIGRATIONS: ClassVar[Mapping[int, Migration]] = {0: same_shape}

    step: int = 0  # training steps completed
    val_history: list[dict] = field(default_factory=list)  # (step, val_reward_mean) of each validation
    extra_batches: int = 0  # prompt batches dynamic sampling drew beyond one a step (the data position)
    kl_coef: float | None = None  # use_kl_in_reward's controller value (None: not started)
    schema_version: int = TRAINER_STATE_SCHEMA_VERSION


def checkpoint_name(step: int) -> str:
    return f"step_{step}"


def save_checkpoint(path: Path, policy: Policy, state: TrainerState, *, mark_latest: bool) -> Path:
    """Write ``path/`` = the policy's backend checkpoint + ``state`` (atomic rename); ``mark_latest``:
    point the parent's ``latest`` file at it."""

    def fill(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        policy.save(tmp / f"{policy.model_id}.ckpt")
        (tmp / TRAINER_STATE_FILE).write_text(dumps(state))

    return _write_checkpoint(path, fill, mark_latest=mark_latest)


def _write_checkpoint(path: Path, fill: Callable[[Path], None], *, mark_latest: bool) -> Path:
    """The one way a checkpoint is written: ``fill`` makes it under ``path.tmp``, then it is renamed to
    ``path``, so a checkpoint cut short is never taken for one (``_complete_checkpoints`` and ``latest``
    skip ``.tmp``); ``mark_latest``: then the parent's ``latest`` file names it (itself renamed into place)."""
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    fill(tmp)
    if path.exists():
        shutil.rmtree(path)
    os.replace(tmp, path)
    if mark_latest:
        latest = path.parent / (LATEST_FILE + ".tmp")
        latest.write_text(path.name + "\n")
        os.replace(latest, path.parent / LATEST_FILE)
    return path


def prune_checkpoints(checkpoint_dir: Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` complete checkpoints (``keep`` < 0: none); what it deleted.
    The one ``latest`` names is never deleted."""
    if keep < 0:
        return []
    newest = latest_checkpoint(checkpoint_dir)
    old = _complete_checkpoints(checkpoint_dir)[: -keep or None]
    removed = [p for _, p in old if p != newest]
    for p in removed:
        shutil.rmtree(p, ignore_errors=True)
    return removed


def _complete_checkpoints(checkpoint_dir: Path) -> list[tuple[int, Path]]:
    """(step, path) of every complete checkpoint, oldest first."""
    return sorted(
        (int(p.name.removeprefix("step_")), p)
        for p in checkpoint_dir.glob("step_*")
        if p.name.removeprefix("step_").isdigit() and (p / TRAINER_STATE_FILE).is_file()
    )


def copy_checkpoint(
    source: Path, dest: Path, *, mark_latest: bool, prepare: Callable[[Path], None] | None = None
) -> Path:
    """Copy the complete checkpoint ``source`` (another trial's, for PBT's exploit) to ``dest``, written
    as ``save_checkpoint`` writes one (``_write_checkpoint``).
    ``prepare(tmp)`` may add to the copy before the rename (PBT: the schedule it continues with)."""
    if not (source / TRAINER_STATE_FILE).is_file():
        raise FileNotFoundError(f"{source} is not a complete checkpoint (no {TRAINER_STATE_FILE})")

    def fill(tmp: Path) -> None:
        shutil.copytree(source, tmp)
        if not (tmp / TRAINER_STATE_FILE).is_file():  # the source was replaced while it was copied
            shutil.rmtree(tmp, ignore_errors=True)
            raise FileNotFoundError(f"{source} changed while it was copied")
        if prepare is not None:
            prepare(tmp)

    return _write_checkpoint(dest, fill, mark_latest=mark_latest)


def load_checkpoint(path: Path, policy: Policy, load_optimizer: bool = True) -> TrainerState:
    """Restore the policy's weights (+ optimizer state) from ``path``; its trainer state."""
    policy.load(path / f"{policy.model_id}.ckpt", load_optimizer=load_optimizer)
    return read_record(TrainerState, path / TRAINER_STATE_FILE)


def latest_checkpoint(checkpoint_dir: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint under ``checkpoint_dir`` (via its ``latest`` file), or None."""
    d = Path(checkpoint_dir)
    latest = d / LATEST_FILE
    if latest.is_file():
        p = d / latest.read_text().strip()
        if (p / TRAINER_STATE_FILE).is_file():
            return p
    steps = _complete_checkpoints(d)
    return steps[-1][1] if steps else None


__all__ = [
    "TRAINER_STATE_FILE",
    "TrainerState",
    "checkpoint_name",
    "copy_checkpoint",
    "latest_checkpoint",
    "load_checkpoint",
    "prune_checkpoints",
    "save_checkpoint",
]
