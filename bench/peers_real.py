"""The real tier of issue 47: the top methods of the surrogate tier run on the CPU default task itself,
real SkyRL jobs started as a user starts them, over several search seeds.

    .venv/bin/python bench/search_peers.py --tier real [--seeds 10] [--concurrent 4] [--out F]

The task is the surrogate's (bench/curves_grid.yaml): the CPU default task, `trainer.lr` log-uniform
[3e-4, 1e-2] x `algorithm.eps_clip` uniform [0.05, 0.5] (two keys that interact, both mutable by
PBT), validated every 2 steps. Each search gets the same budget of training steps (`Tier`: 4 runs of
16 steps unless set) and the same seed (the sampler's and the jobs' `trainer.seed`):

- `pbt`: this project's `method: pbt` at its defaults (population 4, interval 2), `python train.py -m`;
- `optuna tpe+median`: Optuna's own `study.optimize` (TPE, `MedianPruner`: Optuna's defaults), its
  objective a user's: start a job (`python train.py`), report each validation as it is written
  (`trial.report`), stop the job when `trial.should_prune()`; trials start until the step budget is
  spent (`study.stop()`), 2 at a time.

A search's selection is its best completed trial by final validation (a PBT trial: its schedule). Its
TRUE reward is the mean final validation of the selection trained again with seeds no search used
(TRUE_SEEDS; a PBT selection's schedule replayed). Each search's directory stays under --work: a
rerun of the bench takes a finished search's row from its `row.json`.
"""

from __future__ import annotations

import json
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peers_common import CLIP_RANGE, LR_RANGE

REPO = Path(__file__).resolve().parents[1]
METRIC = "val_reward_mean"
VAL_EVERY = 2
TRUE_SEEDS = (1000, 1001)


@dataclass(frozen=True)
class Tier:
    """The real tier's size: each search's budget is `budget_runs` runs of `steps` steps."""

    steps: int = 16
    budget_runs: int = 4

    @property
    def budget(self) -> int:
        return self.steps * self.budget_runs

    @property
    def task(self) -> list[str]:
        return [
            f"trainer.total_batches={self.steps}",
            f"trainer.test_freq={VAL_EVERY}",
            "trainer.val_before_train=false",
            "algorithm.eps_clip_high=null",  # eps_clip is the clip on both sides, as in the recorded grid
        ]

    @property
    def pbt(self) -> list[str]:
        return [
            f"trainer.lr=tag(log,interval({LR_RANGE[0]},{LR_RANGE[1]}))",
            f"algorithm.eps_clip=interval({CLIP_RANGE[0]},{CLIP_RANGE[1]})",
            "sweep.method=pbt",
            f"sweep.pbt.population={self.budget_runs}",
            f"hydra.sweeper.parallel={self.budget_runs}",
        ]


def train_py() -> list[str]:
    return [sys.executable, str(REPO / "train.py")]


