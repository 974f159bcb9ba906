"""Ray Tune's searches on the surrogate, as a Ray Tune user runs them: a function trainable that steps
the surrogate and reports its validation reward (`tune.report`, with a checkpoint of its state:
PBT and PB2 copy it), run by `Tuner.fit` on a local Ray of 2 CPUs.

- `PopulationBasedTraining` (its defaults: quantile 0.25, resample 0.25, factors 0.8/1.2), the
  population spending the budget, perturbing every 4 steps (the interval in validations);
- `PB2` (GPy, scikit-learn), the same, over the same bounds (lr as log10);
- `ASHAScheduler` (its defaults: grace 1, reduction 4) with `OptunaSearch` (Optuna's TPE), one trial
  at a time, until the step budget is spent (a Stopper stops the run).

The search seed seeds the searcher and Python's `random` (PBT's and PB2's draws); trial noise is
seeded by the seed and the trial's id (its own stream; not the other methods' trial numbers).
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from peers_common import CLIP_RANGE, LR_RANGE, Outcome, Sim
from surrogate import Surrogate

HERE = Path(__file__).resolve().parent
INTERVAL_STEPS = 4  # PBT's and PB2's perturbation interval in steps (2 validations)
_started = False


def start_ray() -> None:
    """A local Ray of 2 CPUs, quiet; stopped by stop_ray() (only the Ray this process started)."""
    global _started
    if _started:
        return
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")])
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR", configure_logging=False)
    _started = True


def stop_ray() -> None:
    global _started
    if _started:
        import ray

        ray.shutdown()
        _started = False


def trainable(config: dict[str, Any], surrogate: Surrogate, seed: int, checkpoint_every: int) -> None:
    """One trial: steps the surrogate from its checkpoint (if any) to the last step, reporting each
    validation, every `checkpoint_every`-th with a checkpoint of (step, quality, schedule) (0: none;
    PBT and PB2 copy the one of their perturbation interval)."""
    import numpy as np
    from ray import tune

    lr = 10 ** config["log10_lr"] if "log10_lr" in config else config["lr"]
    x = (float(lr), float(config["eps_clip"]))
    state: dict[str, Any] = {"t": 0, "q": surrogate.q0, "schedule": []}
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            state = json.loads(Path(d, "state.json").read_text())
    # Its own stream (also after a copy): Ray names trials by ids, not the other methods' numbers.
    trial = zlib.crc32(tune.get_context().get_trial_id().encode())
    if not state["schedule"] or tuple(state["schedule"][-1][1:]) != x:
        state["schedule"] = [*state["schedule"], [state["t"], *x]]
    while state["t"] < surrogate.steps:
        rng = np.random.default_rng([seed, 0, trial, state["t"]])
        state["q"] = surrogate.step(state["q"], x, rng)
        state["t"] += 1
        if state["t"] % surrogate.val_every == 0:
            y = surrogate.observe(state["q"], rng)
            metrics = {"reward": y, "step": state["t"], "schedule": json.dumps(state["schedule"])}
            if not checkpoint_every or (state["t"] // surrogate.val_every) % checkpoint_every:
                tune.report(metrics)
                continue
            with tempfile.TemporaryDirectory() as d:
                Path(d, "state.json").write_text(json.dumps(state))
                tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(d))


def _fit(sim: Sim, param_space: dict, tune_config: Any, stop: Any = None, checkpoint_every: int = 0) -> Outcome:
    from ray import tune

    start_ray()
    random.seed(sim.seed)
    fn = tune.with_resources(
        tune.with_parameters(trainable, surrogate=sim.s, seed=sim.seed, checkpoint_every=checkpoint_every), {"cpu": 0.1}
    )
    run = tune.RunConfig(
        name=f"peers-{tune_config.scheduler.__class__.__name__}-{sim.seed}-{time.time_ns()}",
        storage_path=str(Path(tempfile.gettempdir()) / "h47_ray_results"),
        verbose=0,
        stop=stop,
        checkpoint_config=tune.CheckpointConfig(num_to_keep=4),
    )
    results = tune.Tuner(fn, param_space=param_space, tune_config=tune_config, run_config=run).fit()
    done = [r for r in results if r.metrics and r.metrics.get("step") == sim.s.steps]
    steps = sum(int(r.metrics.get("step", 0)) for r in results if r.metrics)
    best = max(done, key=lambda r: r.metrics["reward"])
    schedule = [(int(t), float(lr), float(c)) for t, lr, c in json.loads(best.metrics["schedule"])]
    return Outcome(schedule, float(best.metrics["reward"]), steps, len(results))


def _population(sim: Sim) -> int:
    return sim.budget // sim.s.steps


def pbt(sim: Sim, confirm: bool = False) -> Outcome:
    from ray import tune
    from ray.tune.schedulers import PopulationBasedTraining

    space = {"lr": tune.loguniform(*LR_RANGE), "eps_clip": tune.uniform(*CLIP_RANGE)}
    scheduler = PopulationBasedTraining(
        time_attr="training_iteration",
        perturbation_interval=INTERVAL_STEPS // sim.s.val_every,
        hyperparam_mutations=space,
    )
    config = tune.TuneConfig(
        metric="reward", mode="max", scheduler=scheduler, num_samples=_population(sim), reuse_actors=True
    )
    return _fit(sim, space, config, checkpoint_every=INTERVAL_STEPS // sim.s.val_every)


def pb2(sim: Sim, confirm: bool = False) -> Outcome:
    from ray import tune
    from ray.tune.schedulers.pb2 import PB2

    lo, hi = math.log10(LR_RANGE[0]), math.log10(LR_RANGE[1])
    scheduler = PB2(
        time_attr="training_iteration",
        perturbation_interval=INTERVAL_STEPS // sim.s.val_every,
        hyperparam_bounds={"log10_lr": [lo, hi], "eps_clip": list(CLIP_RANGE)},
    )
    space = {"log10_lr": tune.uniform(lo, hi), "eps_clip": tune.uniform(*CLIP_RANGE)}
    config = tune.TuneConfig(
        metric="reward", mode="max", scheduler=scheduler, num_samples=_population(sim), reuse_actors=True
    )
    return _fit(sim, space, config, checkpoint_every=INTERVAL_STEPS // sim.s.val_every)


class StepBudget:
    """Stops the whole run once the trials' steps reach the budget (Ray's public Stopper interface)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.last: dict[str, int] = {}

    def __call__(self, trial_id: str, result: dict) -> bool:
        self.last[trial_id] = int(result.get("step", 0))
        return False

    def stop_all(self) -> bool:
        return sum(self.last.values()) >= self.budget


