"""This project's searches on the surrogate, through its own decision code (issue 47):

- the space, the grid and the random draws: the sweep DSL (`parse_sweep`) and `SearchSpace`
  (`grid()`, `sample()`: Optuna's RandomSampler seeded with `sweep.seed`), as the planner uses them;
- TPE+ASHA: the sampler and pruner `make_sampler`/`make_pruner` build from the sweep's `optuna:`
  block, asked and told as `sweep/optuna_search.py` does, reported as `training/trial.py` does
  (each validation's value at its step, `should_prune()` before the last step);
- PBT: `pbt_settings()` of the sweep's `pbt:` block and `pbt/decision.py`'s `decide()` at every
  interval, each trial against the latest reported scores; an Exploit copies the source's state of
  that step and continues with the explored settings (what `pbt/member.py` applies);
- the confirmation stage: `sweep/confirm_rule.py` (the top points, then the best fresh-seed mean).

Only the trials' training is simulated (bench/surrogate.py): every decision is the product's.
"""

from __future__ import annotations

from typing import Any

from peers_common import CLIP_KEY, CLIP_RANGE, CONFIRM_SEEDS, CONFIRM_TOP, LR_KEY, LR_RANGE, SPACE_ARGS, Outcome, Sim
from surrogate import Segment

from rllm_sweeps.sweep import parse_sweep
from rllm_sweeps.sweep.confirm_rule import confirmed_best, top_points
from rllm_sweeps.sweep.space import SearchSpace
from rllm_sweeps.sweep.spec import SweepSpec

GRID_SHAPES = {4: (2, 2), 8: (4, 2), 12: (4, 3), 16: (4, 4), 28: (7, 4), 32: (8, 4)}  # runs -> lr x clip values


def grid_values(runs: int) -> tuple[str, str]:
    """The grid a user would write for `runs` jobs: lr log-spaced, eps_clip evenly, over the space."""
    import numpy as np

    n_lr, n_clip = GRID_SHAPES[runs]
    lrs = np.geomspace(*LR_RANGE, n_lr)
    clips = np.linspace(*CLIP_RANGE, n_clip)
    return ",".join(f"{v:.3g}" for v in lrs), ",".join(f"{v:.3g}" for v in clips)


def spec_of(args: list[str]) -> SweepSpec:
    return parse_sweep(args).spec


def schedule_of(params: dict[str, Any], start: int = 0) -> list[Segment]:
    return [(start, float(params[LR_KEY]), float(params[CLIP_KEY]))]


def finish(sim: Sim, schedules: list[list[Segment]], scores: list[float], confirm: bool) -> Outcome:
    """The search's selection: its best trial, or (confirm) the confirmation stage's winner."""
    means = {i: s for i, s in enumerate(scores)}
    if not confirm:
        best = top_points(means, 1)[0]
        return Outcome(schedules[best], scores[best], sim.spent, len(scores))
    top = top_points(means, CONFIRM_TOP)
    reps = sim.confirm({str(i): schedules[i] for i in top}, CONFIRM_SEEDS)
    winner = confirmed_best(reps)
    assert winner is not None
    return Outcome(schedules[int(winner)], sum(reps[winner]) / len(reps[winner]), sim.spent, len(scores))


def search_runs(sim: Sim, confirm: bool) -> int:
    """Full runs the search may spend: the budget less the confirmation's runs."""
    runs = sim.budget // sim.s.steps
    return runs - (CONFIRM_TOP * CONFIRM_SEEDS if confirm else 0)


def grid(sim: Sim, confirm: bool) -> Outcome:
    lrs, clips = grid_values(search_runs(sim, confirm))
    space = SearchSpace(spec_of([f"{LR_KEY}={lrs}", f"{CLIP_KEY}={clips}"]))
    schedules = [schedule_of(p.params) for p in space.grid()]
    scores = [sim.full_run(s, i) for i, s in enumerate(schedules)]
    return finish(sim, schedules, scores, confirm)


def random(sim: Sim, confirm: bool) -> Outcome:
    n = search_runs(sim, confirm)
    spec = spec_of([*SPACE_ARGS, "sweep.method=random", f"sweep.budget={n}", f"sweep.seed={sim.seed}"])
    schedules = [schedule_of(p.params) for p in SearchSpace(spec).sample(n).points]
    scores = [sim.full_run(s, i) for i, s in enumerate(schedules)]
    return finish(sim, schedules, scores, confirm)


