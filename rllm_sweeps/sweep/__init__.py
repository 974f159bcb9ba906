"""The sweeps DSL and the plan: what to run, checked before anything runs.

    from rllm_sweeps.sweep import parse_sweep, make_plan

    request = parse_sweep(["+sweep=lr_grid", "trainer.total_batches=5"])
    plan = make_plan(request.spec, request.base_overrides)   # every job composed + validated
    print(plan.render())                                      # the dry-run table
    plan.write(sweep_dir)                                     # plan.json

Modules, one concept each: spec (SweepSpec, the spec's types), param (a parameter and its
choices), parse_param / parse_file / parse_cli (a parameter's syntaxes, the sweep node, the
command line), space (points: lazy grid, Optuna-sampled), constraints (safe expressions),
point_scan (points counted, filtered and costed before composing), planner (jobs composed and
validated; each job's config from config/job_composer.py; a value's override text from
config/override_values.py), plan (jobs, totals, cost, plan.json, the dry-run table), runner (the
launch loop over a job source), optuna_settings (the `optuna:` block: samplers, pruners),
optuna_search (the Optuna job source: ask, tell, resume), pbt_settings / pbt_source
(population-based training: the `pbt:` block and its decisions' settings, the trials; the
decisions, the board and a trial's side inside its job are rllm_sweeps/pbt/'s), confirm (the
top points again with fresh seeds), run (a sweep from its command line). The sweeper's own
settings (hydra.sweeper.*) are rllm_sweeps/sweeper_settings.py's. docs/SWEEPS.md describes the
DSL, docs/OPTUNA.md the Optuna search.
"""

from rllm_sweeps.records.plan import Metric
from rllm_sweeps.sweep.constraints import Constraint
from rllm_sweeps.sweep.param import Choice, Param
from rllm_sweeps.sweep.parse_cli import load_sweep_file, parse_sweep, sweep_file_path
from rllm_sweeps.sweep.plan import PLAN_FILE, Plan, render_plan
from rllm_sweeps.sweep.planner import make_plan, plan_request, plan_sweep
from rllm_sweeps.sweep.space import Point, SearchSpace
from rllm_sweeps.sweep.spec import SweepError, SweepRequest, SweepSpec

__all__ = [
    "PLAN_FILE",
    "Choice",
    "Constraint",
    "Metric",
    "Param",
    "Plan",
    "Point",
    "SearchSpace",
    "SweepError",
    "SweepRequest",
    "SweepSpec",
    "load_sweep_file",
    "make_plan",
    "parse_sweep",
    "plan_request",
    "plan_sweep",
    "render_plan",
    "sweep_file_path",
]
