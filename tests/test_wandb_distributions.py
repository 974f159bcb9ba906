"""Every W&B distribution name means what W&B's documentation says (issue 52): the values a sweep
plans lie in W&B's documented range and spread as W&B's definition says. Plan only: no training.

W&B's definitions (docs.wandb.ai, "Sweep configuration options", `distribution`), written out here
independently of rllm_sweeps/sweep/distributions.py: each case's `low`/`high` is the range W&B's
text gives for its fields.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import optuna
import pytest
from scipy import stats

from rllm_sweeps.cli import main as cli
from rllm_sweeps.records.plan import read_plan
from rllm_sweeps.sweep.ownership import sweep_id
from rllm_sweeps.sweep.planner import plan_sweep
from rllm_sweeps.sweep.run import write_plan
from rllm_sweeps.sweep.space import SearchSpace
from rllm_sweeps.sweep.spec import SweepError, SweepSpec

N = 120  # draws per distribution: enough for a range and a KS test, milliseconds each


def draws(definition: dict, n: int = N) -> list:
    spec = SweepSpec.from_dict({"method": "random", "budget": n, "parameters": {"x": definition}})
    return [p.value("x") for p in SearchSpace(spec).sample(n).points]


def reaches(values: list, low: float, high: float, log: bool = False) -> bool:
    """The draws cover the range: some in its lowest and some in its highest tenth."""
    f = math.log if log else float
    span = f(high) - f(low)
    return (f(min(values)) - f(low)) < 0.1 * span and (f(high) - f(max(values))) < 0.1 * span


def multiples(values: list, q: float) -> bool:
    return all(math.isclose(v / q, round(v / q), abs_tol=1e-9) for v in values)


# ---- continuous ranges: W&B's range, and the CDF W&B's definition gives ------------------------

RANGES = {
    # name: (definition, W&B's low, W&B's high, log-uniform?)
    "uniform": ({"min": 0.1, "max": 0.3}, 0.1, 0.3, False),
    # "X between exp(min) and exp(max), the natural logarithm uniform between min and max" (W&B's fastai example)
    "log_uniform": ({"min": -9.21, "max": -4.6}, math.exp(-9.21), math.exp(-4.6), True),
    "log_uniform_values": ({"min": 1e-4, "max": 1e-2}, 1e-4, 1e-2, True),
    # "X where log(1/X) is uniform between min and max": log X uniform in [-max, -min]
    "inv_log_uniform": ({"min": 2.0, "max": 7.0}, math.exp(-7.0), math.exp(-2.0), True),
    # "log(1/X) uniform between log(1/max) and log(1/min)": X in [min, max]
    "inv_log_uniform_values": ({"min": 1e-3, "max": 1e-1}, 1e-3, 1e-1, True),
}


@pytest.mark.parametrize("name", RANGES)
def test_a_continuous_wandb_distribution_plans_values_over_wandbs_range_and_spread(name):
    definition, low, high, log = RANGES[name]
    values = draws({"distribution": name, **definition})
    assert all(low * (1 - 1e-12) <= v <= high * (1 + 1e-12) for v in values), (min(values), max(values))
    assert reaches(values, low, high, log)
    f = math.log if log else float
    assert stats.kstest([f(v) for v in values], stats.uniform(f(low), f(high) - f(low)).cdf).pvalue > 0.01


# W&B's fastai example (wandb/examples, fastai sweep): the learning rate in exponents.
FASTAI = """\
program: train.py
method: random
metric: {name: val_reward_mean, goal: maximize}
run_cap: 6
parameters:
  trainer.lr:
    distribution: log_uniform
    min: -9.21
    max: -4.6
