"""Which search selects the better config for the same compute: this project's searches against Ray
Tune's and Optuna's, side by side over many seeds, on a surrogate of the CPU default task (issue 47).

    .venv/bin/python bench/search_peers.py [--seeds 50] [--ray-seeds 50] [--budget-runs 16]
    .venv/bin/python bench/search_peers.py --tier real [--seeds 10] [--concurrent 2]   # bench/peers_real.py

The task: `trainer.lr` (log-uniform [3e-4, 1e-2]) x `algorithm.eps_clip` (uniform [0.05, 0.5]),
24 training steps validated every 2, simulated by bench/surrogate.py (fitted to the real grid in
bench/data/curves_lr_clip.json; its fidelity is printed first). Every search gets the same budget
of training steps (--budget-runs full runs x 24 steps) and the same seeds (search seed s: the
samplers' seed, and trial n's noise stream is the same in every method). A search's selection is
its best completed trial by its final validation (what the project's report and a user reading
Ray's or Optuna's results pick), or with confirmation (`+confirm`: the project's stage, the top 2
points x 2 fresh seeds, spent out of the same budget) the stage's winner. The figure is the
selection's TRUE reward: the surrogate's noise-free final reward of the selected config (a PBT
selection: its schedule), what fresh seeds give on average.

Printed: per method the mean true reward over seeds with its 95% interval (Student t), the steps
spent and the search's own claim; then each method's difference to the best peer, paired by seed,
with its 95% interval.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

import peers_optuna  # noqa: E402
import peers_project  # noqa: E402
import surrogate  # noqa: E402
from peers_common import CLIP_RANGE, LR_RANGE, Outcome, Sim  # noqa: E402

Method = Callable[[Sim, bool], Outcome]
PEER_PREFIXES = ("ray ", "optuna ")


def methods(with_ray: bool) -> dict[str, tuple[Method, bool]]:
    out: dict[str, tuple[Method, bool]] = {}
    for name, fn in peers_project.METHODS.items():
        out[name] = (fn, False)
        out[name + " +confirm"] = (fn, True)
    for name, fn in peers_optuna.METHODS.items():
        out[name] = (fn, False)
    if with_ray:
        import peers_ray

        for name, fn in peers_ray.METHODS.items():
            out[name] = (fn, False)
    return out


def interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and its 95% Student-t interval."""
    from scipy import stats

    mean = statistics.fmean(values)
    if len(values) < 2 or statistics.pstdev(values) == 0:
        return mean, mean, mean
    low, high = stats.t.interval(0.95, len(values) - 1, loc=mean, scale=stats.sem(values))
    return mean, float(low), float(high)


