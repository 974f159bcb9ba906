"""A sweep directory on an object store (records/store.py, launchers/ray_task.py): local copies synced
through pyarrow.fs's S3 client with an S3 server (tests/s3_server.py), without Ray. The Ray-cluster
sweep on the store: tests/test_ray_cluster_launcher.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from s3_server import S3Server, s3_server

from launchers.ray_task import relocated
from rllm_sweeps.records.store import StoreSync, child_uri, mirror_dir
from rllm_sweeps.sweep.storage import locate

REPO = Path(__file__).resolve().parents[1]
BUCKET = "rllm-sweeps-test"


@pytest.fixture(scope="module")
def server() -> Iterator[S3Server]:
    with pytest.MonkeyPatch.context() as patch, s3_server() as running:
        for key, value in running.env.items():
            patch.setenv(key, value)
        running.make_bucket(BUCKET)
        yield running


def fresh_uri(server: S3Server, name: str) -> str:
    return f"s3://{BUCKET}/{name}-{time.monotonic_ns()}"


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_an_object_store_uri_is_kept_with_a_mirror_on_this_machine(server: S3Server) -> None:
    uri = fresh_uri(server, "located")
    storage = locate(uri)
    assert storage.store_uri == uri and storage.path == mirror_dir(uri)
    with_options = f"{uri}?endpoint_override={server.endpoint.removeprefix('http://')}&scheme=http"
    assert mirror_dir(with_options) == mirror_dir(uri)  # named after the bucket and path, not the options
    assert locate("file:///shared/x").store_uri is None and locate("/shared/x").store_uri is None


def test_what_one_side_pushes_the_other_pulls_leaving_out_locks_scratch_tokens_and_temporary_files(
    server: S3Server, tmp_path: Path
) -> None:
    uri = fresh_uri(server, "round")
    sent = tmp_path / "sent"
    for name in ["result.json", "metrics.jsonl", "checkpoints/step_1/trainer_state.json", "checkpoints/latest"]:
        write(sent / name, name)
    for name in [".lock", ".generation.lock", "work/sampler.bin", "ray-auth-token", "checkpoints/step_2.tmp/x"]:
        write(sent / name, "not for the store")
    assert StoreSync(uri, sent).push() == 4
    got = tmp_path / "got"
    assert StoreSync(uri, got).pull() == 4
    assert tree(got) == {k: v for k, v in tree(sent).items() if k in tree(got)} and len(tree(got)) == 4
    from rllm_sweeps.records.atomic import RECORD_MODE

    assert (got / "result.json").stat().st_mode & 0o777 == RECORD_MODE  # as readable as any record
    skipped = tmp_path / "no_checkpoints"
    assert StoreSync(uri, skipped).pull(skip=frozenset({"checkpoints"})) == 2
    assert sorted(tree(skipped)) == ["metrics.jsonl", "result.json"]


def test_a_push_sends_a_checkpoints_data_then_what_makes_it_count_then_the_records(
    server: S3Server, tmp_path: Path
) -> None:
    job = tmp_path / "job"
    for name in ["metrics.jsonl", "checkpoints/latest", "checkpoints/step_1/trainer_state.json"]:
        write(job / name, name)
    write(job / "checkpoints/step_1/policy.ckpt", "weights")
    sync = StoreSync(fresh_uri(server, "order"), job)
    sync.push()
    assert list(sync.stamps) == [  # the order they were sent in
        "checkpoints/step_1/policy.ckpt",
        "checkpoints/latest",
        "checkpoints/step_1/trainer_state.json",
        "metrics.jsonl",
    ]


def test_only_what_changed_is_sent_again_and_a_pruned_checkpoint_leaves_the_store(
    server: S3Server, tmp_path: Path
) -> None:
    job = tmp_path / "job"
    write(job / "result.json", "{}")
    write(job / "checkpoints/step_1/trainer_state.json", "1")
    sync = StoreSync(fresh_uri(server, "changed"), job)
    assert sync.push() == 2
    assert sync.push() == 0
    write(job / "result.json", "{} ")
    (job / "checkpoints/step_1/trainer_state.json").unlink()
    assert sync.push() == 1
    assert sorted(sync.stored_files()) == ["result.json"]
    assert sync.push(everything=True) == 1  # the records, changed or not


def test_a_record_rewritten_at_the_same_size_within_the_stores_second_is_fetched_again(
    server: S3Server, tmp_path: Path
) -> None:
    uri = fresh_uri(server, "same_size")
    writer, reader = StoreSync(uri, tmp_path / "job"), StoreSync(uri, tmp_path / "mirror")
    write(tmp_path / "job" / "generation", "1\n")
    writer.push()
    reader.pull()
    write(tmp_path / "job" / "generation", "2\n")  # the same size, the same second of S3's clock
    writer.push()
    reader.pull()
    assert (tmp_path / "mirror" / "generation").read_text() == "2\n"


def test_a_child_uri_keeps_the_stores_options() -> None:
    uri = "s3://b/sweeps/lr?endpoint_override=http://h:9000&scheme=http"
    assert child_uri(uri, "jobs/0000-ab") == "s3://b/sweeps/lr/jobs/0000-ab?endpoint_override=http://h:9000&scheme=http"


def test_a_staged_job_runs_with_its_paths_moved_from_the_sweepers_mirror(tmp_path: Path) -> None:
    old, new = tmp_path / "mirror" / "jobs" / "0000-ab", tmp_path / "stage" / "0000-ab"
    argv, env = relocated(
        ["python", "-m", "rllm_sweeps", "trainer.lr=1e-3", f"hydra.run.dir={old}"],
        {"RLLM_SWEEPS_LAUNCH": str(old / "launch.1.json"), "PYTHONPATH": "/src"},
        old,
        new,
    )
    assert argv[-1] == f"hydra.run.dir={new}" and argv[:4] == ["python", "-m", "rllm_sweeps", "trainer.lr=1e-3"]
    assert env == {"RLLM_SWEEPS_LAUNCH": str(new / "launch.1.json"), "PYTHONPATH": "/src"}


# A job's stand-in for the wrapper's tests: writes a step a line at a time in the directory it is given
# (as hydra.run.dir), until it has written STEPS or is stopped.
JOB = """
import pathlib, signal, sys, time
out = pathlib.Path(sys.argv[1].removeprefix("hydra.run.dir="))
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
for step in range(1, int(sys.argv[2]) + 1):
    if stop:
        sys.exit(143)
    with (out / "steps.txt").open("a") as f:
        f.write(f"{step}\\n")
    time.sleep(0.2)
