"""When does each pytest-xdist worker finish, for the order tests/conftest.py gives the suite?

A replay of `--dist loadgroup` (pytest-xdist's LoadScopeScheduling: each xdist group is one unit,
every other test a unit of its own; the units sorted by size, ties in collection order; a worker
gets the next unit when it has at most 2 tests left) over the collected tests, with the durations
of a `make test PYTEST_ARGS=--durations=N` log for its N slowest and the rest of the workers' time
(`--total`) spread evenly over the other tests. A model: the real workers share 2 cores.

    .venv/bin/python bench/xdist_order.py --log make-test.log --total 6993
"""

from __future__ import annotations

import argparse
import re
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import pytest

DURATION = re.compile(r"\s*([\d.]+)s (?:call|setup|teardown)\s+(\S+)")


@dataclass(frozen=True)
class Collected:
    nodeid: str
    group: str | None


class Collector:
    """A pytest plugin that keeps the collected tests, in the order the conftest left them."""

    def __init__(self) -> None:
        self.items: list[Collected] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            mark = item.get_closest_marker("xdist_group")
            group = (mark.args[0] if mark.args else mark.kwargs.get("name")) if mark else None
            self.items.append(Collected(item.nodeid, group))


def slowest(log: Path) -> dict[str, float]:
    """Seconds per test id (calls, set-ups and teardowns added) from the first --durations list (the
    parallel part's; the `timed` part's comes after its summary line)."""
    out: dict[str, float] = {}
    for line in log.read_text(errors="replace").splitlines():
        if re.search(r"\d+ passed", line):
            break
        if m := DURATION.match(line):
            nodeid = m.group(2).split("@")[0]  # xdist appends @group
            out[nodeid] = out.get(nodeid, 0.0) + float(m.group(1))
    return out


def worker_ends(items: list[Collected], seconds: dict[str, float], workers: int) -> list[float]:
    units: OrderedDict[str, list[str]] = OrderedDict()
    for item in items:
        units.setdefault(item.group or item.nodeid, []).append(item.nodeid)
    queue = [tests for _, tests in sorted(units.items(), key=lambda unit: -len(unit[1]))]
    clock, pending = [0.0] * workers, [queue.pop(0) for _ in range(workers)]
    while any(pending):
        for w in range(workers):
            while queue and len(pending[w]) <= 2:
                pending[w] = pending[w] + queue.pop(0)
        w = min((w for w in range(workers) if pending[w]), key=lambda w: clock[w])
        clock[w] += seconds[pending[w].pop(0)]
    return clock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="a make test log with --durations")
    parser.add_argument("--total", type=float, required=True, help="the workers' seconds in all")
    parser.add_argument("--workers", type=int, default=3)
    args = parser.parse_args()
    collector = Collector()
    pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-m", "not timed", "tests"], plugins=[collector])
    known = slowest(args.log)
    others = [i for i in collector.items if i.nodeid not in known]
    spread = (args.total - sum(known.get(i.nodeid, 0.0) for i in collector.items)) / max(1, len(others))
    seconds = {i.nodeid: known.get(i.nodeid, spread) for i in collector.items}
    ends = worker_ends(collector.items, seconds, args.workers)
    print(f"{len(collector.items)} tests, {len(known)} timed by the log, the others {spread:.2f} s each")
    print("workers end at " + " / ".join(f"{e:.0f}" for e in ends) + f" s: the last {max(ends):.0f} s")


if __name__ == "__main__":
    main()
