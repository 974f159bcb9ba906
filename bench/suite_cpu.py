"""Is a command (the test suite) limited by the CPU or by waiting? Its wall time and the machine's
CPU busy share while it runs.

Samples /proc/stat every `--every` seconds while the command runs and prints the wall time, the
mean share of the machine's CPU time that was busy (user+nice+system+irq+softirq+steal over all
of it, every process on the machine counted: SLURM's job steps and Ray's daemons are not children
of the command, so the command's own rusage misses them), and that share per `--bucket` seconds.
A busy share near 100% means the command can only get faster by doing less work (fewer
CPU-seconds), not by running its parts in another order or more of them at once.

With `--per-process`, every sample also reads each process's CPU time from /proc/PID/stat and
prints where the CPU-seconds went: by kind of process (its program and script) and by the pytest test
in whose environment it was started (PYTEST_CURRENT_TEST, inherited by a test's subprocesses,
SLURM jobs and Ray daemons alike). A process's CPU after its last sample is not seen, so the
figures are a lower bound; the coverage line says how much of the machine's busy time they hold.

    .venv/bin/python bench/suite_cpu.py -- make test
    .venv/bin/python bench/suite_cpu.py --every 1 --per-process -- make test
    .venv/bin/python bench/suite_cpu.py --every 1 -- .venv/bin/python -m pytest -q -m "not slow and not slurm"
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine since boot, from /proc/stat's first line."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class SeenProcess:
    kind: str
    test: str
    ticks_before: int  # CPU spent before the measurement began is not the command's
    ticks: int

    @property
    def seconds(self) -> float:
        return (self.ticks - self.ticks_before) / CLOCK_TICKS


class ProcessCpu:
    """CPU seconds of every process seen, keyed by (pid, start time) so a reused pid is a new one."""

    def __init__(self) -> None:
        self.seen: dict[tuple[int, int], SeenProcess] = {}
        self.first_scan = True

    def scan(self) -> None:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
                fields = stat[stat.rfind(")") + 2 :].split()
                ticks, start = int(fields[11]) + int(fields[12]), int(fields[19])
            except (OSError, IndexError, ValueError):
                continue  # gone, or a kernel thread mid-exit
            seen = self.seen.get((int(name), start))
            if seen is None:
                kind, test = describe(int(name))
                seen = self.seen[(int(name), start)] = SeenProcess(kind, test, ticks if self.first_scan else 0, ticks)
            seen.ticks = ticks
        self.first_scan = False

    def totals(self, label: Callable[[SeenProcess], str]) -> collections.Counter:
        totals: collections.Counter = collections.Counter()
        for seen in self.seen.values():
            totals[label(seen)] += seen.seconds
        return totals


def describe(pid: int) -> tuple[str, str]:
    """(kind, test) of a process: its program, with the script, module or code a Python runs (not
    their arguments, so that every `python train.py ...` is one kind), and the pytest test in its
    environment ("-" outside any test)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return "?", "-"
    test = next((e[20:].decode(errors="replace") for e in environ if e.startswith(b"PYTEST_CURRENT_TEST=")), "-")
    return program(argv), test.rsplit(" (", 1)[0]


def program(argv: list[str]) -> str:
    words = [a.rsplit("/", 1)[-1] if a.startswith("/") else a for a in argv if a]
    if not words:
        return "(kernel thread)"
    if not words[0].startswith("python"):
        return words[0][:60]  # a program, or a process that set its own title (Ray's "ray::IDLE")
    for i, word in enumerate(words[1:], 1):
        if word in ("-m", "-c") and i + 1 < len(words):
            return f"python {word} {words[i + 1][:40]}"
        if not word.startswith("-"):
            return f"python {word.rsplit('/', 1)[-1]}"
    return "python"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--bucket", type=float, default=100.0, help="seconds per line of the profile")
    parser.add_argument("--per-process", action="store_true", help="CPU-seconds by process kind and test")
    parser.add_argument("--top", type=int, default=25, help="lines of each per-process table")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to measure after --")

    started = time.monotonic()
    proc = subprocess.Popen(command)
    samples: list[tuple[float, float]] = []  # (seconds since start, busy share of that interval)
    busy0, total0 = first_busy, first_total = cpu_times()
    processes = ProcessCpu() if args.per_process else None
    while proc.poll() is None:
        if processes is not None:
            processes.scan()
        try:
            proc.wait(timeout=args.every)
        except subprocess.TimeoutExpired:
            pass
        busy, total = cpu_times()
        if total > total0:
            samples.append((time.monotonic() - started, (busy - busy0) / (total - total0)))
        busy0, total0 = busy, total
    wall = time.monotonic() - started
    busy, total = cpu_times()
    share = (busy - first_busy) / max(1, total - first_total)

    print(f"\ncommand: {' '.join(command)}  (exit code {proc.returncode})")
    print(f"wall {wall:.0f} s; CPU busy {share:.1%} of the machine's time, over {len(samples)} samples")
    buckets: dict[int, list[float]] = {}
    for at, s in samples:
        buckets.setdefault(int(at // args.bucket), []).append(s)
    for b, shares in sorted(buckets.items()):
        print(f"  {b * args.bucket:6.0f}-{(b + 1) * args.bucket:6.0f} s  busy {sum(shares) / len(shares):6.1%}")
    if processes is not None:
        per_kind = processes.totals(lambda p: p.kind)
        per_test = processes.totals(lambda p: p.test)
        seen = sum(per_kind.values())
        machine = (busy - first_busy) / CLOCK_TICKS
        share = seen / max(machine, 1e-9)
        print(f"\nper process: {seen:.0f} CPU-s seen in {len(processes.seen)} processes,", end=" ")
        print(f"{share:.0%} of the machine's {machine:.0f} busy CPU-s")
        for title, totals in (("by kind of process", per_kind), ("by the test that started it", per_test)):
            print(f"  {title}:")
            for label, seconds in totals.most_common(args.top):
                print(f"    {seconds:7.0f} s  {label}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