"""


def test_the_wandb_fastai_examples_log_uniform_plans_learning_rates_within_1e_4_and_1e_2(tmp_path):
    path = tmp_path / "fastai.yaml"
    path.write_text(FASTAI)
    plan = plan_sweep([f"+sweep={path}", "trainer.total_batches=2"])
    lrs = [job.params["trainer.lr"] for job in plan.jobs]
    assert len(lrs) == 6
    assert all(1e-4 <= lr <= 1.006e-2 for lr in lrs), lrs  # exp(-9.21) = 1.0003e-4, exp(-4.6) = 1.0052e-2
    assert "trainer.lr: log-uniform over [1.0e-4, 1.0e-2] (log_uniform)" in plan.render()


# ---- quantized and integer ranges: multiples of q in [round(min/q) q, round(max/q) q] ----------

QUANTIZED = {
    # name: (definition, q, W&B's low, W&B's high, log?, integers?)
    "q_uniform": ({"min": 0.1, "max": 0.33, "q": 0.05}, 0.05, 0.1, 0.35, False, False),
    # W&B's docs' batch size: q_log_uniform, q 1, min log(32), max log(256)
    "q_log_uniform": ({"min": math.log(32), "max": math.log(256), "q": 1}, 1, 32, 256, True, True),
    "q_log_uniform_values": ({"min": 32, "max": 256, "q": 8}, 8, 32, 256, True, True),
    "int_uniform": ({"min": 4, "max": 32}, 1, 4, 32, False, True),
}


@pytest.mark.parametrize("name", QUANTIZED)
def test_a_quantized_or_integer_wandb_distribution_plans_multiples_of_q_over_wandbs_range(name):
    definition, q, low, high, log, integers = QUANTIZED[name]
    values = draws({"distribution": name, **definition})
    assert all(low - 1e-9 <= v <= high + 1e-9 for v in values), (min(values), max(values))
    assert multiples(values, q) and reaches(values, low, high, log)
    if integers:  # W&B's sampler returns integers when q is one
        assert all(isinstance(v, int) for v in values)


# ---- the normal family: unbounded; W&B's mu and sigma (defaults 0 and 1) ------------------------

NORMALS = {
    # name: (definition, mean and sd of X (log X for the log ones), q, log?)
    "normal": ({"mu": 1.0, "sigma": 2.0}, (1.0, 2.0), None, False),
    "q_normal": ({"mu": 0.0, "sigma": 3.0, "q": 1}, (0.0, 3.0), 1, False),
    "log_normal": ({"mu": -7.0, "sigma": 1.0}, (-7.0, 1.0), None, True),
    "q_log_normal": ({"mu": 4.0, "sigma": 0.5, "q": 2}, (4.0, 0.5), 2, True),
}


@pytest.mark.parametrize("name", NORMALS)
def test_a_normal_wandb_distribution_plans_values_distributed_as_wandb_defines(name):
    definition, (mu, sigma), q, log = NORMALS[name]
    values = draws({"distribution": name, **definition})
    if q is not None:
        assert multiples(values, q) and all(isinstance(v, int) for v in values)
        spread = [(v - mu) / sigma if not log else (math.log(max(v, q / 2)) - mu) / sigma for v in values]
        assert abs(sum(spread) / len(spread)) < 0.5  # rounding moves each by at most q / 2
        return
    if log:
        assert all(v > 0 for v in values)
    xs = [math.log(v) if log else v for v in values]
    assert stats.kstest(xs, stats.norm(mu, sigma).cdf).pvalue > 0.01


def test_the_normal_familys_defaults_are_wandbs_mean_0_and_sd_1():
    assert stats.kstest(draws({"distribution": "normal"}), stats.norm(0, 1).cdf).pvalue > 0.01


# ---- categorical and constant ----------------------------------------------------------------


def test_categorical_plans_only_its_values_and_constant_its_one_value():
    assert set(draws({"distribution": "categorical", "values": ["a", "b", "c"]})) == {"a", "b", "c"}
    spec = SweepSpec.from_dict(
        {"method": "random", "budget": 2, "parameters": {"x": {"distribution": "constant", "value": 7}}}
    )
    assert spec.parameters[0].kind == "value" and spec.parameters[0].choices[0].value == 7


# ---- the old meaning: refused where it would change a range, resumed where it was recorded ----------


def test_a_positive_bounded_log_uniform_is_refused_rc_2_in_one_line_naming_log_uniform_values(tmp_path, capsys):
    # W&B reads min: 0.001, max: 0.04 as exponents (values 1.001 .. 1.041); this project once read the values.
    path = tmp_path / "mine.yaml"
    path.write_text(
        "method: random\nrun_cap: 2\nparameters:\n  trainer.lr: {distribution: log_uniform, min: 0.001, max: 0.04}\n"
    )
    assert cli(["plan", f"+sweep={path}"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "mine.yaml: parameters.trainer.lr: log_uniform's min and max are natural-log exponents" in err
    assert "[1.001, 1.041]" in err and "write distribution: log_uniform_values" in err


def test_a_sweep_planned_under_the_old_log_uniform_keeps_its_id_its_points_and_its_plan_file(tmp_path):
    request = ["+sweep=lr_random", "sweep.budget=4", "trainer.total_batches=2"]
    plan = plan_sweep(request)
    # The draws are those the old `log_uniform` (values) made: Optuna's RandomSampler over the values.
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    dists = {
        "trainer.lr": optuna.distributions.FloatDistribution(1e-4, 1e-2, log=True),
        "rollout.n": optuna.distributions.CategoricalDistribution((4, 8)),
    }
    old_lrs = [study.ask(fixed_distributions=dists).params["trainer.lr"] for _ in range(4)]
    assert [job.params["trainer.lr"] for job in plan.jobs] == old_lrs
    # plan.json as the old version wrote it: schema 2, `log_uniform` meaning the values.
    plan.write(tmp_path)
    data = json.loads((tmp_path / "plan.json").read_text())
    data["schema_version"] = 2
    data["spec"]["parameters"]["trainer.lr"]["distribution"] = "log_uniform"
    (tmp_path / "plan.json").write_text(json.dumps(data))
    before = (tmp_path / "plan.json").read_bytes()
    assert sweep_id(data["spec"], data["base_overrides"]) == sweep_id(plan.spec.to_dict(), plan.base_overrides)
    write_plan(plan, tmp_path)  # what a resume does: the same plan is not written again
    assert (tmp_path / "plan.json").read_bytes() == before
    record = read_plan(tmp_path / "plan.json")  # read back in today's names, and parsed as the sweep it was
    assert record.spec["parameters"]["trainer.lr"]["distribution"] == "log_uniform_values"
    assert (
        SweepSpec.from_dict(record.spec).param("trainer.lr").describe().startswith("log-uniform over [1.0e-4, 1.0e-2]")
    )


# ---- grid + hyperband; the plan's sweeper settings ---------------------------------------------------

# W&B's examples' sweep-grid-hyperband.yaml shape: a grid, hyperband by max_iter and s.
GRID_HYPERBAND = """\
program: train.py
method: grid
metric: {name: val_reward_mean, goal: maximize}
parameters:
  trainer.lr: {values: [1.0e-3, 3.0e-3, 1.0e-2]}
  rollout.n: {values: [4, 8]}
