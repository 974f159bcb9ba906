"""`method: optuna` as a job source: a trial is asked the moment a slot frees, told when its jobs end.

    source = OptunaSource(spec, base_overrides, sweep_dir)     # creates the study, or resumes it
    SweepRunner(source, sweep_dir, launcher, parallel, metric=spec.metric[0]).run()

A trial is one point of the search space; its jobs are the point's seed replicates (one when
the sweep has no `seeds`), each launched with the trial's address in its environment
(rllm_sweeps.study.TrialAddress) so that it reports its validation metric and may be pruned
(rllm_sweeps.training.trial). When its last job ends the trial is told: COMPLETE with the mean
over the replicates of each metric's final value (the std and the per-seed values are user
attributes), PRUNED when the pruner stopped it, FAIL when a job failed.

The budget counts finished trials (complete or pruned): failed trials are replaced, so a
sweep ends with exactly `budget / seeds` finished trials. A point that breaks a constraint
never runs: its trial is told PRUNED at once with the user attribute `infeasible` and, for
the samplers that read constraints (TPE, GP, NSGA-II), its constraint values, so the
sampler learns to avoid the region; such trials do not count against the budget.

Resume: the study is created with `load_if_exists`, so rerunning the sweep continues it.
Trials a dead sweeper left RUNNING are told from their jobs' results when those had all ended,
else FAIL (user attribute `failed_because`): their jobs died with it (local launcher) or are
stopped when they next report (a finished trial refuses reports). A lock on
SWEEP_DIR/sweeper.lock keeps a second live sweeper off the study.
"""

from __future__ import annotations

import math
import statistics
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rllm_sweeps.problems import ConfigIssue
from rllm_sweeps.records.launch import OptunaTrial
from rllm_sweeps.records.layout import PLAN_FILE
from rllm_sweeps.records.manifest import StudyLocation
from rllm_sweeps.records.plan import PlannedJob, Totals, read_plan
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import JobStatus
from rllm_sweeps.study import STUDY_ATTR, SweepAttrs, TrialAddress, live_trial, open_storage, storage_url
from rllm_sweeps.sweep.optuna_settings import make_pruner, make_sampler, pruner_settings
from rllm_sweeps.sweep.plan import Plan
from rllm_sweeps.sweep.runner import JobSource, JobToRun, job_dir_for
from rllm_sweeps.sweep.space import SearchSpace
from rllm_sweeps.sweep.spec import SweepError, SweepSpec
from rllm_sweeps.sweep.trial_planner import TrialPlanner

INFEASIBLE = "infeasible"  # trial user attribute: the constraints its point breaks (it never ran)
FAILED_BECAUSE = "failed_because"  # trial user attribute: why the sweeper failed the trial
MAX_ASKS_PER_CALL = 100  # infeasible or invalid points skipped before next_jobs gives up for now


@dataclass
class _Trial:
    trial: Any  # optuna.Trial
    jobs: list[PlannedJob]
    results: dict[int, JobResult] = field(default_factory=dict)

    @property
    def number(self) -> int:
        return int(self.trial.number)


