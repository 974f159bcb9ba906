"""Copying another trial's checkpoint (PBT's exploit) is atomic: a copy cut short is never loaded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rllm_sweeps.training.checkpoints import TRAINER_STATE_FILE, copy_checkpoint, latest_checkpoint


def _checkpoint(path: Path, step: int) -> Path:
    path.mkdir(parents=True)
    (path / "policy.ckpt").write_bytes(b"w" * 1000)
    (path / TRAINER_STATE_FILE).write_text(f'{{"step": {step}}}')
    return path


def test_a_copied_checkpoint_becomes_the_latest_whole(tmp_path: Path) -> None:
    source = _checkpoint(tmp_path / "a" / "step_3", 3)
    mine = tmp_path / "b"
    _checkpoint(mine / "step_3", 3)
    copied = copy_checkpoint(source, mine / "step_3", mark_latest=True)
    assert latest_checkpoint(mine) == copied
    assert (copied / "policy.ckpt").read_bytes() == (source / "policy.ckpt").read_bytes()
    assert not list(mine.glob("*.tmp"))


def test_a_copy_cut_short_leaves_the_previous_checkpoint_in_force(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    source = _checkpoint(tmp_path / "a" / "step_6", 6)
    mine = tmp_path / "b"
    own = _checkpoint(mine / "step_3", 3)
    (mine / "latest").write_text("step_3\n")

    def crash(src, dst, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        Path(dst).mkdir(parents=True)
        shutil.copy2(Path(src) / TRAINER_STATE_FILE, Path(dst) / TRAINER_STATE_FILE)  # half of it
        raise OSError("killed mid-copy")

    monkeypatch.setattr(shutil, "copytree", crash)
    with pytest.raises(OSError):
        copy_checkpoint(source, mine / "step_6", mark_latest=True)
    assert latest_checkpoint(mine) == own
    (mine / "latest").unlink()
    assert latest_checkpoint(mine) == own  # the half copy (step_6.tmp) is not a checkpoint either


def test_an_incomplete_source_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a" / "step_3").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="not a complete checkpoint"):
        copy_checkpoint(tmp_path / "a" / "step_3", tmp_path / "b" / "step_3", mark_latest=True)
