"""This machine's warm server (launchers/warm_server.py, `rllm-sweeps warm`): a command handed to it
behaves as the same command run in its own process (script as __main__, argv, working directory,
environment, stdin, output, exit code, signals), it is refused, saying why, where its imports could
differ, and a command that dies takes its job with it. The same job's training numbers through the
server are checked in tests/test_warm_start.py."""

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

from launchers.warm_server import WARM_SERVER_ENV, ServerInfo, ServerPaths
from rllm_sweeps.runtime.processes import pid_alive

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]

# A command that hands itself over as train.py does, then reports what it sees.
JOB = """
if __name__ == "__main__":
    import os, sys
    from launchers.warm_server import run_on_warm_server

    run_on_warm_server([sys.executable, os.path.abspath(__file__)])
import json, os, signal, sys, time
from launchers.warm_start import is_forked_job

def on_term(signum, frame):
    open(os.environ["TERM_MARK"], "w").write("SIGTERM")
    sys.exit(7)

signal.signal(signal.SIGTERM, on_term)
made = f"made-{os.getpid()}"
open(made, "w").close()
print(json.dumps({"mode": os.stat(made).st_mode & 0o777,
                  "name": __name__, "argv": sys.argv, "cwd": os.getcwd(), "env": os.environ.get("RLLM_X"),
                  "stdin": sys.stdin.read(), "pid": os.getpid(), "forked": is_forked_job(),
                  "path0": sys.path[0]}), flush=True)
print("to stderr", file=sys.stderr)
if "sleep" in sys.argv:
    time.sleep(120)
sys.exit(int(sys.argv[1]))
"""


