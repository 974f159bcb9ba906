"""The peers a user of Optuna alone would run on the surrogate: `study.optimize` with Optuna's own
defaults (TPE; MedianPruner or HyperbandPruner), and random search (RandomSampler, no pruning).
Each trial reports its validations (`trial.report`, `trial.should_prune`) as the objective of a
user's training loop would; the step budget stops the study (`study.stop()`)."""

from __future__ import annotations

from typing import Any

from peers_common import CLIP_RANGE, LR_RANGE, Outcome, Sim


def _optimize(sim: Sim, sampler: Any, pruner: Any) -> Outcome:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)
    s = sim.s
    counter = {"n": 0}

    def objective(trial: optuna.Trial) -> float:
        lr = trial.suggest_float("lr", *LR_RANGE, log=True)
        clip = trial.suggest_float("eps_clip", *CLIP_RANGE)
        rng = sim.rng(counter["n"])
        counter["n"] += 1
        q, value = s.q0, float("nan")
        for t in range(1, s.steps + 1):
            if sim.left <= 0:
                study.stop()
                raise optuna.TrialPruned()  # the budget ran out mid-trial
            q = s.step(q, (lr, clip), rng)
            sim.spent += 1
            if t % s.val_every == 0:
                value = s.observe(q, rng)
                trial.report(value, t)
                if t < s.steps and trial.should_prune():
                    raise optuna.TrialPruned()
        return value

    def stop_when_spent(study: optuna.Study, _: Any) -> None:
        if sim.left <= 0:
            study.stop()

    study.optimize(objective, callbacks=[stop_when_spent])
    best = study.best_trial  # the best COMPLETE trial by its final validation
    schedule = [(0, best.params["lr"], best.params["eps_clip"])]
    return Outcome(schedule, float(best.value), sim.spent, len(study.trials))


def tpe_median(sim: Sim, confirm: bool = False) -> Outcome:
    import optuna

    return _optimize(sim, optuna.samplers.TPESampler(seed=sim.seed), optuna.pruners.MedianPruner())


def tpe_hyperband(sim: Sim, confirm: bool = False) -> Outcome:
    import optuna

    return _optimize(sim, optuna.samplers.TPESampler(seed=sim.seed), optuna.pruners.HyperbandPruner())


def random_search(sim: Sim, confirm: bool = False) -> Outcome:
    import optuna

    return _optimize(sim, optuna.samplers.RandomSampler(seed=sim.seed), optuna.pruners.NopPruner())


METHODS = {
    "optuna tpe+median": tpe_median,
    "optuna tpe+hyperband": tpe_hyperband,
    "optuna random": random_search,
}
