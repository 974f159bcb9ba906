"""What runs as a Ray job's entrypoint: the job's own command, between its attempt's start and end
in attempts.jsonl (as the SLURM task and the local launcher record them), its output in job.log.

    python -m launchers.ray_task JOB_DIR GENERATION SUBMISSION_ID [--store URI --sync-every S] -- COMMAND...

With `--store` (a sweep on an object store: records/store.py), the job directory is the store's URI:
it is fetched into a staging directory on this node (checkpoints included: the job resumes from
them), the job runs there (its `hydra.run.dir` and launch record's path moved from JOB_DIR, the
sweeper's mirror, to it), and what changed is sent back every S seconds and once more at the end.
Before each sending, the store's `generation` is read: an attempt the sweeper has since replaced
(records/attempts.py) stops its job and sends nothing more.

Ray stops a job (`stop_job`) with SIGTERM: passed on to the job, which checkpoints at its next step.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rllm_sweeps.records import attempts
from rllm_sweeps.records.layout import GENERATION_FILE, JobPaths
from rllm_sweeps.records.store import StoreSync

# The job's records could not be sent to the store at its end: the sweeper retries it as an
# infrastructure failure (launchers/ray_cluster.py), from the last checkpoint the store has.
NOT_SENT = 75  # sysexits' EX_TEMPFAIL


@dataclass(frozen=True)
class TaskArgs:
    job_dir: Path
    generation: int
    submission_id: str
    store: str | None
    sync_every_s: float
    argv: list[str]


def parse(args: list[str]) -> TaskArgs:
    split = args.index("--")
    parser = argparse.ArgumentParser(prog="launchers.ray_task")
    parser.add_argument("job_dir", type=Path)
    parser.add_argument("generation", type=int)
    parser.add_argument("submission_id")
    parser.add_argument("--store")
    parser.add_argument("--sync-every", type=float, default=10.0)
    known = parser.parse_args(args[:split])
    return TaskArgs(
        known.job_dir, known.generation, known.submission_id, known.store, known.sync_every, args[split + 1 :]
    )


def relocated(argv: list[str], env: dict[str, str], old: Path, new: Path) -> tuple[list[str], dict[str, str]]:
    """The command and environment with every path under `old` (the job directory as the sweeper
    named it) moved under `new` (the staging directory)."""

    def move(text: str) -> str:
        return text.replace(str(old), str(new))

    return [move(a) for a in argv], {k: move(v) for k, v in env.items()}


STAGING_PREFIX = "rllm-"  # a staging directory: STAGING_PREFIX + the Ray job's submission id + a random tail


def staging_dirs(sweep_dir_name: str) -> list[Path]:
    """The staging directories on this machine of the Ray jobs of the sweep whose (mirror) directory
    is named `sweep_dir_name` (their submission ids start with it: launchers/ray_cluster.py)."""
    pattern = Path(tempfile.gettempdir()) / f"{STAGING_PREFIX}{attempts.RAY_ID_PREFIX}{sweep_dir_name}-*"
    return [Path(p) for p in sorted(glob.glob(str(pattern)))]


def run(
    task: TaskArgs, env: dict[str, str] | None = None, on_start: Callable[[subprocess.Popen], None] | None = None
) -> int | None:
    """The job in its directory, its attempt's start and end recorded there; its exit code. `on_start`
    is given the job's process."""
    job_dir = task.job_dir
    attempts.record_start(job_dir, task.submission_id, 0, task.generation)
    code: int | None = None
    try:
        with JobPaths(job_dir).log.open("ab") as log:
            process = subprocess.Popen(
                task.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
            signal.signal(signal.SIGTERM, lambda *_: process.send_signal(signal.SIGTERM))
            if on_start is not None:
                on_start(process)
            code = process.wait()
    finally:
        attempts.record_end(job_dir, task.submission_id, code, task.generation)
    return code


class Sender(threading.Thread):
    """Sends the staging directory's changes to the store every `every_s` seconds until stopped; an
    attempt the store says is replaced (a newer generation) stops its job and sends nothing more."""

    def __init__(self, sync: StoreSync, generation: int, every_s: float) -> None:
        super().__init__(daemon=True)
        self.sync, self.generation, self.every_s = sync, generation, every_s
        self.done = threading.Event()
        self.lock = threading.Lock()  # one sending at a time (the last one is the main thread's)
        self.fenced = False
        self.job: subprocess.Popen | None = None  # the job's process, once started

    def replaced(self) -> bool:
        stored = self.sync.read_stored(GENERATION_FILE)
        return stored is not None and int(stored.decode().strip() or 0) > self.generation

    def send(self, *, everything: bool = False) -> None:
        with self.lock:
            if self.fenced:
                return
            if self.replaced():
                print(f"[ray_task] generation {self.generation} was replaced: sending nothing more", flush=True)
                self.fenced = True
                if self.job is not None:
                    self.job.send_signal(signal.SIGTERM)  # it stops at its next step
                return
            self.sync.push(everything=everything)

    def run(self) -> None:
        while not self.done.wait(self.every_s):
            try:
                self.send()
            except OSError as err:  # the store did not answer this time: the next sending tries again
                print(f"[ray_task] could not send to the store: {err}", flush=True)


def main(args: list[str]) -> int | None:
    task = parse(args)
    if task.store is None:
        return run(task)
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{task.submission_id}-")) / task.job_dir.name
    try:
        sync = StoreSync(task.store, staging)
        fetched = sync.pull()
        print(f"[ray_task] {fetched} files of {task.store} staged in {staging}", flush=True)
        argv, env = relocated(task.argv, dict(os.environ), task.job_dir, staging)
        sender = Sender(sync, task.generation, task.sync_every_s)
        sender.start()
        try:
            staged = dataclasses.replace(task, job_dir=staging, store=None, argv=argv)
            code = run(staged, env, on_start=lambda job: setattr(sender, "job", job))
        finally:
            sender.done.set()
            sender.join()
        try:
            sender.send(everything=True)  # the records as they ended, whether or not they changed since
        except OSError as err:
            print(f"[ray_task] could not send the job's records to {task.store}: {err}", flush=True)
            return NOT_SENT
        return code
    finally:
        shutil.rmtree(staging.parent, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
