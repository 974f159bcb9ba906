"""Local jobs forked from a process that has already imported the training stack.

A job's process spends most of its start-up importing transformers, torch, JAX and SkyRL's
backend (about 7 s of CPU on a 2-core machine, docs/BENCHMARKS.md), the same modules for every
job of a sweep. The standard library's fork server (`multiprocessing`'s "forkserver" start
method) imports them once, in a process with no threads of ours and no JAX backend yet, and
forks each job from it. The job then runs the same training app, with the same arguments,
environment and working directory, as `python train.py ...` would: a job under a sweep is
still exactly a job run by hand, only its imports are already done.

A job is started cold (`subprocess`) instead when its command is neither `python SCRIPT.py ...`
nor `python -m MODULE ...` (a sweep's job: `python -m rllm_sweeps ...`), when its environment
differs from the fork server's in a variable a pre-imported module may have read at import
(anything but `PYTHONPATH`, this project's `RLLM_*` variables, which are read when used, and the
shell's own `_`, `PWD`, `OLDPWD`, `SHLVL`), or when
`RLLM_SWEEPS_WARM_START=off`. A job run by hand is forked the same way by this machine's warm
server (launchers/warm_server.py), with the same rule.
"""

from __future__ import annotations

import atexit
import ctypes
import multiprocessing
import os
import runpy
import signal
import subprocess
import sys
from pathlib import Path

WARM_START_ENV = "RLLM_SWEEPS_WARM_START"  # "off": every local job is a fresh interpreter
PRELOAD = ("launchers.job_imports",)  # the training stack, imported once in the server
_PR_SET_PDEATHSIG = 1
_forked_job = False  # set in a job forked from a process that had imported the training stack


def is_forked_job() -> bool:
    """This process is a job forked by the fork server or the warm server (launchers/warm_server.py)."""
    return _forked_job


def die_with_parent() -> None:
    """A job gets SIGTERM (checkpoint, then exit) when its parent dies, even by SIGKILL: no
    orphan keeps writing into a directory that a resumed sweep is about to use. Its own session,
    so that Ctrl-C in the sweeper's terminal reaches the sweeper, which stops the jobs."""
    os.setsid()
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


SHELL_BOOKKEEPING = ("_", "PWD", "OLDPWD", "SHLVL")  # set by the shell per command, read by no library


def import_neutral(key: str) -> bool:
    """Environment variables that no pre-imported module reads at import time."""
    return key == "PYTHONPATH" or key.startswith("RLLM_") or key in SHELL_BOOKKEEPING


class WarmStarter:
    """The fork server of one launcher (one sweeper process). It starts with the first job, whose
    start waits for its imports as a fresh interpreter's would (a dry run starts none), and
    exits with the sweeper."""

    def __init__(self, preload: tuple[str, ...] = PRELOAD) -> None:
        self.enabled = os.environ.get(WARM_START_ENV, "on") != "off"
        self.preload = preload
        self.context = multiprocessing.get_context("forkserver")
        self.server_env: dict[str, str] | None = None

    def can_fork(self, argv: list[str], env: dict[str, str]) -> bool:
        if not self.enabled or argv[0] != sys.executable or program_of(argv) is None:
            return False
        server_env = self.server_env if self.server_env is not None else dict(os.environ)
        changed = {k for k in server_env.keys() | env.keys() if server_env.get(k) != env.get(k)}
        return all(import_neutral(k) for k in changed)

    def start(self, argv: list[str], env: dict[str, str], log: Path) -> ForkedProcess:
        if self.server_env is None:
            self.context.set_forkserver_preload(list(self.preload))
            self.server_env = dict(os.environ)
        process = self.context.Process(target=run_script, args=(argv, env, str(log)), daemon=True)
        process.start()
        return ForkedProcess(process)


