"""Local jobs forked from the fork server (launchers/warm_start.py) behave as the same command
started by hand: script as __main__, argv, environment, output, exit codes, signals, atexit,
dying with the sweeper; and a real training job gives the same numbers either way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from launchers.warm_server import ServerPaths
from launchers.warm_start import WARM_START_ENV, WarmStarter
from rllm_sweeps.cachedir import cache_dir
from rllm_sweeps.records.attempts import read_events
from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.runtime.processes import pid_alive

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
LIGHT = ("json",)  # the tests' fork server imports little: what is tested is the job's set-up


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "job_script.py"
    path.write_text(textwrap.dedent(body))
    return path


def fork(tmp_path: Path, body: str, *args: str, env: dict[str, str] | None = None):
    log = tmp_path / "job.log"
    log.touch()
    argv = [sys.executable, str(script(tmp_path, body)), *args]
    return WarmStarter(preload=LIGHT).start(argv, {**os.environ, **(env or {})}, log), log


def test_a_forked_job_runs_its_script_as_main_with_its_argv_environment_and_output_in_its_log(tmp_path):
    proc, log = fork(
        tmp_path,
        """
        import json, os, sys
        print(json.dumps({"name": __name__, "argv": sys.argv, "env": os.environ.get("RLLM_X"),
                          "path0": sys.path[0], "stdin": sys.stdin.read(), "pid": os.getpid(),
                          "session": os.getsid(0)}))
        print("to stderr", file=sys.stderr)
        """,
        "a=1",
        "b=two",
        env={"RLLM_X": "forked"},
    )
    assert proc.wait(60) == 0
    first, second = log.read_text().splitlines()
    seen = json.loads(first)
    assert seen["name"] == "__main__"
    assert seen["argv"] == [str(tmp_path / "job_script.py"), "a=1", "b=two"]
    assert seen["env"] == "forked"
    assert seen["path0"] == str(tmp_path)
    assert seen["stdin"] == ""
    assert seen["pid"] == proc.pid and seen["session"] == proc.pid  # its own session, as with setsid
    assert second == "to stderr"


def test_a_forked_python_m_job_runs_its_module_as_main_as_the_interpreter_would(tmp_path):
    # A sweep's job is `python -m rllm_sweeps ARGS` (rllm_sweeps/app_command.py).
    (tmp_path / "job_module.py").write_text(
        "import json, os, sys\n"
        'print(json.dumps({"name": __name__, "argv": sys.argv, "path": sys.path[:2], "cwd": os.getcwd()}))\n'
    )
    log = tmp_path / "job.log"
    log.touch()
    argv = [sys.executable, "-m", "job_module", "a=1"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = WarmStarter(preload=LIGHT).start(argv, env, log)
    assert proc.wait(60) == 0
    seen = json.loads(log.read_text().splitlines()[0])
    assert seen["name"] == "__main__"
    assert seen["argv"] == [str(tmp_path / "job_module.py"), "a=1"]
    assert seen["path"] == [seen["cwd"], str(tmp_path)]  # -m: the working directory first, then PYTHONPATH


@pytest.mark.parametrize(
    ("body", "code", "in_log"),
    [
        ("raise SystemExit(2)", 2, ""),
        ("raise ValueError('bad value')", 1, "ValueError: bad value"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", -signal.SIGKILL, ""),
    ],
)
def test_a_forked_jobs_exit_code_is_its_scripts(tmp_path, body, code, in_log):
    proc, log = fork(tmp_path, body)
    assert proc.wait(60) == code
    assert proc.poll() == code and proc.returncode == code
    assert in_log in log.read_text()
    if in_log:
        assert "Traceback (most recent call last)" in log.read_text()


def test_a_forked_job_runs_its_atexit_handlers_and_may_start_processes_of_its_own(tmp_path):
    proc, log = fork(
        tmp_path,
        f"""
        import atexit, multiprocessing
        atexit.register(lambda: open({str(tmp_path / "atexit")!r}, "w").write("ran"))
        if __name__ == "__main__":
            child = multiprocessing.get_context("fork").Process(target=print, args=("child ran",))
            child.start()
            child.join()
            print("exit code", child.exitcode)
        """,
    )
    assert proc.wait(60) == 0, log.read_text()
    assert (tmp_path / "atexit").read_text() == "ran"
    assert "child ran" in log.read_text() and "exit code 0" in log.read_text()


def test_sigterm_reaches_a_forked_job_which_exits_its_own_way(tmp_path):
    proc, log = fork(
        tmp_path,
        """
        import signal, sys, time
        signal.signal(signal.SIGTERM, lambda *_: (print("checkpointed", flush=True), sys.exit(143)))
        print("ready", flush=True)
        time.sleep(120)
        """,
    )
    deadline = time.monotonic() + 30
    while "ready" not in log.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(0.1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 143
    assert "checkpointed" in log.read_text()


def test_a_forked_job_gets_sigterm_when_its_sweeper_is_killed(tmp_path):
    """The job's parent is the fork server, which exits with the sweeper: the job still gets the
    SIGTERM (checkpoint, then exit) that a job started by hand gets from its parent's death."""
    sweeper = script(
        tmp_path,
        f"""
        import os, sys, time
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path
        from launchers.warm_start import WarmStarter
        if __name__ == "__main__":
            job = Path({str(tmp_path / "job.py")!r})
            log = Path({str(tmp_path / "job.log")!r})
            log.touch()
            proc = WarmStarter(preload=("json",)).start([sys.executable, str(job)], dict(os.environ), log)
            print(proc.pid, flush=True)
            time.sleep(300)
        """,
    )
    (tmp_path / "job.py").write_text(
        textwrap.dedent(
            """
            import signal, sys, time
            signal.signal(signal.SIGTERM, lambda *_: (print("got SIGTERM", flush=True), sys.exit(0)))
            print("ready", flush=True)
            time.sleep(300)
            """
        )
    )
    proc = subprocess.Popen([sys.executable, str(sweeper)], stdout=subprocess.PIPE, text=True)
    try:
        job_pid = int(proc.stdout.readline())
        deadline = time.monotonic() + 30
        while "ready" not in (tmp_path / "job.log").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.kill()  # SIGKILL: the sweeper runs no clean-up
        proc.wait()
        deadline = time.monotonic() + 30
        while pid_alive(job_pid):
            assert time.monotonic() < deadline, "the forked job outlived its sweeper"
            time.sleep(0.1)
        assert "got SIGTERM" in (tmp_path / "job.log").read_text()
    finally:
        proc.kill()


