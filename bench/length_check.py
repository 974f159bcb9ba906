"""The pre-launch length check alone (data/lengths.py `fitting_rows`) on a new file of N rows: its CPU seconds,
cold (no cached entries), without the job around it. bench/data_scale.py measures whole jobs.

    .venv/bin/python bench/length_check.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    import data_scale

    work = Path(tempfile.mkdtemp(prefix="length_check."))
    data_scale.write_rows(work / "rows.parquet", args.rows)
    os.environ["RLLM_SWEEPS_CACHE"] = str(work / "cache")  # cold: nothing cached for this file
    from rllm_sweeps.data.files import DataFile
    from rllm_sweeps.data.lengths import fitting_rows, load_tokenizer

    tokenizer, model_dir = load_tokenizer("builtin:tiny-qwen3")
    cpu, wall = time.process_time(), time.monotonic()
    rows = DataFile.open(str(work / "rows.parquet"))
    opened = time.process_time() - cpu, time.monotonic() - wall
    cpu, wall = time.process_time(), time.monotonic()
    kept = fitting_rows(rows, tokenizer, model_dir, 128)
    checked = time.process_time() - cpu, time.monotonic() - wall
    print(
        f"{args.rows:,} rows: open (parquet -> Arrow cache) {opened[0]:.2f} CPU-s ({opened[1]:.2f} s wall); "
        f"length check {checked[0]:.2f} CPU-s ({checked[1]:.2f} s wall); {kept.sum():,} rows kept"
    )


if __name__ == "__main__":
    main()
