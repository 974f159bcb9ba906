"""The sweeps DSL and the plan: what to run, checked before anything runs.

    from rllm_sweeps.sweep import parse_sweep, make_plan

    request = parse_sweep(["+sweep=lr_grid", "trainer.total_batches=5"])
    plan = make_plan(request.spec, request.base_overrides)   # every job composed + validated
    print(plan.render())                                      # the dry-run table
    plan.write(sweep_dir)                                     # plan.json

Modules, one concept each: spec (the DSL -> SweepSpec), space (points: lazy grid,
Optuna-sampled), constraints (safe expressions), values (Hydra override texts),
plan (jobs, totals, cost, dry-run table; each job's config from config/job_composer.py),
runner (the launch loop over a job source), optuna_settings (the `optuna:`
block: samplers, pruners), optuna_search (the Optuna job source: ask, tell, resume).
docs/SWEEPS.md describes the DSL, docs/OPTUNA.md the Optuna search.
"""

from rllm_sweeps.sweep.constraints import Constraint
from rllm_sweeps.sweep.plan import PLAN_FILE, Plan, PlannedJob, Totals, make_plan, plan_request, plan_sweep, render_plan
from rllm_sweeps.sweep.space import Point, SearchSpace
from rllm_sweeps.sweep.spec import (
    Choice,
    Metric,
    Param,
    SweepError,
    SweepRequest,
    SweepSpec,
    load_sweep_file,
    parse_sweep,
    sweep_file_path,
)

__all__ = [
    "PLAN_FILE",
    "Choice",
    "Constraint",
    "Metric",
    "Param",
    "Plan",
    "PlannedJob",
    "Point",
    "SearchSpace",
    "SweepError",
    "SweepRequest",
    "SweepSpec",
    "Totals",
    "load_sweep_file",
    "make_plan",
    "parse_sweep",
    "plan_request",
    "plan_sweep",
    "render_plan",
    "sweep_file_path",
]