class OptunaSource(JobSource):
    """Asks Optuna for a trial when a slot frees; tells it when the trial's jobs end."""

    static = False

    def __init__(self, spec: SweepSpec, base_overrides: list[str], sweep_dir: Path) -> None:
        import optuna

        assert spec.optuna is not None and spec.budget is not None
        self.spec = spec
        self.settings = spec.optuna
        self.base_overrides = list(base_overrides)
        self.sweep_dir = Path(sweep_dir)
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        self.planner = TrialPlanner(spec, base_overrides)
        self.space = SearchSpace(spec)
        self.distributions = self.space.distributions()
        self.target = spec.budget // spec.n_seeds  # finished trials the sweep ends with
        self.storage_url = storage_url(self.settings.storage, self.sweep_dir)
        self.study_name = self.settings.study_name or self.sweep_dir.name
        self.metrics = [m.name for m in spec.metric]
        self.constraints_to_sampler = bool(spec.constraints) and self.settings.sampler_part.constraints

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.storage = storage = open_storage(self.storage_url)
        self.study = optuna.create_study(
            storage=storage,
            study_name=self.study_name,
            directions=[m.goal for m in spec.metric],
            pruner=make_pruner(self.settings),
            load_if_exists=True,
        )
        self._check_same_objectives()
        self.study.set_user_attr(
            STUDY_ATTR,
            SweepAttrs(
                self.metrics, self.settings.pruner, dict(self.settings.pruner_options), str(self.sweep_dir)
            ).attribute(),
        )
        self.trials: dict[int, _Trial] = {}  # asked, not told
        self.queue: list[JobToRun] = []
        self.finished = 0  # trials that count against the budget
        self.failed = 0  # trials failed in this run (a sweep that fails every trial stops)
        self.infeasible = 0
        self.stopped: str | None = None  # why no trial will be asked any more
        self.fatal: str | None = None  # an error every trial would hit (a metric never reported)
        self.plan_jobs = self._previous_jobs()
        self.adopted, self.stale = self._settle_stale_trials()
        trials = self.study.get_trials(deepcopy=False)
        self.finished = sum(1 for t in trials if _counts(t))
        # A resumed study must not replay the first run's draws; the grid's order must stay.
        seed = self.spec.seed if self.settings.sampler in ("grid", "qmc") else self.spec.seed + len(trials)
        grid = _grid_values(self.distributions) if self.settings.sampler == "grid" else None
        self.study.sampler = make_sampler(self.settings, seed, grid)
        self._write_plan()

    # -- what the runner asks ------------------------------------------------------------

    def done_before(self) -> dict[int, JobResult]:
        """The jobs of trials a previous run finished (by job index)."""
        finished = {t.number for t in self.study.get_trials(deepcopy=False) if _counts(t)}
        done = {}
        for job in self.plan_jobs:
            if job.point_index in finished:
                result = JobResult.read(job_dir_for(self.sweep_dir, job))
                if result is not None:
                    done[job.index] = result
        return done

    def next_jobs(self, free_slots: int) -> list[JobToRun]:
        out: list[JobToRun] = []
        while len(out) < free_slots and (self.queue or self._ask()):
            out.append(self.queue.pop(0))
        return out

    def exhausted(self) -> bool:
        return not self.queue and (self.stopped is not None or self.finished >= self.target)

    def pending(self) -> int:
        trials_to_ask = 0 if self.stopped else max(self.target - self.finished - len(self.trials), 0)
        return trials_to_ask * self.spec.n_seeds + len(self.queue)

    def on_result(self, run: JobToRun, result: JobResult) -> None:
        entry = self.trials.get(run.job.point_index)
        if entry is None:
            return
        entry.results[run.job.index] = result
        if len(entry.results) == len(entry.jobs):
            del self.trials[entry.number]
            self._tell(entry)

    def close(self) -> None:
        """The sweeper stops (interrupted): its trials in flight are failed now, not at the next run."""
        for entry in list(self.trials.values()):
            self._fail(entry.trial, "the sweeper was interrupted while the trial ran", count=False)
        self.trials.clear()

    # -- asking ----------------------------------------------------------------------------

    def _ask(self) -> bool:
        """Ask one trial and queue its jobs; False when no trial is wanted now."""
        import optuna

        for _ in range(MAX_ASKS_PER_CALL):
            if self.stopped is not None or self.finished + len(self.trials) >= self.target:
                return False
            sampler = self.study.sampler
            if isinstance(sampler, optuna.samplers.GridSampler) and sampler.is_exhausted(self.study):
                self.stopped = f"the grid sampler visited every point ({self.finished} trials finished)"
                return False
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                trial = self.study.ask(fixed_distributions=self.distributions)
            point = self.space.point_from_sample(trial.number, trial.params)
            trial.set_user_attr("overrides", point.overrides)
            try:
                broken = self.planner.violated(point)
                if broken:
                    self._infeasible(trial, broken)
                    continue
                if self.constraints_to_sampler:
                    for c in self.spec.constraints:
                        trial.set_constraint(c.text, 0.0)
                jobs = self.planner.jobs(point, trial.number * self.spec.n_seeds, trial.number)
            except SweepError as err:
                self._fail(trial, f"invalid configuration: {err}")
                print(f"[optuna] trial {trial.number}: {err}", file=sys.stderr, flush=True)
                continue
            self._start(trial, jobs)
            return True
        return False

    def _start(self, trial: Any, jobs: list[PlannedJob]) -> None:
        entry = _Trial(trial, jobs)
        self.trials[entry.number] = entry
        trial.set_user_attr("jobs", [job_dir_for(self.sweep_dir, j).name for j in jobs])
        n = len(jobs)
        for k, job in enumerate(jobs):
            address = TrialAddress(self.storage_url, self.study_name, entry.number, k, n)
            trial = OptunaTrial.at(address, pruner_settings(self.settings))
            self.queue.append(JobToRun(job, job_dir_for(self.sweep_dir, job), trial=trial))
        self.plan_jobs += jobs
        self._write_plan()

    def _infeasible(self, trial: Any, broken: list[Any]) -> None:
        import optuna

        self.infeasible += 1
        trial.set_user_attr(INFEASIBLE, [c.text for c in broken])
        if self.constraints_to_sampler:
            for c in self.spec.constraints:
                trial.set_constraint(c.text, 1.0 if c in broken else 0.0)
        self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        if self.infeasible >= 100 * max(self.target, 1):
            texts = "; ".join(c.text for c in self.spec.constraints)
            self.stopped = f"the constraints rejected {self.infeasible} sampled points ({texts})"

    # -- telling ---------------------------------------------------------------------------

    def _tell(self, entry: _Trial) -> None:
        import optuna

        results = [entry.results[j.index] for j in entry.jobs]
        statuses = [r.status for r in results]
        if JobStatus.PRUNED in statuses:
            step = min(r.steps for r in results if r.status is JobStatus.PRUNED)
            entry.trial.set_user_attr("pruned_at_step", step)
            self.study.tell(entry.trial, state=optuna.trial.TrialState.PRUNED)
            self.finished += 1
            return
        if any(s is not JobStatus.COMPLETED for s in statuses):
            bad = next(r for r in results if r.status is not JobStatus.COMPLETED)
            reason = _last_line(bad.error) or f"a job ended {bad.status}"
            self._fail(entry.trial, f"job {bad.status}: {reason}")
            if "MetricNotReported" in (bad.error or ""):
                # Every trial would fail the same way: stop asking.
                self.fatal = self.stopped = reason.split(": ", 1)[-1]
            return
        values = []
        for name in self.metrics:
            per_seed = [r.final.get(name) for r in results]
            if any(v is None or not math.isfinite(v) for v in per_seed):
                self._fail(entry.trial, f"{name} is missing or not finite in a job's result: {per_seed}")
                return
            values.append(statistics.fmean(per_seed))
            if len(per_seed) > 1:
                entry.trial.set_user_attr(f"{name}_std", statistics.stdev(per_seed))
                entry.trial.set_user_attr(f"{name}_per_seed", per_seed)
        self.study.tell(entry.trial, values)
        self.finished += 1

    def _fail(self, trial: Any, reason: str, count: bool = True) -> None:
        """Tell FAIL, saying why; `count`: against this run's limit of failed trials."""
        import optuna

        trial.set_user_attr(FAILED_BECAUSE, reason[-2000:])
        self.study.tell(trial, state=optuna.trial.TrialState.FAIL, skip_if_finished=True)
        self.failed += count
        if count and self.failed >= max(self.target, 5) and self.stopped is None:
            self.stopped = f"{self.failed} trials failed in this run (the last: {reason.splitlines()[0][:300]})"

    # -- resume ----------------------------------------------------------------------------

    def _check_same_objectives(self) -> None:
        wanted = [m.goal for m in self.spec.metric]
        have = [d.name.lower() for d in self.study.directions]
        attrs = SweepAttrs.of_study(self.study.user_attrs, self.study_name)
        metrics = attrs.metrics if attrs is not None else self.metrics
        if have != wanted or metrics != self.metrics:
            message = (
                f"study {self.study_name!r} in {self.storage_url} optimizes {metrics} ({have}), this sweep "
                f"{self.metrics} ({wanted}): give another sweep.optuna.study_name or storage"
            )
            raise SweepError([ConfigIssue("optuna.study_name", message)])

    def _settle_stale_trials(self) -> tuple[list[int], list[int]]:
        """Trials a dead sweeper left RUNNING: told from their jobs' results when every job had
        ended (the sweeper died before it could tell), else FAIL (their jobs died with it).
        Returns (adopted, failed) trial numbers."""
        import optuna

        adopted, failed = [], []
        study_id = self.storage.get_study_id_from_name(self.study_name)
        for t in self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            trial_id = self.storage.get_trial_id_from_study_id_trial_number(study_id, t.number)
            trial = live_trial(self.study, trial_id)
            jobs = [j for j in self.plan_jobs if j.point_index == t.number]
            results = {j.index: JobResult.read(job_dir_for(self.sweep_dir, j)) for j in jobs}
            if jobs and all(r is not None and r.status.is_final for r in results.values()):
                self._tell(_Trial(trial, jobs, {i: r for i, r in results.items() if r is not None}))
                adopted.append(t.number)
            else:
                self._fail(trial, "the sweeper died while the trial ran; a rerun asks new trials", count=False)
                failed.append(t.number)
        return adopted, failed

    def _previous_jobs(self) -> list[PlannedJob]:
        """The jobs of earlier runs of this sweep, from its plan.json (the report lists them all)."""
        try:
            jobs = read_plan(self.sweep_dir / PLAN_FILE).jobs
        except FileNotFoundError:
            return []
        # A job belongs to a trial when the trial says so (a dry run's plan.json holds examples).
        names = {t.number: set(t.user_attrs.get("jobs") or ()) for t in self.study.get_trials(deepcopy=False)}
        return [j for j in jobs if job_dir_for(self.sweep_dir, j).name in names.get(j.point_index, ())]

    def _write_plan(self) -> None:
        jobs = self.plan_jobs
        points = len({j.point_index for j in jobs})
        totals = Totals(
            points=points,
            jobs=len(jobs),
            seeds=self.spec.n_seeds,
            candidates=points,
            dropped=0,
            validated=len(jobs),
            node_hours=0.0,
            gpu_hours=0.0,
        )
        notes = [*self.spec.notes]  # the spec's own (how the search was read), then the study's
        notes.append(f"Optuna study {self.study_name!r} in {self.storage_url}: the jobs of the trials asked so far")
        Plan(self.spec, self.base_overrides, list(jobs), totals, True, notes).write(self.sweep_dir)

    def study_info(self) -> StudyLocation:
        """Where the study is, for manifest.json (the report opens it from there)."""
        return StudyLocation(self.storage_url, self.study_name)


def _counts(trial: Any) -> bool:
    """Whether a trial counts against the budget: it ran and finished (complete or pruned)."""
    import optuna

    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    return trial.state in states and INFEASIBLE not in trial.user_attrs


def _grid_values(distributions: dict[str, Any]) -> dict[str, list[Any]]:
    """The grid sampler's search space: every value of each (discrete) dimension."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    out: dict[str, list[Any]] = {}
    for name, dist in distributions.items():
        if isinstance(dist, CategoricalDistribution):
            out[name] = list(dist.choices)
        elif isinstance(dist, IntDistribution):
            out[name] = list(range(dist.low, dist.high + 1, dist.step))
        else:  # the spec refuses distributions with the grid sampler
            raise SweepError([ConfigIssue(name, f"the grid sampler needs discrete values; {name} is {dist}")])
    return out


def _last_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


__all__ = ["FAILED_BECAUSE", "INFEASIBLE", "OptunaSource"]