def run_checked(cmd: list[str], log: Path) -> None:
    with log.open("w") as out:
        proc = subprocess.run(cmd, cwd=log.parent, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {log.read_text()[-2000:]}")


def final_value(job_dir: Path) -> float:
    from rllm_sweeps.records.result import JobResult

    result = JobResult.read(job_dir)
    if result is None or result.status != "completed":
        raise RuntimeError(f"{job_dir}: not completed ({result.status if result else 'no result.json'})")
    return float(result.final[METRIC])


def true_reward(work: Path, overrides: list[str], search_job: Path | None) -> list[float]:
    """The selection (its whole overrides) trained again with TRUE_SEEDS, at once (a PBT trial: its
    schedule replayed)."""
    from rllm_sweeps.records.schedule import read_schedule, write_schedule

    schedule = read_schedule(search_job) if search_job is not None else None
    procs = []
    for seed in TRUE_SEEDS:
        job_dir = work / f"true-{seed}"
        if (job_dir / "result.json").exists():
            continue
        if schedule is not None and schedule.segments:
            write_schedule(job_dir, schedule)
        cmd = [*train_py(), *overrides, f"trainer.seed={seed}", f"hydra.run.dir={job_dir}"]
        job_dir.mkdir(parents=True, exist_ok=True)
        with (job_dir.parent / f"true-{seed}.log").open("w") as log:  # the child keeps its own copy
            procs.append(subprocess.Popen(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT))
    for proc in procs:
        proc.wait()
    return [final_value(work / f"true-{seed}") for seed in TRUE_SEEDS]


def project_pbt(tier: Tier, work: Path, seed: int, options: tuple[str, ...] = ()) -> dict[str, Any]:
    """This project's PBT, as a user runs it (`options`: its `sweep.pbt.*` settings other than the
    defaults); the selection: the best trial by final validation."""
    from rllm_sweeps.config.planned import job_overrides
    from rllm_sweeps.records.result import JobResult

    sweep_dir = work / "sweep"
    seeds = [f"sweep.seed={seed}", f"trainer.seed={seed}"]
    cmd = [*train_py(), "-m", *tier.task, *tier.pbt, *options, *seeds, f"hydra.sweep.dir={sweep_dir}"]
    run_checked(cmd, work / "sweep.log")
    trials = [(JobResult.read(p.parent), p.parent) for p in sorted(sweep_dir.glob("jobs/*/result.json"))]
    done = [(r, d) for r, d in trials if r is not None and r.status == "completed"]
    best, best_dir = max(done, key=lambda rd: rd[0].final[METRIC])
    overrides = [o for o in job_overrides(best.overrides) if not o.startswith("trainer.seed=")]
    return {
        "claim": float(best.final[METRIC]),
        "steps": sum(r.steps for r, _ in done),
        "trials": len(done),
        "truth": true_reward(work, overrides, best_dir),
    }


def optuna_tpe_median(tier: Tier, work: Path, seed: int) -> dict[str, Any]:
    """Optuna's own loop over real jobs, as an Optuna user writes it; the selection: study.best_trial.
    The budget is counted as the jobs train (finished trials' steps and running ones' so far): when it is
    spent, the study stops and a running trial ends there, as on the surrogate."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=optuna.pruners.MedianPruner())
    steps_by_trial: dict[int, int] = {}
    lock = threading.Lock()

    def spent() -> int:
        with lock:
            return sum(steps_by_trial.values())

    def objective(trial: optuna.Trial) -> float:
        if spent() >= tier.budget:
            study.stop()
            raise optuna.TrialPruned()  # no budget left to start it
        lr = trial.suggest_float("lr", *LR_RANGE, log=True)
        clip = trial.suggest_float("eps_clip", *CLIP_RANGE)
        job_dir = work / f"trial-{trial.number}"
        overrides = [*tier.task, f"trainer.lr={lr}", f"algorithm.eps_clip={clip}"]
        trial.set_user_attr("overrides", overrides)
        cmd = [*train_py(), *overrides, f"trainer.seed={seed}", f"hydra.run.dir={job_dir}"]
        job_dir.mkdir(parents=True, exist_ok=True)
        reported: set[int] = set()
        with (work / f"trial-{trial.number}.log").open("w") as log:
            proc = subprocess.Popen(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT)
            try:
                while True:
                    ended = proc.poll() is not None
                    steps, values = progress_of(job_dir)
                    with lock:
                        steps_by_trial[trial.number] = steps
                    for step, value in values:
                        if step not in reported:
                            reported.add(step)
                            trial.report(value, step)
                            if step < tier.steps and trial.should_prune():
                                raise optuna.TrialPruned()
                    if ended:
                        return final_value(job_dir)
                    if steps < tier.steps and spent() >= tier.budget:
                        study.stop()
                        raise optuna.TrialPruned()  # the budget ran out mid-trial
                    time.sleep(1.0)
            finally:
                if proc.poll() is None:  # pruned (or the budget spent): the job checkpoints and ends
                    proc.send_signal(signal.SIGTERM)
                    proc.wait()
                with lock:
                    steps_by_trial[trial.number] = progress_of(job_dir)[0]

    study.optimize(objective, n_jobs=2, catch=())
    best = study.best_trial
    return {
        "claim": float(best.value),
        "steps": spent(),
        "trials": len(study.trials),
        "truth": true_reward(work, best.user_attrs["overrides"], None),
    }


def progress_of(job_dir: Path) -> tuple[int, list[tuple[int, float]]]:
    """A running job's steps trained so far and its validations (step, value) from its metrics.jsonl."""
    from rllm_sweeps.records.metrics import read_metrics

    rows = read_metrics(job_dir) if (job_dir / "metrics.jsonl").exists() else []
    steps = max((r.step for r in rows if r.kind == "train"), default=0)
    values = [(r.step, v) for r in rows if r.kind == "val" and (v := r.value(METRIC)) is not None]
    return steps, values


Method = Callable[[Tier, Path, int], dict[str, Any]]
METHODS: dict[str, Method] = {
    "pbt": project_pbt,
    "optuna tpe+median": optuna_tpe_median,
}


def pbt_variant(options: list[str]) -> tuple[str, Method]:
    """This project's PBT with `sweep.pbt.*` settings other than its defaults (`--pbt-options`), named
    by them: "pbt interval=4 burn_in=8"."""
    bad = [o for o in options if not o.startswith("sweep.pbt.")]
    if bad:
        raise SystemExit(f"error: --pbt-options takes sweep.pbt.KEY=VALUE settings; got {bad}")
    name = " ".join(["pbt", *(o.removeprefix("sweep.pbt.") for o in options)])
    return name, lambda tier, work, seed: project_pbt(tier, work, seed, tuple(options))


def run(
    tier: Tier, seeds: range, work: Path, concurrent: int, methods: dict[str, Method], progress: bool = True
) -> dict[str, list[dict]]:
    """Each of `methods` on `seeds`, `concurrent` searches at a time; rows as search_peers keeps them."""
    # Jobs start in their search's directory, outside the checkout: a job's working directory goes on its
    # PYTHONPATH, where an uninstalled checkout would shadow an installed package (bench/search_real.sh).
    work = work.resolve()
    tasks = [(name, seed) for seed in seeds for name in methods]

    def one(name: str, seed: int) -> tuple[str, dict]:
        dest = work / f"{re.sub(r'[^A-Za-z0-9.+-]', '_', name)}-{seed}"  # a path Hydra's overrides take
        saved = dest / "row.json"
        if saved.exists():
            return name, json.loads(saved.read_text())
        dest.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        out = methods[name](tier, dest, seed)
        row = {"method": name, "seed": seed, "true": statistics.fmean(out["truth"]), **out}
        row["wall_s"] = time.monotonic() - start
        saved.write_text(json.dumps(row, indent=2))
        if progress:
            print(
                f"  seed {seed} {name}: true {row['true']:.3f} claim {row['claim']:.3f} "
                f"({row['steps']} steps, {row['trials']} trials, {row['wall_s']:.0f} s)",
                flush=True,
            )
        return name, row

    rows: dict[str, list[dict]] = {name: [] for name in methods}
    with ThreadPoolExecutor(concurrent) as pool:
        for future in [pool.submit(one, name, seed) for name, seed in tasks]:
            try:
                name, row = future.result()
            except Exception as e:  # a failed search is said, not hidden; the others go on
                print(f"  FAILED: {type(e).__name__}: {e}", flush=True)
                continue
            rows[name].append(row)
    for v in rows.values():
        v.sort(key=lambda r: r["seed"])
    return rows


def saved_rows(folder: Path) -> dict[str, list[dict]]:
    """The rows of finished searches kept as files (`row.json`s, e.g. copied off another machine), by
    method (a PBT variant's name its settings)."""
    rows: dict[str, list[dict]] = {name: [] for name in METHODS}
    for f in sorted(folder.rglob("*.json")):
        row = json.loads(f.read_text())
        if isinstance(row, dict) and isinstance(row.get("method"), str) and "seed" in row:
            rows.setdefault(row["method"], []).append(row)
    for v in rows.values():
        v.sort(key=lambda r: r["seed"])
    return rows
