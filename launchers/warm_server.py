"""This machine's warm server: `python train.py` forked from a process that has already imported
the training stack, so that a job run by hand starts in seconds.

A job run by hand spends 5-10 s of a 2-core machine importing transformers, torch, JAX and
SkyRL before its first step (docs/BENCHMARKS.md), imports that no code of ours can shorten.
`rllm-sweeps warm start` starts a server that imports them once (launchers/job_imports.py) and
waits on a Unix socket that only its user can reach. `python train.py ARGS` then hands itself
over before importing anything: it sends its arguments, environment, working directory and its
stdin, stdout and stderr, and the server forks a child that runs train.py with them, exactly as
the local launcher runs a sweep's job (launchers/warm_start.py). The command stays in the
foreground: the job's output is its output, SIGINT, SIGTERM and SIGHUP are passed on to the
job, the job gets SIGTERM (checkpoint, then exit) when the command dies, and the command's exit
code is the job's.

train.py runs in its own process, as always, when no server runs, with
RLLM_SWEEPS_WARM_SERVER=off, for a sweep (-m: its jobs are forked by its own fork server), in a
SLURM job (it stays inside its allocation), and, saying why on stderr, when its environment
differs from the server's in a variable a library may read at import, its interpreter options
differ, its credentials (user, groups, capabilities: launchers/peer_process.py) differ from the
server's, or a module the server imported has changed on disk (the server then stops: start it
again). A forked job takes its caller's umask, so its files get the modes a cold job's get.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from launchers.peer_process import ProcessStatus
from launchers.warm_start import die_with_parent, import_neutral, is_forked_job, run_as_main

WARM_SERVER_ENV = "RLLM_SWEEPS_WARM_SERVER"  # "off": train.py never hands itself over
PRELOAD = ("launchers.job_imports",)
MAX_MESSAGE = 1 << 20  # a request carries the environment: a few kB


# ---- where a server is found: one per interpreter, virtual environment and cache directory


def server_key(cache: Path) -> str:
    """The server a `python train.py` may use: the same interpreter and virtual environment (the
    same installed libraries) and the same cache directory (models, compiled programs)."""
    ident = f"{os.path.realpath(sys.executable)}\0{sys.prefix}\0{cache.resolve()}"
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def runtime_dir(create: bool = True) -> Path:
    """A directory of this user's only (a Unix socket's path must stay short, so not the cache)."""
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    path = Path(base) / f"rllm-sweeps-{os.getuid()}"
    if create:
        path.mkdir(mode=0o700, exist_ok=True)
    st = path.stat()  # FileNotFoundError when not created: no server
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f"{path} is not this user's alone (owner {st.st_uid}, mode {oct(st.st_mode)})")
    return path


@dataclass(frozen=True)
class ServerPaths:
    socket: Path
    info: Path  # ServerInfo as JSON, written when the server is ready
    log: Path  # the server's own output, in the cache directory

    @classmethod
    def for_this_python(cls, create: bool = True) -> ServerPaths:
        from rllm_sweeps.cachedir import cache_dir

        key = server_key(cache_dir())
        base = runtime_dir(create) / key
        return cls(base.with_suffix(".sock"), base.with_suffix(".json"), cache_dir() / "warm-server" / f"{key}.log")


@dataclass(frozen=True)
class ServerInfo:
    pid: int
    starttime: int  # the pid's start time (/proc): a recycled pid is not the server
    python: str
    started: float  # time.time()
    imports_s: float
    idle_exit_min: float
    preload: list[str]

    @classmethod
    def read(cls, path: Path) -> ServerInfo | None:
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None


# ---- the client: train.py's first lines


def run_on_warm_server(program: list[str]) -> None:
    """Hand `PROGRAM ARGS` (`python SCRIPT` or `python -m MODULE`, rllm_sweeps/train.py) to this
    machine's warm server and exit with the job's exit code; return at once (the caller runs the job
    itself) where no server takes it."""
    if is_forked_job() or os.environ.get(WARM_SERVER_ENV, "on") == "off" or "SLURM_JOB_ID" in os.environ:
        return
    if any(arg in ("-m", "--multirun") for arg in sys.argv[1:]):
        return
    try:
        paths = ServerPaths.for_this_python(create=False)
        if not paths.socket.exists():
            return
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        conn.settimeout(60)  # the server answers each request in turn, within milliseconds
        conn.connect(str(paths.socket))
        request = {
            "argv": [*program, *sys.argv[1:]],
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "unbuffered": bool(getattr(sys.stdout, "write_through", False)),
            "options": interpreter_options(),
        }
        socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
        reply = json.loads(conn.recv(MAX_MESSAGE) or b'{"why": "it closed the connection"}')
    except (OSError, ValueError):
        # No server (or a socket left by one that died), a directory not this user's alone, or no
        # stdin/stdout to pass: the command runs itself.
        return
    if "pid" not in reply:
        print(f"rllm-sweeps: the warm server was not used: {reply['why']}", file=sys.stderr)
        return
    pid = reply["pid"]
    conn.settimeout(None)  # the job's whole run
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: _signal_job(pid, signum))
    message = conn.recv(MAX_MESSAGE)
    if not message:  # the server died: the job must not run on without its command
        _signal_job(pid, signal.SIGTERM)
        print(f"rllm-sweeps: the warm server died; job pid {pid} was sent SIGTERM", file=sys.stderr)
        raise SystemExit(1)
    code = json.loads(message)["exit"]
    if code < 0:  # killed by a signal: end the same way, as the shell would see a job run by hand
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    raise SystemExit(code if code >= 0 else 128 - code)


def _signal_job(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def interpreter_options() -> dict[str, object]:
    """What a command line may change in how the interpreter runs modules (-O, -X, -W, ...)."""
    return {"flags": list(sys.flags), "warnoptions": list(sys.warnoptions), "xoptions": dict(sys._xoptions)}


# ---- the server


class WarmServer:
    """Accepts requests on its socket and forks each job from this process. Single-threaded by
    design: forking a process whose other threads hold locks would leave the child stuck."""

    def __init__(self, paths: ServerPaths, idle_exit_s: float, base_path: list[str], env: dict[str, str]) -> None:
        self.paths = paths
        self.idle_exit_s = idle_exit_s
        self.base_path = base_path  # sys.path without this process's own first entry
        self.env = env  # as it was before the imports
        # What the imports set (TF_CPP_MIN_LOG_LEVEL, ...): a job's own imports would have set it too.
        self.import_env = {k: v for k, v in os.environ.items() if env.get(k) != v}
        self.options = interpreter_options()
        self.module_mtimes = loaded_module_mtimes()
        self.jobs: dict[int, socket.socket] = {}  # job pid -> its command's connection
        self.selector = selectors.DefaultSelector()
        self.listener: socket.socket | None = None
        self.stopping = False
        self.last_active = time.monotonic()

    def serve(self, on_ready: Callable[[], None]) -> None:
        """Until stopped (SIGTERM, SIGINT), idle too long, or a module changed on disk; then until
        the running jobs end. `on_ready` once the socket accepts."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.paths.socket.unlink(missing_ok=True)
        listener.bind(str(self.paths.socket))
        os.chmod(self.paths.socket, 0o600)
        listener.listen(16)
        self.listener = listener
        self.selector.register(listener, selectors.EVENT_READ)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: setattr(self, "stopping", True))
        on_ready()
        while True:
            for key, _ in self.selector.select(timeout=0.5):
                if key.fileobj is self.listener:
                    self.accept()
                else:
                    self.command_spoke(key.fileobj)  # type: ignore[arg-type]
            self.reap()
            idle = not self.jobs and time.monotonic() - self.last_active > self.idle_exit_s
            if (self.stopping or idle) and self.listener is not None:
                self.close_listener("stopping" if self.stopping else f"idle for {self.idle_exit_s / 60:g} min")
            if self.listener is None and not self.jobs:
                return

    def close_listener(self, why: str) -> None:
        """No new jobs; those running finish first."""
        assert self.listener is not None
        self.selector.unregister(self.listener)
        self.listener.close()
        self.listener = None
        self.paths.socket.unlink(missing_ok=True)
        self.paths.info.unlink(missing_ok=True)
        log(f"{why}: no new jobs; exiting after {len(self.jobs)} running")

    def accept(self) -> None:
        assert self.listener is not None
        conn, _ = self.listener.accept()
        self.last_active = time.monotonic()
        conn.settimeout(10)
        fds: list[int] = []
        try:
            message, fds, _, _ = socket.recv_fds(conn, MAX_MESSAGE, 3)
            request = json.loads(message)
            why = self.refusal(conn, request, fds)
        except (OSError, ValueError) as err:
            why = f"a bad request ({err})"
        if why:
            log(f"refused: {why}")
            _send(conn, {"why": why})
            conn.close()
            for fd in fds:
                os.close(fd)
            return
        pid = os.fork()
        if pid == 0:
            self.become_job(conn, request, fds)  # never returns
        for fd in fds:
            os.close(fd)
        log(f"job pid {pid}: {' '.join(request['argv'][1:])} (in {request['cwd']})")
        _send(conn, {"pid": pid})
        conn.settimeout(None)
        self.jobs[pid] = conn
        self.selector.register(conn, selectors.EVENT_READ)

    def refusal(self, conn: socket.socket, request: dict, fds: list[int]) -> str:
        """Why this server must not run the request ("" if it may)."""
        pid, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        if uid != os.getuid():
            return f"user {uid} is not the server's"
        caller, own = ProcessStatus.of(pid), ProcessStatus.of(os.getpid())
        if caller is None or own is None:
            return "the caller's credentials cannot be read (/proc)"
        if differ := caller.differences(own):
            return (
                f"the caller's credentials differ from the server's in {', '.join(differ)}: a job forked from "
                "the server would not run as the caller would"
            )
        request["umask"] = caller.umask  # the job's, as the caller's (become_job)
        if len(fds) != 3:
            return "stdin, stdout and stderr were not passed"
        changed = sorted(k for k in self.env.keys() | request["env"].keys() if self.env.get(k) != request["env"].get(k))
        read_at_import = [k for k in changed if not import_neutral(k)]
        if read_at_import:
            return (
                f"the environment differs from the server's in {', '.join(read_at_import[:5])}"
                f"{' ...' if len(read_at_import) > 5 else ''}, which a library may read at import "
                "(start the server in this environment: rllm-sweeps warm stop; rllm-sweeps warm start)"
            )
        if request["options"] != self.options:
            return "the interpreter's options (-O, -X, -W ...) differ from the server's"
        changed_files = [path for path, mtime in self.module_mtimes.items() if _mtime(path) != mtime]
        if changed_files:
            self.stopping = True
            return (
                f"{changed_files[0]} changed after the server imported it; the server stops: "
                "start it again with rllm-sweeps warm start"
            )
        return ""

    def become_job(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        """In the forked child: the command's file descriptors, working directory, environment
        and arguments; then train.py as `__main__`. Exits with its exit code."""
        code = 1
        try:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
            # No socket of the server stays open in the job: a command sees the server's end close
            # when the server dies, whatever its jobs do.
            self.selector.close()
            if self.listener is not None:
                self.listener.close()
            for other in [conn, *self.jobs.values()]:
                other.close()
            die_with_parent()  # its own session; SIGTERM if the server dies
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
                os.close(fd)
            os.chdir(request["cwd"])
            if request["umask"] is not None:  # files get the modes the caller's own process would give them
                os.umask(request["umask"])
            sys.stdin = open(0, closefd=False)  # noqa: SIM115
            env = {**request["env"], **self.import_env}
            run_as_main(request["argv"], env, request["unbuffered"], self.base_path)
            code = 0
        except SystemExit as exit_:
            code = _exit_code(exit_.code)
        finally:
            os._exit(code)

    def command_spoke(self, conn: socket.socket) -> None:
        """A command sends nothing after its request: readable means it closed (it died)."""
        pid = next(p for p, c in self.jobs.items() if c is conn)
        if not conn.recv(MAX_MESSAGE):
            log(f"job pid {pid}: its command is gone; SIGTERM")
            self.selector.unregister(conn)
            _signal_job(pid, signal.SIGTERM)

    def reap(self) -> None:
        while self.jobs:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.jobs.pop(pid, None)
            if conn is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            log(f"job pid {pid}: exit {code}")
            self.last_active = time.monotonic()
            try:
                self.selector.unregister(conn)
            except KeyError:
                pass  # already gone
            _send(conn, {"exit": code})
            conn.close()


def _send(conn: socket.socket, message: dict) -> None:
    try:
        conn.send(json.dumps(message).encode())
    except OSError:
        pass  # the command is gone


def _exit_code(code: object) -> int:
    """The interpreter's rule for SystemExit's argument."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def loaded_module_mtimes() -> dict[str, int | None]:
    """Every imported module's file and its modification time: a job must not run stale code."""
    files = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
    return {f: _mtime(f) for f in files if isinstance(f, str)}


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def serve_main(argv: list[str] | None = None) -> None:
    """`python -m launchers.warm_server`: what `rllm-sweeps warm start` starts in the background."""
    import importlib
    import threading

    from rllm_sweeps.runtime.processes import start_time

    parser = argparse.ArgumentParser(prog="python -m launchers.warm_server")
    parser.add_argument("--idle-min", type=float, default=60)
    parser.add_argument("--preload", action="append", help="modules to import (default: the training stack)")
    args = parser.parse_args(argv)
    base_path = sys.path[1:]  # without -m's working directory: a job's sys.path is its own
    env = dict(os.environ)
    started = time.monotonic()
    preload = args.preload or list(PRELOAD)
    for name in preload:
        importlib.import_module(name)
    imports_s = round(time.monotonic() - started, 2)
    if threading.active_count() != 1:  # none of the training stack's imports starts one today
        log(f"warning: {threading.active_count()} Python threads after the imports; forking may hang a job")
    paths = ServerPaths.for_this_python()
    pid, starttime = os.getpid(), start_time(os.getpid())
    assert starttime is not None  # this process's own /proc entry
    info = ServerInfo(pid, starttime, sys.executable, time.time(), imports_s, args.idle_min, preload)
    log(f"imported {', '.join(preload)} in {imports_s} s; pid {info.pid}; socket {paths.socket}")
    try:
        WarmServer(paths, args.idle_min * 60, base_path, env).serve(
            on_ready=lambda: paths.info.write_text(json.dumps(asdict(info)))
        )
    finally:
        if running_server(paths) == info:  # not a newer server's files
            paths.info.unlink(missing_ok=True)
            paths.socket.unlink(missing_ok=True)
    log("stopped")


def running_server(paths: ServerPaths) -> ServerInfo | None:
    """The server whose files these are, if it is alive and serving (a killed one leaves its files)."""
    from rllm_sweeps.runtime.processes import pid_alive

    info = ServerInfo.read(paths.info)
    return info if info is not None and pid_alive(info.pid, info.starttime) and paths.socket.exists() else None


if __name__ == "__main__":
    serve_main()
