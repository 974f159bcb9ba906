"""The sweep directory's storage named by a path or a pyarrow.fs URI (sweep/storage.py), and both
sides of the storage probe (launchers/ray_storage_probe.py) on a real file system, without Ray:
the probe job's side is the function the Ray job runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from launchers import ray_storage_probe
from rllm_sweeps.problems import ConfigError
from rllm_sweeps.records.store import mirror_dir
from rllm_sweeps.sweep.storage import locate


def test_a_file_uri_names_the_same_directory_as_its_path(tmp_path: Path) -> None:
    place = tmp_path / "with space" / "sweep"
    assert locate(place.as_uri()).path == place  # percent-encoded by as_uri, decoded by pyarrow
    assert locate(str(place)).path == place and locate(place.as_uri()).store_uri is None


def test_a_relative_path_is_taken_from_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert locate("multirun/lr").path == tmp_path / "multirun" / "lr"


def test_an_object_store_uri_is_the_store_and_a_mirror_of_it_on_this_machine() -> None:
    storage = locate("gs://bucket/sweeps/lr")
    assert storage.store_uri == "gs://bucket/sweeps/lr" and storage.path == mirror_dir("gs://bucket/sweeps/lr")


def test_a_uri_pyarrow_cannot_open_is_refused_with_pyarrows_reason() -> None:
    with pytest.raises(ConfigError) as err:
        locate("nosuchfs://x/y")
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