def test_jobs_whose_environment_a_preloaded_module_may_have_read_start_as_fresh_interpreters(monkeypatch):
    python, script_path = sys.executable, "/x/train.py"
    here = dict(os.environ)
    starter = WarmStarter(preload=LIGHT)
    assert starter.can_fork([python, script_path, "a=1"], {**here, "RLLM_SWEEPS_LAUNCH": "/j/launch.3.json"})
    assert starter.can_fork([python, "-m", "rllm_sweeps", "a=1"], here)  # a sweep's job: the installed app
    assert starter.can_fork([python, script_path], {**here, "PYTHONPATH": "/somewhere"})
    # read at import by JAX, XLA, torch or transformers: those modules are already imported
    assert not starter.can_fork([python, script_path], {**here, "JAX_PLATFORMS": "cuda"})
    assert not starter.can_fork([python, script_path], {k: v for k, v in here.items() if k != "HOME"})
    assert not starter.can_fork([python, "-u", script_path], here)  # interpreter options
    assert not starter.can_fork(["/usr/bin/env", script_path], here)
    monkeypatch.setenv(WARM_START_ENV, "off")
    assert not WarmStarter(preload=LIGHT).can_fork([python, script_path], dict(os.environ))


QUICK = ["trainer.total_batches=1", "trainer.val_before_train=false", "trainer.test_freq=0"]
QUICK += ["data.train_batch_size=8", "rollout.n=4", "task.dataset.val_size=8"]


