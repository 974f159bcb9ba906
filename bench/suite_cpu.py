"""Is a command (the test suite) limited by the CPU or by waiting? Its wall time and the machine's
CPU busy share while it runs.

Samples /proc/stat every `--every` seconds while the command runs and prints the wall time, the
mean share of the machine's CPU time that was busy (user+nice+system+irq+softirq+steal over all
of it, every process on the machine counted: SLURM's job steps and Ray's daemons are not children
of the command, so the command's own rusage misses them), and that share per `--bucket` seconds.
A busy share near 100% means the command can only get faster by doing less work (fewer
CPU-seconds), not by running its parts in another order or more of them at once.

    .venv/bin/python bench/suite_cpu.py -- make test
    .venv/bin/python bench/suite_cpu.py --every 1 -- .venv/bin/python -m pytest -q -m "not slow and not slurm"
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine since boot, from /proc/stat's first line."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--bucket", type=float, default=100.0, help="seconds per line of the profile")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to measure after --")

    started = time.monotonic()
    proc = subprocess.Popen(command)
    samples: list[tuple[float, float]] = []  # (seconds since start, busy share of that interval)
    busy0, total0 = first_busy, first_total = cpu_times()
    while proc.poll() is None:
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
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
