"""The sweep directory's storage named by a path or a pyarrow.fs URI (sweep/storage.py), and both
sides of the storage probe (launchers/ray_storage_probe.py) on a real file system, without Ray:
the probe job's side is the function the Ray job runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from launchers import ray_storage_probe
from rllm_sweeps.problems import ConfigError
from rllm_sweeps.sweep.storage import sweep_dir_path


def test_a_file_uri_names_the_same_directory_as_its_path(tmp_path: Path) -> None:
    place = tmp_path / "with space" / "sweep"
    assert sweep_dir_path(place.as_uri()) == place  # percent-encoded by as_uri, decoded by pyarrow
    assert sweep_dir_path(str(place)) == place


def test_a_relative_path_is_taken_from_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert sweep_dir_path("multirun/lr") == tmp_path / "multirun" / "lr"


def test_an_object_store_uri_is_refused_naming_the_key_and_the_file_system_pyarrow_opened() -> None:
    with pytest.raises(ConfigError) as err:
        sweep_dir_path("gs://bucket/sweeps/lr")
    (issue,) = err.value.issues
    assert issue.key == "hydra.sweep.dir" and "\n" not in issue.message
    assert issue.message.startswith("hydra.sweep.dir=gs://bucket/sweeps/lr: pyarrow.fs opens it as gcs")
    assert "mount it" in issue.message


def test_a_uri_pyarrow_cannot_open_is_refused_with_pyarrows_reason() -> None:
    with pytest.raises(ConfigError) as err:
        sweep_dir_path("nosuchfs://x/y")
    assert "pyarrow.fs cannot open it: Unrecognized filesystem type" in err.value.issues[0].message


def test_the_probe_is_answered_where_the_question_is_seen_and_leaves_no_file(tmp_path: Path) -> None:
    with ray_storage_probe.question(tmp_path.as_uri()) as asked:
        assert not asked.answered()
        assert ray_storage_probe.answer(asked.uri) == 0
        assert asked.answered()
    assert list(tmp_path.iterdir()) == []


def test_the_probe_says_not_seen_where_the_storage_is_another_directory(tmp_path: Path) -> None:
    (tmp_path / "sweeper").mkdir()
    (tmp_path / "node").mkdir()
    with ray_storage_probe.question((tmp_path / "sweeper").as_uri()) as asked:
        elsewhere = asked.uri.replace("/sweeper/", "/node/")  # the same name on another disk
        assert ray_storage_probe.answer(elsewhere) == ray_storage_probe.NOT_SEEN
        assert not asked.answered()


def test_the_probe_says_not_writable_where_the_answer_cannot_be_written(tmp_path: Path) -> None:
    with ray_storage_probe.question(tmp_path.as_uri()) as asked:
        (tmp_path / Path(ray_storage_probe.answer_uri(asked.uri)).name).mkdir()  # a directory in its place
        assert ray_storage_probe.answer(asked.uri) == ray_storage_probe.NOT_WRITABLE
        (tmp_path / Path(ray_storage_probe.answer_uri(asked.uri)).name).rmdir()