def test_a_job_forked_from_the_fork_server_or_the_warm_server_trains_exactly_as_the_same_job_run_by_hand(
    tmp_path, monkeypatch
):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop(WARM_START_ENV, None)
    by_hand = tmp_path / "by_hand"
    done = subprocess.run(
        [sys.executable, str(REPO / "train.py"), *QUICK, f"hydra.run.dir={by_hand}"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    swept = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "-m", *QUICK, f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert swept.returncode == 0, swept.stdout[-3000:] + swept.stderr[-3000:]
    (job_dir,) = (tmp_path / "sweep" / "jobs").iterdir()
    (start,) = [e for e in read_events(job_dir) if e.event == "start"]
    assert start.forked is True  # the launcher forked it rather than starting an interpreter

    def numbers(directory: Path) -> list[dict]:
        keep = ("step", "reward_mean", "loss", "grad_norm", "tokens_sampled", "val_reward_mean")
        return [{k: v for k in keep if (v := r.value(k)) is not None} for r in read_metrics(directory)]

    assert numbers(job_dir) == numbers(by_hand)
    assert len(numbers(by_hand)) >= 2  # a training step and the final validation
    log = (job_dir / "job.log").read_text()
    assert "done: 1 steps" in log and "Traceback" not in log

    # The same command by hand, with this machine's warm server (launchers/warm_server.py) running.
    # A cache directory of the test's own keys the server (no other test's job finds it), its
    # entries the machine's (the built model, compiled programs).
    cache = tmp_path / "cache"
    cache.mkdir()
    for entry in cache_dir().iterdir():
        if entry.name != "warm-server":  # the servers' logs stay apart
            (cache / entry.name).symlink_to(entry)
    warm_env = {**env, "RLLM_SWEEPS_CACHE": str(cache)}
    warm = [sys.executable, "-m", "rllm_sweeps.cli", "warm"]
    started = subprocess.run([*warm, "start"], env=warm_env, capture_output=True, text=True, timeout=600)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        served = subprocess.run(
            [sys.executable, str(REPO / "train.py"), *QUICK, f"hydra.run.dir={tmp_path / 'warm'}"],
            cwd=REPO, env=warm_env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        stopped = subprocess.run([*warm, "stop"], env=warm_env, capture_output=True, text=True, timeout=60)
    assert served.returncode == 0 and "warm server" not in served.stderr, served.stderr[-3000:]
    assert "done: 1 steps" in served.stdout
    assert numbers(tmp_path / "warm") == numbers(by_hand)
    assert "stopped the warm server" in stopped.stdout
    monkeypatch.setenv("RLLM_SWEEPS_CACHE", str(cache))
    server_log = ServerPaths.for_this_python().log.read_text()
    assert f"hydra.run.dir={tmp_path / 'warm'}" in server_log and "exit 0" in server_log  # it ran the job


@pytest.mark.parametrize("safe", [False, True])
@pytest.mark.parametrize("kind", ["script", "module"])
def test_a_forked_jobs_sys_path_starts_as_the_interpreters_would_pythonsafepath_included(tmp_path, kind, safe):
    """A job forked by the warm server gets the front of sys.path the interpreter gives `python SCRIPT` or
    `python -m MODULE`: with PYTHONSAFEPATH (an installed package run beside a checkout) no script directory
    or working directory, where an uninstalled copy would shadow the installed package."""
    from launchers.warm_start import program_sys_path

    extra, scripts = tmp_path / "on_pythonpath", tmp_path / "scripts"
    for where in (extra, scripts):  # -m finds it on PYTHONPATH; a script is run by its path
        where.mkdir()
        (where / "prog.py").write_text("import json, sys; print(json.dumps(sys.path))\n")
    env = {**os.environ, "PYTHONPATH": str(extra)}
    env.pop("PYTHONSAFEPATH", None)
    if safe:
        env["PYTHONSAFEPATH"] = "1"
    argv = [sys.executable, str(scripts / "prog.py")] if kind == "script" else [sys.executable, "-m", "prog"]
    real = json.loads(subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout)
    script = str(scripts / "prog.py") if kind == "script" else "prog"
    ours = program_sys_path(kind, script, env, str(tmp_path), rest=["/elsewhere"])
    assert ours[:-1] == real[: len(ours) - 1]  # the front: the program's own entries, then PYTHONPATH
    assert (str(scripts if kind == "script" else tmp_path) in ours) is (not safe)
