"""Programs, processes and ports on this host, as the local cluster sees them (through /proc)."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from rllm_sweeps.local_slurm.errors import LocalSlurmError
from rllm_sweeps.local_slurm.settings import LOCALHOST

REQUIRED_BINARIES = (
    "slurmctld",
    "slurmd",
    "slurmdbd",
    "sbatch",
    "squeue",
    "scontrol",
    "sinfo",
    "sacct",
    "sacctmgr",
    "scancel",
    "munged",
    "munge",
    "unmunge",
    "mungekey",
    "mariadbd",
    "mariadb",
    "mariadb-admin",
    "mariadb-install-db",
    "setsid",
)
NETNS_BINARIES = ("ip", "nsenter", "unshare")
SBIN_DIRS = ("/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin")


def which(name: str) -> str | None:
    """Like shutil.which, but also looks in the sbin directories."""
    found = shutil.which(name)
    if found:
        return found
    for d in SBIN_DIRS:
        p = Path(d) / name
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def program(name: str) -> str:
    """The path of program ``name``, or the bare name (the error then names it) when not found."""
    return which(name) or name


def missing_binaries(netns: bool = False) -> list[str]:
    """Names of the programs needed by the local cluster that are not installed."""
    names = REQUIRED_BINARIES + (NETNS_BINARIES if netns else ())
    return [n for n in names if which(n) is None]


def short_hostname() -> str:
    return socket.gethostname().split(".")[0]


def mem_available_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    raise LocalSlurmError("cannot read MemAvailable from /proc/meminfo")


# ------------------------------------------------------------------------------------ /proc
def _proc_state(pid: int) -> str | None:
    """Process state letter from /proc/PID/stat, or None when there is no such process."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm may contain spaces/parens: the state follows the last ')'.
    return data[data.rfind(")") + 2 :].split(" ", 1)[0]


def pid_alive(pid: int) -> bool:
    """True when PID exists and is not a zombie (PID 1 here may reap late)."""
    state = _proc_state(pid)
    return state is not None and state not in ("Z", "X")


def proc_comm(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def proc_environ_has(pid: int, entry: bytes) -> bool:
    try:
        data = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return entry in data.split(b"\0")


def proc_net_ns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def read_pid_file(pid_file: Path, comm: str) -> int | None:
    """The PID in ``pid_file`` when that process is alive and its comm is ``comm``, else None."""
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if pid_alive(pid) and proc_comm(pid) == comm:
        return pid
    return None


def stop_pid(pid: int, name: str, log: Callable[[str], None]) -> None:
    """SIGTERM, then SIGKILL after 15 s; raises when the process outlives both."""
    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                log(f"stopped {name} (pid {pid})")
                return
            time.sleep(0.05)
        if sig == signal.SIGTERM:
            log(f"{name} (pid {pid}) ignored SIGTERM; sending SIGKILL")
    if pid_alive(pid):
        raise LocalSlurmError(f"could not stop {name} (pid {pid})")


# ---------------------------------------------------------------------------- commands, waits
def run_command(
    args: list[str], *, env: dict[str, str], check: bool = True, timeout: float = 60, **kw
) -> subprocess.CompletedProcess:
    """Run ``args`` (stdin closed, output captured as text unless told); LocalSlurmError on failure."""
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    try:
        res = subprocess.run(args, env=env, timeout=timeout, stdin=subprocess.DEVNULL, **kw)
    except subprocess.TimeoutExpired as e:
        raise LocalSlurmError(f"timed out after {timeout}s: {' '.join(args)}") from e
    if check and res.returncode != 0:
        raise LocalSlurmError(
            f"command failed (rc={res.returncode}): {' '.join(args)}\nstdout: {res.stdout}\nstderr: {res.stderr}"
        )
    return res


def tail(path: Path, n: int = 15) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return "\n".join("    " + ln for ln in lines[-n:])


def wait_until(
    what: str,
    predicate: Callable[[], bool],
    timeout: float,
    log: Path | None,
    hint: Callable[[], str] | None = None,
) -> None:
    """Poll ``predicate`` (backing off to 0.5 s); on timeout raise with ``hint()`` and the log's tail."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        if predicate():
            return
        if time.monotonic() > deadline:
            msg = f"timed out after {timeout:.0f}s waiting for {what}"
            if hint:
                msg += f"\n{hint()}"
            if log is not None:
                msg += f"\nsee {log}; last lines:\n{tail(log)}"
            raise LocalSlurmError(msg)
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


def check_ports_free(ports: list[int]) -> None:
    """Raise when one of ``ports`` on 127.0.0.1 is taken (another local cluster?)."""
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sk:
            sk.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sk.bind((LOCALHOST, port))
            except OSError as e:
                if e.errno == errno.EADDRINUSE:
                    raise LocalSlurmError(
                        f"port {port} on 127.0.0.1 is in use (another local cluster?); use another port_base or --netns"
                    ) from e
                raise