def warm(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rllm_sweeps.cli", "warm", *args], env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A warm server importing little (what is tested is the hand-over), for this test's cache
    directory and environment; stopped afterwards, leaving no process or socket."""
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "stale_probe.py").write_text("VALUE = 1\n")
    env = {**os.environ, "RLLM_SWEEPS_CACHE": str(tmp_path / "cache"), "PYTHONPATH": f"{REPO}:{tmp_path / 'mods'}"}
    env.pop(WARM_SERVER_ENV, None)
    env["TERM_MARK"] = str(tmp_path / "term-mark")
    assert warm(env, "status").returncode == 3
    started = warm(env, "start", "--preload", "json", "--preload", "stale_probe")
    assert started.returncode == 0 and "ready: warm server pid" in started.stdout, started.stdout + started.stderr
    monkeypatch.setenv("RLLM_SWEEPS_CACHE", env["RLLM_SWEEPS_CACHE"])  # part of the server's key
    paths = ServerPaths.for_this_python()
    info = ServerInfo.read(paths.info)
    assert info is not None and pid_alive(info.pid)
    again = warm(env, "start")
    assert f"already running: warm server pid {info.pid}" in again.stdout
    yield env, paths, info
    running = ServerInfo.read(paths.info)  # a test may have restarted it
    stopped = warm(env, "stop")
    if running is not None:
        assert f"stopped the warm server (pid {running.pid})" in stopped.stdout, stopped.stdout
    assert not pid_alive(info.pid) and not paths.socket.exists() and not paths.info.exists()
    assert running is None or not pid_alive(running.pid)


def job(tmp_path: Path, env: dict[str, str], *args: str, stdin: str = "", **popen) -> subprocess.Popen:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(JOB))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, str(script), *args], cwd=work, env=env, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen,
    )  # fmt: skip


def finish(proc: subprocess.Popen, stdin: str = "") -> tuple[int, dict, str]:
    out, err = proc.communicate(stdin, timeout=120)
    return proc.returncode, json.loads(out.splitlines()[0]), err


def test_a_command_handed_to_the_warm_server_runs_as_main_with_its_argv_cwd_environment_stdin_output_and_exit_code(
    server, tmp_path
):
    env, paths, info = server
    proc = job(tmp_path, {**env, "RLLM_X": "mine"}, "3", "x=1")
    code, seen, err = finish(proc, "hello")
    assert code == 3
    assert seen["forked"] is True and seen["pid"] != proc.pid  # the server's child ran it
    assert seen["name"] == "__main__"
    assert seen["argv"] == [str(tmp_path / "job.py"), "3", "x=1"]
    assert seen["cwd"] == str(tmp_path / "work") and seen["path0"] == str(tmp_path)
    assert seen["env"] == "mine" and seen["stdin"] == "hello"
    assert err.strip() == "to stderr"
    assert f"job pid {seen['pid']}: exit 3" in paths.log.read_text()


def test_a_python_m_command_handed_to_the_warm_server_runs_its_module_as_main_from_the_callers_directory(
    server, tmp_path
):
    # `python -m rllm_sweeps ARGS` and `rllm-sweeps train ARGS` hand themselves over so (rllm_sweeps/train.py).
    env, _, _ = server
    program = "[sys.executable, os.path.abspath(__file__)]"
    assert program in JOB
    (tmp_path / "mods" / "job_mod.py").write_text(
        textwrap.dedent(JOB.replace(program, '[sys.executable, "-m", "job_mod"]'))
    )
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "job_mod", "4"], cwd=work, env=env, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    code, seen, _ = finish(proc)
    assert code == 4 and seen["forked"] is True and seen["name"] == "__main__"
    assert seen["argv"] == [str(tmp_path / "mods" / "job_mod.py"), "4"]
    assert seen["cwd"] == seen["path0"] == str(work)


def test_a_warm_job_writes_files_with_the_modes_a_cold_job_gives_them_under_the_callers_umask(server, tmp_path):
    env, _, _ = server
    modes = {}
    for how, extra in (("warm", {}), ("cold", {WARM_SERVER_ENV: "off"})):
        proc = job(tmp_path, {**env, **extra}, "0", preexec_fn=lambda: os.umask(0o077))
        code, seen, _ = finish(proc)
        assert code == 0 and seen["forked"] is (how == "warm")
        modes[how] = seen["mode"]
    assert modes == {"warm": 0o600, "cold": 0o600}


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(), reason="needs root and setpriv")
def test_a_caller_with_dropped_capabilities_is_refused_in_one_line_and_its_job_runs_as_the_caller(server, tmp_path):
    env, _, _ = server
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(JOB))
    (tmp_path / "work").mkdir(exist_ok=True)
    proc = subprocess.Popen(
        ["setpriv", "--bounding-set=-dac_override", sys.executable, str(script), "0"],
        cwd=tmp_path / "work", env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    code, seen, err = finish(proc)
    assert code == 0 and seen["forked"] is False and seen["pid"] == proc.pid
    (line,) = [line for line in err.splitlines() if "warm server" in line]
    assert "the caller's credentials differ from the server's in " in line and "CapBnd" in line


def test_the_warm_server_is_not_used_for_a_sweep_a_slurm_job_when_turned_off_or_when_the_environment_differs(
    server, tmp_path
):
    env, _, _ = server
    for extra, args in (
        ({}, ["0", "-m"]),  # a sweep forks its own jobs
        ({"SLURM_JOB_ID": "12"}, ["0"]),  # a SLURM job stays in its allocation
        ({WARM_SERVER_ENV: "off"}, ["0"]),
    ):
        proc = job(tmp_path, {**env, **extra}, *args)
        code, seen, err = finish(proc)
        assert code == 0 and seen["forked"] is False and seen["pid"] == proc.pid, (extra, args)
        assert "warm server" not in err
    # A variable a library may read when imported: the command says why and runs in its own process.
    proc = job(tmp_path, {**env, "JAX_PLATFORMS": "cpu", "RLLM_X": "neutral"}, "4")
    code, seen, err = finish(proc)
    assert code == 4 and seen["forked"] is False and seen["pid"] == proc.pid
    assert "the warm server was not used: the environment differs from the server's in JAX_PLATFORMS" in err
    assert "RLLM_X" not in err  # this project's variables are read when used, not at import


def test_signals_to_the_command_reach_the_job_and_a_killed_command_takes_its_job_with_it(server, tmp_path):
    env, paths, _ = server
    mark = Path(env["TERM_MARK"])
    for how in (signal.SIGTERM, signal.SIGKILL):
        mark.unlink(missing_ok=True)
        proc = job(tmp_path, env, "0", "sleep")
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        seen = json.loads(proc.stdout.readline())
        assert seen["forked"] is True
        proc.send_signal(how)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while pid_alive(seen["pid"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(seen["pid"])
        assert mark.read_text() == "SIGTERM"  # the job's own handler ran: a checkpoint would be written
        if how == signal.SIGTERM:
            assert proc.returncode == 7  # the job's exit code
        else:
            assert f"job pid {seen['pid']}: its command is gone; SIGTERM" in paths.log.read_text()


def test_a_module_changed_after_the_server_imported_it_stops_the_server_and_the_command_runs_itself(server, tmp_path):
    env, paths, info = server
    probe = tmp_path / "mods" / "stale_probe.py"
    probe.write_text("VALUE = 2\n")
    os.utime(probe, ns=(time.time_ns(), time.time_ns() + 10**9))
    proc = job(tmp_path, env, "5")
    code, seen, err = finish(proc)
    assert code == 5 and seen["forked"] is False
    assert f"the warm server was not used: {probe} changed after the server imported it" in err
    deadline = time.monotonic() + 30
    while pid_alive(info.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(info.pid) and not paths.socket.exists()
    # Started again, it serves with the new code.
    restarted = warm(env, "start", "--preload", "json", "--preload", "stale_probe")
    assert restarted.returncode == 0, restarted.stderr
    code, seen, _ = finish(job(tmp_path, env, "0"))
    assert code == 0 and seen["forked"] is True


def test_a_command_whose_warm_server_dies_stops_its_job_and_a_new_server_starts_over_the_dead_ones_files(
    server, tmp_path
):
    env, paths, info = server
    mark = Path(env["TERM_MARK"])
    proc = job(tmp_path, env, "0", "sleep")
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.close()
    seen = json.loads(proc.stdout.readline())
    assert seen["forked"] is True
    os.kill(info.pid, signal.SIGKILL)
    assert proc.wait(timeout=60) == 1
    assert f"the warm server died; job pid {seen['pid']} was sent SIGTERM" in proc.stderr.read()
    deadline = time.monotonic() + 30
    while pid_alive(seen["pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(seen["pid"]) and mark.read_text() == "SIGTERM"
    assert warm(env, "status").returncode == 3  # its files are left, its pid is gone: not running
    restarted = warm(env, "start", "--preload", "json", "--preload", "stale_probe")
    assert restarted.returncode == 0, restarted.stderr
    code, seen, _ = finish(job(tmp_path, env, "0"))
    assert code == 0 and seen["forked"] is True


def test_a_warm_server_without_jobs_exits_after_its_idle_time_leaving_no_files(tmp_path, monkeypatch):
    env = {**os.environ, "RLLM_SWEEPS_CACHE": str(tmp_path / "cache")}
    started = warm(env, "start", "--idle-min", "0.02", "--preload", "json")  # 1.2 s
    assert started.returncode == 0, started.stdout + started.stderr
    monkeypatch.setenv("RLLM_SWEEPS_CACHE", env["RLLM_SWEEPS_CACHE"])
    paths = ServerPaths.for_this_python()
    info = ServerInfo.read(paths.info)
    assert info is not None
    deadline = time.monotonic() + 30
    while pid_alive(info.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(info.pid) and not paths.socket.exists() and not paths.info.exists()
    assert "idle for 0.02 min: no new jobs" in paths.log.read_text()
    assert warm(env, "status").returncode == 3
