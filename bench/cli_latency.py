"""Wall time of the commands a user runs to look things up (warm caches: each run once first).

.venv/bin/python bench/cli_latency.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
COMMANDS = {
    "rllm-sweeps keys": [str(BIN / "rllm-sweeps"), "keys"],
    "train.py --help": [sys.executable, str(ROOT / "train.py"), "--help"],
    "rllm-sweeps validate trainer.lr=1e-4": [str(BIN / "rllm-sweeps"), "validate", "trainer.lr=1e-4"],
    "train.py trainer.lrr=1 (refused)": [sys.executable, str(ROOT / "train.py"), "trainer.lrr=1"],
    "python -c pass (interpreter alone)": [sys.executable, "-c", "pass"],
}


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - t0


def main() -> None:
    for cmd in COMMANDS.values():
        wall(cmd)  # caches filled
    for name, cmd in COMMANDS.items():
        times = [wall(cmd) for _ in range(3)]  # interleaved runs would be fairer; 3 in a row is enough here
        print(f"{name:<40} median {statistics.median(times):.2f}s  max {max(times):.2f}s")


if __name__ == "__main__":
    main()