def tpe_asha(sim: Sim, confirm: bool, options: list[str] | None = None) -> Outcome:
    """`method: optuna` with `pruner: asha`, trials one at a time until the step budget is spent."""
    import optuna

    from rllm_sweeps.sweep.optuna_settings import make_pruner, make_sampler

    args = [*SPACE_ARGS, "sweep.method=optuna", "sweep.budget=1000", "sweep.optuna.pruner=asha"]
    spec = spec_of([*args, *(options or []), f"sweep.seed={sim.seed}"])
    assert spec.optuna is not None
    space = SearchSpace(spec)
    distributions = space.distributions()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", pruner=make_pruner(spec.optuna))
    study.sampler = make_sampler(spec.optuna, spec.seed)  # a fresh study: seeded with sweep.seed
    budget = search_runs(sim, confirm) * sim.s.steps
    schedules: list[list[Segment]] = []
    scores: list[float] = []
    n = 0
    while sim.spent < budget:
        trial = study.ask(distributions)
        schedule = schedule_of(space.point_from_sample(n, trial.params).params)
        state, value = _trial(sim, schedule, n, trial, budget)
        n += 1
        if state == "complete":
            study.tell(trial, value)
            schedules.append(schedule)
            scores.append(value)
        else:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    out = finish(sim, schedules, scores, confirm)
    out.trials = n
    return out


def _trial(sim: Sim, schedule: list[Segment], n: int, trial: Any, budget: int) -> tuple[str, float]:
    """One trial stepped on the surrogate, reported as a job's TrialReporter reports."""
    s = sim.s
    rng = sim.rng(n)
    q = s.q0
    x = (schedule[0][1], schedule[0][2])
    value = float("nan")
    for t in range(1, s.steps + 1):
        if sim.spent >= budget:
            return "cut", value  # the budget ran out mid-trial
        q = s.step(q, x, rng)
        sim.spent += 1
        if t % s.val_every == 0:
            value = s.observe(q, rng)
            trial.report(value, t)
            if t < s.steps and trial.should_prune():
                return "pruned", value
    return "complete", value


def pbt(sim: Sim, confirm: bool, options: list[str] | None = None) -> Outcome:
    """`method: pbt`: the population runs side by side; at each interval every trial reports, then
    each decides (`decide()`) against the latest scores."""
    from rllm_sweeps.pbt.decision import Exploit, TrialState, decide
    from rllm_sweeps.sweep.pbt_settings import pbt_settings

    population = search_runs(sim, confirm)
    args = [*SPACE_ARGS, "sweep.method=pbt", f"sweep.pbt.population={population}", f"sweep.seed={sim.seed}"]
    spec = spec_of([*args, *(options or [])])
    assert spec.pbt is not None
    settings = pbt_settings(spec.pbt, spec.parameters, spec.seed)
    s = sim.s
    members = [dict(p.params) for p in SearchSpace(spec).sample(population).points]
    schedules = [schedule_of(m) for m in members]
    rngs = [sim.rng(i) for i in range(population)]
    q = [s.q0] * population
    score: list[float | None] = [None] * population
    copies = 0
    for t in range(1, s.steps + 1):
        for i in range(population):
            q[i] = s.step(q[i], (members[i][LR_KEY], members[i][CLIP_KEY]), rngs[i])
            if t % settings.interval == 0 or t == s.steps:  # a PBT trial validates at its interval
                score[i] = s.observe(q[i], rngs[i])
        sim.spent += population
        if t % settings.interval or t >= s.steps:
            continue
        states = [TrialState(i, t, score[i], dict(members[i])) for i in range(population)]
        snapshot = (list(q), [list(sc) for sc in schedules])
        for me in states:
            d = decide(me, states, settings, s.steps)
            if isinstance(d, Exploit):
                i, src = me.trial, d.source_trial
                members[i] = {k: d.settings[k] for k in (LR_KEY, CLIP_KEY)}
                q[i] = snapshot[0][src]
                kept = [seg for seg in snapshot[1][src] if seg[0] < t]
                schedules[i] = [*kept, (t, float(members[i][LR_KEY]), float(members[i][CLIP_KEY]))]
                copies += 1
    final = [float(sc) for sc in score if sc is not None]
    out = finish(sim, schedules, final, confirm)
    out.notes["copies"] = copies
    return out


def tpe_median(sim: Sim, confirm: bool) -> Outcome:
    """`method: optuna` as it comes (its default pruner: median)."""
    return tpe_asha(sim, confirm, ["sweep.optuna.pruner=median"])


METHODS = {
    "grid": grid,
    "random": random,
    "tpe+asha": tpe_asha,
    "tpe+median": tpe_median,
    "pbt": pbt,
}