early_terminate: {type: hyperband, max_iter: 27, s: 2, eta: 3}
"""


def test_a_grid_with_hyperband_runs_every_point_with_wandbs_brackets_on_successive_halving():
    import yaml

    spec = SweepSpec.from_dict(yaml.safe_load(GRID_HYPERBAND), source="grid-hyperband.yaml")
    assert spec.method == "optuna" and spec.optuna.sampler == "grid" and spec.budget == 6  # every point, no run_cap
    # W&B's brackets 27/3/3 = 3, 9: the first rung at 3, the top 1/eta go on
    assert spec.optuna.pruner == "asha"
    assert spec.optuna.pruner_options == {"min_resource": 3, "reduction_factor": 3, "min_early_stopping_rate": 0}


def test_hyperband_fields_out_of_range_are_refused_naming_them():
    bad = {
        "method": "grid",
        "parameters": {"trainer.lr": [1e-3, 2e-3]},
        "early_terminate": {"type": "hyperband", "max_iter": 27, "eta": 1},
    }
    with pytest.raises(SweepError, match=r"eta=1: hyperband's min_iter, max_iter and s are integers >= 1, eta >= 2"):
        SweepSpec.from_dict(bad)
    with pytest.raises(SweepError, match="max_iter needs s"):
        SweepSpec.from_dict({**bad, "early_terminate": {"type": "hyperband", "max_iter": 27}})


def test_plan_shows_the_sweepers_parallel_and_directory_as_settings_not_job_overrides(capsys, tmp_path):
    assert (
        cli(["plan", "trainer.lr=1e-3,3e-3", "hydra.sweeper.parallel=2", f"hydra.sweep.dir={tmp_path}", "--rows", "2"])
        == 0
    )
    out = capsys.readouterr().out
    assert "2 points = 2 jobs, parallel 2" in out
    assert f"Sweeper settings: hydra.sweeper.parallel=2 hydra.sweep.dir={tmp_path}" in out
    assert "Every job" not in out and "hydra." not in out.split("Sweeper settings")[1].split("\n", 1)[1]
    assert "  trainer.lr: 2 values [" in out  # each swept parameter's values
    assert cli(["plan", "trainer.lr=1e-3,3e-3", "hydra.sweeper.paralel=2"]) == 2
    assert "hydra.sweeper.paralel: not a sweeper setting; did you mean 'parallel'" in capsys.readouterr().err


def test_sweeps_md_holds_the_generated_wandb_table():
    from rllm_sweeps.sweep.wandb_fields import DOC, docs_table, with_table

    text = (Path(__file__).resolve().parents[1] / DOC).read_text()
    assert with_table(text, docs_table()) == text, "run: python -m rllm_sweeps.sweep.wandb_fields --write"
    for name in ("log_uniform", "log_uniform_values", "q_log_normal", "inv_log_uniform_values", "early_terminate"):
        assert f"`{name}" in text or f"distribution: {name}`" in text