def asha_tpe(sim: Sim, confirm: bool = False) -> Outcome:
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search.optuna import OptunaSearch

    space = {"lr": tune.loguniform(*LR_RANGE), "eps_clip": tune.uniform(*CLIP_RANGE)}
    scheduler = ASHAScheduler(time_attr="training_iteration", max_t=sim.s.steps // sim.s.val_every)
    config = tune.TuneConfig(
        metric="reward",
        mode="max",
        scheduler=scheduler,
        search_alg=OptunaSearch(seed=sim.seed),
        num_samples=4 * _population(sim),
        max_concurrent_trials=1,
        reuse_actors=True,  # one worker process for the trials run one after another
    )
    stopper = StepBudget(sim.budget)
    return _fit(sim, space, config, _as_stopper(stopper))


def _as_stopper(budget: StepBudget) -> Any:
    from ray.tune import Stopper

    class _Budget(Stopper):
        def __call__(self, trial_id: str, result: dict) -> bool:
            return budget(trial_id, result)

        def stop_all(self) -> bool:
            return budget.stop_all()

    return _Budget()


METHODS = {"ray pbt": pbt, "ray pb2": pb2, "ray asha+optuna-tpe": asha_tpe}

if __name__ == "__main__":  # a smoke run: python bench/peers_ray.py [data] [runs]
    import surrogate as sur

    s = sur.fit(sur.load(Path(sys.argv[1]) if len(sys.argv) > 1 else sur.DATA))
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    try:
        for name, fn in METHODS.items():
            out = fn(Sim(s, 0, runs * s.steps))
            print(name, s.true_reward(out.schedule), out.steps, out.trials, out.schedule)
    finally:
        stop_ray()