"""


def ray_task(
    job_dir: Path, uri: str, generation: int, steps: int, env: dict[str, str] | None = None
) -> subprocess.Popen:
    """launchers/ray_task.py as Ray runs it, on a job directory in the store."""
    argv = [sys.executable, "-m", "launchers.ray_task", str(job_dir), str(generation), "rllm-test-g1"]
    argv += ["--store", uri, "--sync-every", "0.3", "--", sys.executable, "-c", JOB, f"hydra.run.dir={job_dir}"]
    # The server's address and credentials: the fixture's (os.environ), or `env`'s.
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.Popen([*argv, str(steps)], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)


def test_a_job_on_a_store_runs_in_a_staging_directory_and_its_records_reach_the_store(
    server: S3Server, tmp_path: Path
) -> None:
    uri = fresh_uri(server, "staged")
    mirror = tmp_path / "mirror" / "jobs" / "0000-ab"
    write(mirror / "generation", "1\n")
    sweeper = StoreSync(uri, mirror)
    sweeper.push()
    task = ray_task(mirror, uri, 1, steps=3)
    out, _ = task.communicate(timeout=60)
    assert task.returncode == 0, out
    assert not (mirror / "steps.txt").exists()  # it ran elsewhere: only the store carries its records
    sweeper.pull()
    assert (mirror / "steps.txt").read_text() == "1\n2\n3\n"
    from rllm_sweeps.records import attempts

    (start, end) = attempts.read_events(mirror)
    assert (start.event, start.scheduler_id, end.event, end.exit_code) == ("start", "rllm-test-g1", "end", 0)
    assert "files of" in out and "staged in" in out
    staging = Path(out.split("staged in ")[1].split()[0])
    assert not staging.exists()  # removed at the end


def test_an_attempt_the_sweeper_replaced_stops_its_job_and_sends_nothing_more(server: S3Server, tmp_path: Path) -> None:
    uri = fresh_uri(server, "fenced")
    mirror = tmp_path / "mirror" / "0000-ab"
    write(mirror / "generation", "1\n")
    sweeper = StoreSync(uri, mirror)
    sweeper.push()
    task = ray_task(mirror, uri, 1, steps=200)
    deadline = time.monotonic() + 60
    while "steps.txt" not in sweeper.stored_files():
        assert time.monotonic() < deadline and task.poll() is None, "the job sent no step"
        time.sleep(0.1)
    write(mirror / "generation", "2\n")  # the sweeper gives up on generation 1
    sweeper.push()
    out, _ = task.communicate(timeout=60)
    assert "generation 1 was replaced: sending nothing more" in out
    assert task.returncode == 143  # its job stopped at its next step, long before its 200th
    sent = sweeper.read_stored("steps.txt")
    time.sleep(1.0)
    assert sweeper.read_stored("steps.txt") == sent and len((sent or b"").split()) < 200


def train_py(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, str(REPO / "train.py"), "-m", *args]
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_a_sweep_on_a_store_with_a_launcher_whose_jobs_write_at_a_path_is_refused_in_one_line(
    server: S3Server,
) -> None:
    uri = fresh_uri(server, "local_launcher")
    done = train_py("trainer.lr=1e-3", "trainer.total_batches=1", f"hydra.sweep.dir={uri}")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "the local launcher's jobs write their records at a path" in lines[0]
    assert "hydra/launcher=ray_cluster" in lines[0] and "nothing was submitted" in lines[0]
    assert StoreSync(uri, Path("/nonexistent")).stored_files() == {}  # nothing written in the store


def test_an_optuna_search_on_a_store_is_refused_in_one_line_naming_why(server: S3Server) -> None:
    uri = fresh_uri(server, "optuna")
    done = train_py(
        "sweep.method=optuna", "sweep.budget=2", "trainer.lr=interval(0.0001,0.01)", f"hydra.sweep.dir={uri}"
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "sweep.method=optuna cannot keep its records on an object store" in lines[0]
    assert "journal" in lines[0]


def test_a_job_whose_records_cannot_reach_the_store_at_its_end_says_so_for_the_sweeper_to_retry(
    tmp_path: Path,
) -> None:
    from launchers.ray_task import NOT_SENT

    with s3_server() as own:  # a store of its own, gone before the job ends
        own.make_bucket(BUCKET)
        uri = f"s3://{BUCKET}/gone"
        mirror = tmp_path / "0000-ab"
        write(mirror / "generation", "1\n")
        with pytest.MonkeyPatch.context() as patch:
            for key, value in own.env.items():
                patch.setenv(key, value)
            StoreSync(uri, mirror).push()
        task = ray_task(mirror, uri, 1, steps=15, env=own.env)
        time.sleep(1.0)
    out, _ = task.communicate(timeout=120)
    assert task.returncode == NOT_SENT, out
    assert f"could not send the job's records to {uri}" in out


def test_the_latest_checkpoint_the_store_names_is_one_whose_data_it_has_while_the_job_writes_on(
    server: S3Server, tmp_path: Path
) -> None:
    job = tmp_path / "job"
    write(job / "checkpoints/step_1/policy.ckpt", "weights 1")
    write(job / "checkpoints/step_1/trainer_state.json", "1")
    write(job / "checkpoints/latest", "step_1\n")
    sync = StoreSync(fresh_uri(server, "latest"), job)
    send = sync._send

    def send_while_the_job_saves_step_2(relative: str, *args: object) -> int:
        if relative == "checkpoints/step_1/policy.ckpt":  # the job saves its next checkpoint meanwhile
            write(job / "checkpoints/step_2/policy.ckpt", "weights 2")
            write(job / "checkpoints/step_2/trainer_state.json", "2")
            write(job / "checkpoints/latest", "step_2\n")
        return send(relative, *args)

    sync._send = send_while_the_job_saves_step_2  # type: ignore[method-assign]
    sync.push()
    assert sync.read_stored("checkpoints/latest") == b"step_1\n"  # as listed, not as it was when sent
    assert "checkpoints/step_2/policy.ckpt" not in sync.stored_files()
    sync.push()
    assert sync.read_stored("checkpoints/latest") == b"step_2\n"
    assert sync.read_stored("checkpoints/step_2/policy.ckpt") == b"weights 2"