def best_fixed(s: surrogate.Surrogate, n: int = 60) -> tuple[float, float, float]:
    """The best fixed config's true reward on a dense grid (what a perfect search of fixed configs gets)."""
    import numpy as np

    lrs = np.geomspace(*LR_RANGE, n)
    clips = np.linspace(*CLIP_RANGE, n)
    return max((s.true_reward([(0, float(lr), float(c))]), float(lr), float(c)) for lr in lrs for c in clips)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=50, help="search seeds FIRST..N-1 (default 50)")
    ap.add_argument("--first-seed", type=int, default=0, help="FIRST: continue an earlier run's seeds (default 0)")
    ap.add_argument("--ray-seeds", type=int, default=50, help="seeds for Ray Tune's methods (slow; 0: none)")
    ap.add_argument("--budget-runs", type=int, default=16, help="the budget: full runs' worth of steps")
    ap.add_argument("--only", nargs="*", help="run only these methods")
    ap.add_argument("--data", type=Path, default=surrogate.DATA)
    ap.add_argument("--out", type=Path, default=Path("/tmp/search_peers.json"))
    ap.add_argument("--progress", action="store_true", help="a line per search")
    ap.add_argument("--tier", choices=("surrogate", "real"), default="surrogate", help="real: bench/peers_real.py")
    ap.add_argument("--real-steps", type=int, default=16, help="the real tier: steps of a run (default 16)")
    ap.add_argument("--real-runs", type=int, default=4, help="the real tier: the budget in runs (default 4)")
    ap.add_argument("--concurrent", type=int, default=2, help="the real tier: searches at once (default 2)")
    ap.add_argument(
        "--pbt-options",
        nargs="+",
        action="append",
        metavar="sweep.pbt.KEY=VALUE",
        help="the real tier: a PBT variant, named by its settings (repeat the flag for several)",
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/search_real"), help="the real tier's directories")
    ap.add_argument("--rows", type=Path, help="the real tier: only print the figures of the row files under ROWS")
    ap.add_argument("--summarize", type=Path, nargs="+", help="only print the figures of earlier runs' --out files")
    args = ap.parse_args()
    if args.summarize:  # several files: their methods together (Ray Tune's run apart, or a run continued)
        summary(*merged([json.loads(p.read_text()) for p in args.summarize]))
        return

    if args.tier == "real":
        import peers_real

        if args.rows:  # searches already run, elsewhere (bench/search_real.sh on the device machine)
            rows = peers_real.saved_rows(args.rows)
            summary(rows, {k: sum(r["wall_s"] for r in v) for k, v in rows.items()})
            return

        tier = peers_real.Tier(steps=args.real_steps, budget_runs=args.real_runs)
        print(f"real tier: the CPU default task, {tier.budget_runs} runs x {tier.steps} steps a search", flush=True)
        start = time.monotonic()
        table = dict(peers_real.METHODS)
        table.update(peers_real.pbt_variant(options) for options in args.pbt_options or [])
        if args.only:
            table = {k: v for k, v in table.items() if k in args.only}
        rows = peers_real.run(tier, range(args.first_seed, args.seeds), args.work, args.concurrent, table)
        walls = {k: sum(r["wall_s"] for r in v) for k, v in rows.items()}
        args.out.write_text(json.dumps({"rows": rows, "wall_s": walls}))
        print(f"({time.monotonic() - start:.0f} s in all)")
        summary(rows, walls)
        return

    runs = surrogate.load(args.data)
    s = surrogate.fit(runs)
    f = surrogate.fidelity(runs)
    print(
        f"surrogate: {len(runs)} real runs; fidelity (leave one config out): Pearson r {f['loo_pearson_r']:.3f}, "
        f"RMSE {f['loo_rmse']:.3f} (seed sd of a final {f['seed_sd_of_final']:.3f})"
    )
    top, top_lr, top_clip = best_fixed(s)
    print(f"best fixed config on the surrogate: lr {top_lr:.2e}, eps_clip {top_clip:.2f}: true reward {top:.3f}")
    budget = args.budget_runs * s.steps
    print(f"budget: {budget} training steps per search ({args.budget_runs} runs x {s.steps} steps)\n", flush=True)

    table = methods(args.ray_seeds > 0)
    if args.only:
        table = {k: v for k, v in table.items() if k in args.only}
    rows: dict[str, list[dict]] = {name: [] for name in table}
    walls = dict.fromkeys(table, 0.0)
    try:
        # Seed-major: a run stopped early (Ray Tune is slow) still has every method on its first seeds.
        for seed in range(args.first_seed, max(args.seeds, args.ray_seeds)):
            for name, (fn, confirm) in table.items():
                if seed >= (args.ray_seeds if name.startswith("ray ") else args.seeds):
                    continue
                start = time.monotonic()
                try:
                    out = fn(Sim(s, seed, budget), confirm)
                except Exception as e:  # a failed search is said, not hidden; the others go on
                    print(f"  seed {seed} {name}: FAILED: {type(e).__name__}: {e}", flush=True)
                    continue
                walls[name] += time.monotonic() - start
                row = {"seed": seed, "true": s.true_reward(out.schedule), "claim": out.claim, "steps": out.steps}
                rows[name].append({**row, "trials": out.trials, "schedule": out.schedule, **out.notes})
                if args.progress:
                    print(f"  seed {seed} {name}: true {row['true']:.3f} claim {row['claim']:.3f}", flush=True)
            args.out.write_text(json.dumps({"rows": rows, "wall_s": walls}))
    finally:
        if args.ray_seeds > 0:
            import peers_ray

            peers_ray.stop_ray()
    summary(rows, walls)


def merged(saved: list[dict]) -> tuple[dict[str, list[dict]], dict[str, float]]:
    """Several runs' rows as one: a method's rows from each file (a seed run twice is refused), its
    wall-clock time summed."""
    rows: dict[str, list[dict]] = {}
    walls: dict[str, float] = {}
    for f in saved:
        for name, v in f["rows"].items():
            seen = {r["seed"] for r in rows.get(name, [])}
            again = sorted(seen & {r["seed"] for r in v})
            if again:
                sys.exit(f"error: {name}: seeds {again} appear in two of the --summarize files")
            rows.setdefault(name, []).extend(v)
            walls[name] = walls.get(name, 0.0) + f["wall_s"].get(name, 0.0)
    return rows, walls


def summary(rows: dict[str, list[dict]], walls: dict[str, float]) -> None:
    for name, v in rows.items():
        if not v:
            continue
        mean, low, high = interval([r["true"] for r in v])
        steps = statistics.fmean(r["steps"] for r in v)
        claim = statistics.fmean(r["claim"] for r in v)
        print(
            f"{name:24} true {mean:.3f} [{low:.3f}, {high:.3f}]  steps {steps:5.0f}  claim {claim:.3f}  "
            f"(n={len(v)}, {walls.get(name, 0.0) / len(v):.2f} s per search)"
        )
    report(rows)


def report(rows: dict[str, list[dict]]) -> None:
    means = {k: statistics.fmean(r["true"] for r in v) for k, v in rows.items() if v}
    peers = [k for k in means if k.startswith(PEER_PREFIXES)]
    if not peers:
        return
    best_peer = max(peers, key=lambda k: means[k])
    print(f"\ndifference to the best peer ({best_peer}, {means[best_peer]:.3f}), paired by seed, 95% interval:")
    peer_by_seed = {r["seed"]: r["true"] for r in rows[best_peer]}
    for name, v in rows.items():
        diffs = [r["true"] - peer_by_seed[r["seed"]] for r in v if r["seed"] in peer_by_seed]
        if name == best_peer or len(diffs) < 2:
            continue
        mean, low, high = interval(diffs)
        print(f"  {name:24} {mean:+.3f} [{low:+.3f}, {high:+.3f}]  (n={len(diffs)})")


if __name__ == "__main__":
    main()
