"""PBT's defaults chosen on the surrogate (issue 47): this project's PBT (its real `decide()`,
bench/peers_project.py) over a grid of interval x quantile x resample probability, each setting on
the same seeds and budget as bench/search_peers.py; the true reward of its selection per setting.

    .venv/bin/python bench/pbt_defaults.py [--seeds 100] [--budget-runs 16] [--burn-in STEPS]

Printed: one line per setting, mean true reward with its 95% interval and the mean number of copies,
best first; then the current defaults' difference to the best setting, paired by seed.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

import peers_project  # noqa: E402
import surrogate  # noqa: E402
from peers_common import Sim  # noqa: E402
from search_peers import interval  # noqa: E402

from rllm_sweeps.sweep.pbt_settings import PbtSpec  # noqa: E402

INTERVALS = (2, 4, 5, 8, 12)
QUANTILES = (0.25, 0.5)
RESAMPLES = (0.0, 0.25, 0.5)
BEFORE = (5, 0.25, 0.25)  # the defaults before issue 47


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--budget-runs", type=int, default=16)
    ap.add_argument("--confirm", action="store_true", help="with the confirmation stage")
    ap.add_argument("--data", type=Path, default=surrogate.DATA)
    ap.add_argument(
        "--burn-in",
        type=int,
        default=0,
        help="sweep.pbt.burn_in for every setting (default 0: no burn-in, as docs/BENCHMARKS.md's table was "
        "measured before the burn-in existed; bench/pbt_burn_in.py measures the burn-in itself)",
    )
    args = ap.parse_args()
    s = surrogate.fit(surrogate.load(args.data))
    d = PbtSpec()
    current = (d.interval, d.quantile, d.resample_probability)
    before = BEFORE
    rows = {}
    for setting in itertools.product(INTERVALS, QUANTILES, RESAMPLES):
        i, q, r = setting
        opts = [f"sweep.pbt.interval={i}", f"sweep.pbt.quantile={q}", f"sweep.pbt.resample_probability={r}"]
        opts.append(f"sweep.pbt.burn_in={args.burn_in}")
        outs = [
            peers_project.pbt(Sim(s, seed, args.budget_runs * s.steps), args.confirm, opts)
            for seed in range(args.seeds)
        ]
        rows[setting] = ([s.true_reward(o.schedule) for o in outs], statistics.fmean(o.notes["copies"] for o in outs))
    ranked = sorted(rows, key=lambda k: -statistics.fmean(rows[k][0]))
    print(
        f"PBT on the surrogate, population {args.budget_runs}, {args.seeds} seeds, confirm={args.confirm}, "
        f"burn-in {args.burn_in}"
    )
    print("interval quantile resample: true reward [95% interval], copies per search")
    for k in ranked:
        mean, low, high = interval(rows[k][0])
        mark = "  <- current default" if k == current else "  <- default before issue 47" if k == before else ""
        print(f"  {k[0]:2d} {k[1]:.3f} {k[2]:.2f}: {mean:.3f} [{low:.3f}, {high:.3f}], {rows[k][1]:.1f}{mark}")
    for label, k in (("best", ranked[0]), ("current default", current)):
        if k in rows and before in rows and k != before:
            diffs = [a - b for a, b in zip(rows[k][0], rows[before][0], strict=True)]
            mean, low, high = interval(diffs)
            print(
                f"{label} {k} over the default before issue 47 {before}: {mean:+.3f} [{low:+.3f}, {high:+.3f}] (paired)"
            )


if __name__ == "__main__":
    main()
