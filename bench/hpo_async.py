"""Asynchronous trials vs synchronous batches: the same Optuna trial budget, in one run.

    .venv/bin/python bench/hpo_async.py [--trials 12] [--parallel 4] [--reward-s 0.05]

Both runs drive real training jobs through our launcher (local processes) and our Optuna
source (rllm_sweeps.sweep.optuna_search.OptunaSource), with the random sampler under the same
seed, so they run the very same 12 trials, in the same order:

- async: a trial is asked the moment a slot frees (what `method: optuna` does);
- sync: `parallel` trials are asked together and the next batch waits for the slowest of
  them (what the Hydra Optuna sweeper does: ask n_jobs trials, launch, wait for all, tell).

Trial durations are heterogeneous through a real knob, `trainer.total_batches` (1, 2, 3 or
32 steps). Each step's reward is computed by a slow verifier (tests/probes/slow_reward.py,
`--reward-s` seconds per response, sleeping, not computing): on this 2-core machine that keeps a
job's duration independent of how many jobs run beside it, as it is on a cluster where each
trial has its own GPUs; CPU-bound steps would instead slow each other down.

Printed: wall time of each run and their ratio; slot utilisation = the job seconds (submit to
end, as the runner sees them) / (parallel x wall), over the whole run and over the part
before the last trial is handed out (after it, a finite budget leaves slots empty whatever
the scheduler does).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STEPS = "1,2,3,32"


@dataclass
class Timed:
    """A JobSource wrapper that records when each job was handed out and when it ended; with
    `batch`, it hands out the next `batch` jobs only once every job handed out has ended."""

    source: Any
    batch: int | None = None
    spans: dict[int, list[float]] = field(default_factory=dict)
    last_handout: float = 0.0

    @property
    def static(self) -> bool:
        return False

    def done_before(self) -> dict:
        return self.source.done_before()

    def next_jobs(self, free_slots: int) -> list:
        in_flight = sum(1 for s in self.spans.values() if len(s) == 1)
        if self.batch is not None:
            if in_flight:
                return []  # a synchronous batch waits for its slowest trial
            free_slots = self.batch
        jobs = self.source.next_jobs(free_slots)
        now = time.monotonic()
        for run in jobs:
            self.spans[run.job.index] = [now]
            self.last_handout = now
        return jobs

    def exhausted(self) -> bool:
        return self.source.exhausted()

    def pending(self) -> int:
        return self.source.pending()

    def on_result(self, run: Any, result: Any) -> None:
        self.spans[run.job.index].append(time.monotonic())
        self.source.on_result(run, result)


def run(mode: str, args: argparse.Namespace, root: Path) -> dict[str, float]:
    from launchers.local import LocalLauncher
    from rllm_sweeps.sweep import plan_sweep
    from rllm_sweeps.sweep.optuna_search import OptunaSource
    from rllm_sweeps.sweep.runner import SweepRunner

    overrides = [
        f"trainer.total_batches={STEPS}",
        "sweep.method=optuna",
        "sweep.optuna.sampler=random",
        "sweep.optuna.pruner=none",
        f"sweep.budget={args.trials}",
        "sweep.seed=0",
        "task.reward=tests.probes.slow_reward:slow_reward",
        "data.train_batch_size=8",
        "rollout.n=4",
        "trainer.val_before_train=false",
        "trainer.test_freq=0",
        "task.dataset.val_size=8",
    ]
    plan = plan_sweep(overrides)
    sweep_dir = root / mode
    optuna_source = OptunaSource(plan.spec, list(plan.base_overrides), sweep_dir)
    source = Timed(optuna_source, args.parallel if mode == "sync" else None)
    runner = SweepRunner(
        source, sweep_dir, LocalLauncher(), args.parallel, metric=plan.spec.metric[0], progress_every_s=60
    )
    start = time.monotonic()
    runner.run()
    end = time.monotonic()
    wall = end - start
    busy = sum(e - s for s, e in source.spans.values())
    until = source.last_handout
    busy_before = sum(min(e, until) - s for s, e in source.spans.values() if s < until)
    steps = sorted(int(j.params["trainer.total_batches"]) for j in source.source.plan_jobs)
    return {
        "wall": wall,
        "utilisation": busy / (args.parallel * wall),
        "utilisation_until_last": busy_before / (args.parallel * (until - start)) if until > start else 1.0,
        "job_s": busy,
        "steps": steps,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=12)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--reward-s", type=float, default=0.05, help="seconds the verifier takes per response")
    args = ap.parse_args()
    os.environ["SLOW_REWARD_S"] = str(args.reward_s)
    os.chdir(REPO)  # the jobs import tests.probes.slow_reward from here
    results = {}
    with tempfile.TemporaryDirectory(prefix="hpo_async-") as tmp:
        for mode in ("async", "sync"):
            results[mode] = run(mode, args, Path(tmp))
    assert results["async"]["steps"] == results["sync"]["steps"], "the two runs must run the same trials"
    print(f"\n{args.trials} trials, {args.parallel} at a time; steps per trial: {results['async']['steps']}")
    print(f"{'mode':6}  {'wall':>7}  {'job-seconds':>11}  {'utilisation':>11}  {'until last handed out':>21}")
    for mode, r in results.items():
        print(
            f"{mode:6}  {r['wall']:6.0f}s  {r['job_s']:10.0f}s  {r['utilisation']:10.0%}  "
            f"{r['utilisation_until_last']:20.0%}"
        )
    print(f"async / sync wall time: {results['async']['wall'] / results['sync']['wall']:.2f}")


if __name__ == "__main__":
    main()
