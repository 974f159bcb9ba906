"""`rllm-sweeps warm start|stop|status`: this machine's warm server (launchers/warm_server.py)."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time

from launchers.warm_server import PRELOAD, ServerInfo, ServerPaths, running_server


def describe(info: ServerInfo) -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.started))
    return (
        f"warm server pid {info.pid} (started {started}; imports took {info.imports_s} s; "
        f"exits after {info.idle_exit_min:g} min without a job)"
    )


def start(idle_min: float, preload: list[str] | None) -> int:
    paths = ServerPaths.for_this_python()
    info = running_server(paths)
    if info is not None:
        print(f"already running: {describe(info)}")
        return 0
    argv = [sys.executable, "-m", "launchers.warm_server", "--idle-min", str(idle_min)]
    argv += [f"--preload={name}" for name in preload or []]
    print(f"starting the warm server: importing {', '.join(preload or PRELOAD)} (5-20 s) ...", flush=True)
    paths.log.parent.mkdir(parents=True, exist_ok=True)
    with paths.log.open("a") as out:
        server = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        info = ServerInfo.read(paths.info)
        if info is not None and info.pid == server.pid:
            print(f"ready: {describe(info)}")
            print("`python train.py ...` (one job) now starts from it; stop it with `rllm-sweeps warm stop`")
            return 0
        if server.poll() is not None:
            tail = paths.log.read_text(errors="replace")[-3000:]
            print(f"error: the warm server exited ({server.returncode}) before it was ready;", file=sys.stderr)
            print(f"its log, {paths.log}:\n{tail}", file=sys.stderr)
            return 1
        time.sleep(0.1)
    server.terminate()
    print(f"error: the warm server was not ready within 600 s; its log: {paths.log}", file=sys.stderr)
    return 1


def stop() -> int:
    from rllm_sweeps.runtime.processes import signal_all, wait_gone

    info = running_server(ServerPaths.for_this_python())
    if info is None:
        print("no warm server is running for this Python and cache directory")
        return 0
    server = {info.pid: info.starttime}
    signal_all(server, signal.SIGTERM)
    if wait_gone(server, timeout=10):
        print(f"the warm server (pid {info.pid}) takes no new jobs and exits when its running jobs end")
    else:
        print(f"stopped the warm server (pid {info.pid})")
    return 0


def status() -> int:
    paths = ServerPaths.for_this_python()
    info = running_server(paths)
    print(f"running: {describe(info)}; socket {paths.socket}; log {paths.log}" if info else "not running")
    return 0 if info else 3


def add_warm_parser(sub: argparse._SubParsersAction) -> None:
    warm = sub.add_parser("warm", help="this machine's warm server: `python train.py` starts in seconds (docs/JOBS.md)")
    warm.add_argument("action", choices=("start", "stop", "status"))
    warm.add_argument("--idle-min", type=float, default=60, help="start: exit after this many minutes without a job")
    warm.add_argument("--preload", action="append", help="start: modules to import ahead (default: the training stack)")
    warm.set_defaults(func=cmd_warm)


def cmd_warm(args: argparse.Namespace) -> int:
    if args.action == "start":
        return start(args.idle_min, args.preload)
    return stop() if args.action == "stop" else status()
