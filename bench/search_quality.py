"""Search quality: the TRUE reward of the config each search method selects, not its best trial.

    .venv/bin/python bench/search_quality.py [--seeds 0 1 2] [--out DIR] [OVERRIDE ...]

Four searches over `trainer.lr` on the CPU default task, each with the same budget of training
steps (4 jobs of 12 steps; ASHA's pruning spends fewer), each with its confirmation stage
(`sweep.confirm`: the top 2 points, 2 fresh seeds each), run as a user runs them
(`python train.py -m ...`), once per sweep seed (the search's `sweep.seed` and the jobs'
`trainer.seed`):

    grid      trainer.lr=1e-4,4.6e-4,2.2e-3,1e-2
    random    4 draws, log-uniform over [1e-4, 1e-2]
    tpe+asha  Optuna TPE (2 random start-up trials), ASHA (min_resource 4, reduction 2), 4 trials
    pbt       population 4, interval 4, quantile 0.25 (the schedule is the config)

The selected config is the confirmation's winner (`best`); its **true** reward is the mean final
`val_reward_mean` of 3 more jobs with seeds no search or confirmation used (1000, 1001, 1002;
a PBT winner's schedule replayed with them). Printed: one line per (method, seed), then each
method's mean true reward over the seeds, with the search's own claim beside it. The sweep
directories stay under --out: a rerun resumes what did not finish.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

LR = "trainer.lr=tag(log,interval(1e-4,1e-2))"
METHODS: dict[str, list[str]] = {
    "grid": ["trainer.lr=1e-4,4.6e-4,2.2e-3,1e-2"],
    "random": [LR, "sweep.method=random", "sweep.budget=4"],
    "tpe+asha": [
        LR,
        "sweep.method=optuna",
        "sweep.budget=4",
        "sweep.optuna.sampler=tpe",
        "sweep.optuna.sampler_options={n_startup_trials:2}",
        "sweep.optuna.pruner=asha",
        "sweep.optuna.pruner_options={min_resource:4,reduction_factor:2}",
    ],
    "pbt": [LR, "sweep.method=pbt", "sweep.pbt.population=4", "sweep.pbt.interval=4"],
}
COMMON = [
    "trainer.total_batches=12",
    "trainer.test_freq=4",
    "trainer.save_freq=4",
    "trainer.val_before_train=false",
    "sweep.confirm.top=2",
    "sweep.confirm.seeds=2",
    "hydra.sweeper.parallel=2",
]
TRUE_SEEDS = (1000, 1001, 1002)
METRIC = "val_reward_mean"


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def search(sweep_dir: Path, method: str, seed: int, extra: list[str]) -> float:
    """Run (or resume) one search with its confirmation; its wall time."""
    cmd = [sys.executable, str(REPO / "train.py"), "-m", *COMMON, *METHODS[method], *extra]
    cmd += [f"sweep.seed={seed}", f"trainer.seed={seed}", f"hydra.sweep.dir={sweep_dir}"]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return time.monotonic() - start


def selected(sweep_dir: Path) -> tuple[list[str], Path, float, float]:
    """The confirmed best: (its overrides without the seed, its search job's directory, the
    search's own value of it, its confirmation mean)."""
    from rllm_sweeps.config.planned import job_overrides
    from rllm_sweeps.report import build_report

    report = build_report(sweep_dir)
    c = report.confirmation
    assert c is not None and c.winner is not None, f"{sweep_dir}: no confirmation"
    point = next(p for p in report.points if p.point_index == c.winner.point_index)
    job = next(j for j in report.jobs if j.index == point.jobs[0])
    claim = point.metrics[METRIC].mean
    return job_overrides(point.overrides), job.job_dir, claim, c.stats.ranking[0].mean


def true_reward(out: Path, overrides: list[str], search_job: Path) -> list[float]:
    """The selected config (a PBT trial: its schedule) trained again with TRUE_SEEDS, 2 at a time."""
    from rllm_sweeps.records.result import JobResult
    from rllm_sweeps.records.schedule import read_schedule, write_schedule

    schedule = read_schedule(search_job)
    procs = []
    values = []
    for seed in TRUE_SEEDS:
        job_dir = out / f"true-{seed}"
        done = JobResult.read(job_dir)
        if done is not None and done.status == "completed":
            values.append(done.final[METRIC])
            continue
        if schedule.segments:
            write_schedule(job_dir, schedule)
        cmd = [sys.executable, str(REPO / "train.py"), *overrides, f"trainer.seed={seed}", f"hydra.run.dir={job_dir}"]
        procs.append((job_dir, subprocess.Popen(cmd, cwd=REPO, env=env(), stdout=subprocess.DEVNULL)))
        if len(procs) == 2:
            procs[0][1].wait()
    for job_dir, proc in procs:
        proc.wait()
        result = JobResult.read(job_dir)
        assert result is not None and result.status == "completed", f"{job_dir}: {result}"
        values.append(result.final[METRIC])
    return values


def steps_spent(sweep_dir: Path) -> int:
    from rllm_sweeps.records.result import JobResult

    return sum(r.steps for p in sweep_dir.glob("jobs/*/result.json") if (r := JobResult.read(p.parent)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="sweep seeds (default 0 1 2)")
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--out", type=Path, default=Path("/tmp/search_quality"))
    args, extra = ap.parse_known_args()
    rows: dict[str, list[dict]] = {m: [] for m in args.methods}
    for seed in args.seeds:
        for method in args.methods:
            out = args.out / f"{method}-{seed}"
            wall = search(out / "sweep", method, seed, extra)
            overrides, job_dir, claim, confirmed = selected(out / "sweep")
            truth = true_reward(out, overrides, job_dir)
            lr = next((o.split("=", 1)[1] for o in overrides if o.startswith("trainer.lr=")), "?")
            row = {
                "method": method,
                "seed": seed,
                "selected_lr": lr,
                "search_claim": claim,
                "confirmed": confirmed,
                "true": statistics.fmean(truth),
                "true_values": truth,
                "search_steps": steps_spent(out / "sweep"),
                "wall_s": wall,
            }
            rows[method].append(row)
            (out / "row.json").write_text(json.dumps(row, indent=2))
            print(
                f"{method:9} seed {seed}: selected lr {float(lr):.3g}  search claims {claim:.3f}, "
                f"confirmed {confirmed:.3f}, true {row['true']:.3f} {' '.join(f'{v:.3f}' for v in truth)}  "
                f"({row['search_steps']} search steps, sweep {wall:.0f} s)",
                flush=True,
            )
    print("\nmethod     true reward of the selection (mean ± std over seeds)   search's claim   search steps")
    for method, rs in rows.items():
        truth = [r["true"] for r in rs]
        std = statistics.stdev(truth) if len(truth) > 1 else 0.0
        claim = statistics.fmean(r["search_claim"] for r in rs)
        steps = statistics.fmean(r["search_steps"] for r in rs)
        true = f"{statistics.fmean(truth):.3f} ± {std:.3f} (n={len(truth)})"
        print(f"{method:9}  {true:<53}  {claim:<15.3f}  {steps:.0f}")


if __name__ == "__main__":
    main()
