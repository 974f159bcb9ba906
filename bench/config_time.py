"""Time to compose, reconcile and validate the default config (after imports), median of 10.

.venv/bin/python bench/config_time.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rllm_sweeps.config.load import load_config  # noqa: E402


def main() -> None:
    t0 = time.perf_counter()
    load_config([], notify=lambda _: None)
    first = time.perf_counter() - t0
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        load_config(["trainer.lr=3e-3", "rollout.n=4"], notify=lambda _: None)
        times.append(time.perf_counter() - t0)
    print(f"first load_config (imports SkyRL's schemas): {first:.2f}s")
    median = statistics.median(times)
    print(f"compose + reconcile + validate, after imports: median {median:.3f}s, max {max(times):.3f}s")


if __name__ == "__main__":
    main()