class ForkedProcess:
    """The part of `subprocess.Popen` the local launcher uses, over a forked job."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self.process = process
        self.pid: int = process.pid  # type: ignore[assignment]

    @property
    def returncode(self) -> int | None:
        return self.process.exitcode

    def poll(self) -> int | None:
        return self.process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self.process.join(timeout)
        if self.process.exitcode is None:
            raise subprocess.TimeoutExpired(f"job pid {self.pid}", timeout or 0)
        return self.process.exitcode

    def send_signal(self, sig: int) -> None:
        if self.process.exitcode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def leave_the_fork_servers_family() -> None:
    """Close the two pipe ends every child of multiprocessing's fork server inherits, so that
    the job does not keep the sweeper's fork server and resource tracker alive: the server exits
    when the sweeper does (its "alive" pipe reaches EOF), and its death is what sends the job
    SIGTERM. Were the job to hold the pipe open, a job of a SIGKILLed sweeper would run on.
    The attributes are the standard library's private state (3.12: multiprocessing/forkserver.py,
    `_serve_one`); the job may still use multiprocessing, which starts its own server and tracker."""
    from multiprocessing import forkserver, resource_tracker

    server, tracker = forkserver._forkserver, resource_tracker._resource_tracker
    for fd in (server._forkserver_alive_fd, tracker._fd):
        if fd is not None:
            os.close(fd)
    server._forkserver_alive_fd = tracker._fd = None


def run_script(argv: list[str], env: dict[str, str], log: str) -> None:
    """In the forked job: become `argv` (`python SCRIPT.py ARGS`) with `env`, its output in
    `log`, and run SCRIPT as `__main__`. Its exit code is the script's."""
    leave_the_fork_servers_family()
    die_with_parent()
    # Daemonic for the sweeper (stopped when it exits), but the job may start processes of its own.
    multiprocessing.current_process().daemon = False
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    run_as_main(argv, env, unbuffered=bool(env.get("PYTHONUNBUFFERED")))


def program_of(argv: list[str]) -> tuple[str, str] | None:
    """("script", PATH) for `python PATH.py ARGS`, ("module", NAME) for `python -m NAME ARGS` (a sweep's
    jobs: `python -m rllm_sweeps`), None for any other command (it starts cold)."""
    if len(argv) >= 3 and argv[1] == "-m":
        return ("module", argv[2])
    if len(argv) >= 2 and argv[1].endswith(".py"):
        return ("script", argv[1])
    return None


def program_sys_path(kind: str, script: str, env: dict[str, str], cwd: str, rest: list[str]) -> list[str]:
    """sys.path as the interpreter builds it for `python SCRIPT` / `python -m MODULE` under `env`: the
    script's directory (-m: the working directory), unless PYTHONSAFEPATH is set (`python -P`: an
    installed package must not be shadowed by a checkout in that directory), then PYTHONPATH, then `rest`."""
    first = [] if env.get("PYTHONSAFEPATH") else [os.path.dirname(script) if kind == "script" else cwd]
    front = [*first, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    return front + [p for p in rest if p not in front]


def run_as_main(argv: list[str], env: dict[str, str], unbuffered: bool, base_path: list[str] | None = None) -> None:
    """Become `argv` (`python SCRIPT.py ARGS` or `python -m MODULE ARGS`) with `env`, on file
    descriptors 0-2 as set up by the caller, and run SCRIPT or MODULE as `__main__`, as the
    interpreter would: raises SystemExit with its exit code. `base_path`: sys.path after the
    program's own entries (default: this process's)."""
    global _forked_job
    _forked_job = True
    os.environ.clear()
    os.environ.update(env)
    sys.stdout = open(1, "w", buffering=1 if unbuffered else -1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, errors="backslashreplace", closefd=False)  # noqa: SIM115
    kind, target = program_of(argv) or ("script", argv[1])
    script = str(Path(target).resolve()) if kind == "script" else target
    rest = sys.path if base_path is None else base_path
    sys.path[:] = program_sys_path(kind, script, env, os.getcwd(), rest)
    sys.argv = [script, *argv[2:]] if kind == "script" else ["-m", *argv[3:]]  # -m: runpy sets argv[0]
    try:
        if kind == "script":
            runpy.run_path(script, run_name="__main__")
        else:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
    except SystemExit:
        raise
    except BaseException:
        sys.excepthook(*sys.exc_info())  # as the interpreter prints an uncaught exception
        raise SystemExit(1) from None
    finally:
        atexit._run_exitfuncs()  # what the interpreter runs at exit; a forked child only _exits
        sys.stdout.flush()
        sys.stderr.flush()
