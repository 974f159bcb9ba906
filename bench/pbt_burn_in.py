"""PBT's burn-in on the surrogate (issue 47): this project's PBT (its real `decide()`,
bench/peers_project.py) with a few burn-in, interval and resample settings, at a small and a large
population (budget in runs), each against no burn-in, paired by seed.

    .venv/bin/python bench/pbt_burn_in.py [--seeds 200]     # about 30 s here

Printed: per budget and setting, the mean true reward of the selection with its 95% interval, the
paired difference to no burn-in (interval 2, the defaults otherwise) and the copies per search.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

import peers_project  # noqa: E402
import surrogate  # noqa: E402
from peers_common import Sim  # noqa: E402
from search_peers import interval  # noqa: E402

# The surrogate's runs are 24 steps: burn-in 8 is a third of them, 12 a half (the default's share).
VARIANTS = {
    "no burn-in": ["sweep.pbt.burn_in=0"],
    "interval 4": ["sweep.pbt.burn_in=0", "sweep.pbt.interval=4"],
    "burn-in 8": ["sweep.pbt.burn_in=8"],
    "burn-in 12 (default)": [],
    "interval 4, burn-in 8": ["sweep.pbt.interval=4", "sweep.pbt.burn_in=8"],
    "resample 0.25": ["sweep.pbt.burn_in=0", "sweep.pbt.resample_probability=0.25"],
    "burn-in 8, resample 0.25": ["sweep.pbt.burn_in=8", "sweep.pbt.resample_probability=0.25"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--budgets", type=int, nargs="+", default=[4, 16], help="budgets in runs (= population)")
    args = ap.parse_args()
    s = surrogate.fit(surrogate.load(surrogate.DATA))
    print(f"PBT on the surrogate ({s.steps}-step runs), {args.seeds} seeds; difference to no burn-in, paired")
    for runs in args.budgets:
        base: list[float] = []
        for name, options in VARIANTS.items():
            outs = [peers_project.pbt(Sim(s, seed, runs * s.steps), False, options) for seed in range(args.seeds)]
            true = [s.true_reward(o.schedule) for o in outs]
            base = base or true
            mean, low, high = interval(true)
            d, dl, dh = interval([a - b for a, b in zip(true, base, strict=True)])
            copies = statistics.fmean(o.notes["copies"] for o in outs)
            print(
                f"  population {runs:2d}  {name:26} {mean:.3f} [{low:.3f}, {high:.3f}]  "
                f"{d:+.3f} [{dl:+.3f}, {dh:+.3f}]  copies {copies:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
