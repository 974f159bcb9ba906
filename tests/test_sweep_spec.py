"""The sweeps DSL: parsing, Hydra's sweep syntax, zip, seeds, sampling, constraints, errors.

Pure logic: nothing here composes a config or trains (test_sweep_plan.py does the former).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser

from rllm_sweeps.config.override_values import format_value, parse_value, same
from rllm_sweeps.problems import Problems
from rllm_sweeps.sweep.constraints import Constraint, ConstraintEvalError, ConstraintSyntaxError
from rllm_sweeps.sweep.parse_cli import SWEEP_DIR, parse_sweep, sweep_file_path
from rllm_sweeps.sweep.parse_file import SpecParser
from rllm_sweeps.sweep.space import SearchSpace
from rllm_sweeps.sweep.spec import SweepError, SweepSpec


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def jobs_of(overrides: list[str]) -> list[list[str]]:
    """Our grid's jobs (without seeds) for a command line: base overrides + the point's."""
    request = parse_sweep(overrides)
    return [list(request.base_overrides) + p.overrides for p in SearchSpace(request.spec).grid()]


def hydra_jobs(overrides: list[str]) -> list[list[str]]:
    """What Hydra's BasicSweeper expands the same command line to."""
    from rllm_sweeps.sweep.parse_param import default_config_loader

    parser = OverridesParser.create(config_loader=default_config_loader())
    (batch,) = BasicSweeper.split_arguments(parser.parse_overrides(overrides), max_batch_size=None)
    return [list(job) for job in batch]


# ---- Hydra's sweep syntax keeps its meaning ------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        ["a=1,2", "b=x,y"],
        ["trainer.lr=1e-4,3e-4", "rollout.n=range(2,8,2)", "trainer.total_batches=5"],
        ["rollout.n=choice(4,8)", "trainer.lr=sort(3e-4,1e-4,2e-4)", "x=range(0,1,0.25)"],
        ["trainer.total_batches=5", "model.path=a,'b c',\"d,e\"", "+extra.key=1,2"],
        ["task=glob(*)", "rollout.n=1,2"],
        ["rollout.n=range(5,1,-2)", "trainer.lr=0.1", "rollout.n=3,4"],  # the last one of a key wins
    ],
)
def test_hydra_sweep_syntax_expands_as_basic_sweeper(overrides):
    ours, hydra = jobs_of(overrides), hydra_jobs(overrides)
    assert len(ours) == len(hydra)
    assert [sorted(job) for job in ours] == [sorted(job) for job in hydra]  # same jobs, same order


def test_range_stop_is_exclusive_and_an_int_range_samples_its_own_values_only():
    spec = parse_sweep(["rollout.n=range(1,4)", "+sweep.method=random", "+sweep.budget=200"]).spec
    param = spec.param("rollout.n")
    assert [c.value for c in param.choices] == [1, 2, 3]
    dist = param.optuna_distribution()
    assert (dist.low, dist.high, dist.step) == (1, 3, 1)  # hydra-optuna-sweeper's range(1,4) reaches 4
    values = {p.value("rollout.n") for p in SearchSpace(spec).sample(200).points}
    assert values == {1, 2, 3}


def test_interval_and_tags_are_distributions():
    spec = parse_sweep(
        [
            "trainer.lr=tag(log,interval(1e-5,1e-3))",
            "algorithm.eps_clip=interval(0.1,0.3)",
            "model.lora.rank=tag(int,interval(4,32))",
            "+sweep.method=random",
            "+sweep.budget=10",
        ]
    ).spec
    lr, clip, rank = spec.param("trainer.lr"), spec.param("algorithm.eps_clip"), spec.param("model.lora.rank")
    assert (lr.distribution, lr.low, lr.high, lr.log) == ("log_uniform_values", 1e-5, 1e-3, True)
    assert (clip.distribution, clip.log) == ("uniform", False)
    assert (rank.distribution, rank.low, rank.high) == ("int_uniform", 4, 32)
    for p in SearchSpace(spec).sample(10).points:
        assert 1e-5 <= p.value("trainer.lr") <= 1e-3
        assert isinstance(p.value("model.lora.rank"), int) and 4 <= p.value("model.lora.rank") <= 32


# ---- zip and seeds -------------------------------------------------------------------------


def test_zip_pairs_keys_instead_of_crossing_them():
    spec = SweepSpec.from_dict(
        {
            "parameters": {"model.path": {"values": ["a", "b"]}, "data.train_batch_size": {"values": [64, 32]}},
            "zip": [["model.path", "data.train_batch_size"]],
            "seeds": 2,
        }
    )
    points = list(SearchSpace(spec).grid())
    assert [p.params for p in points] == [
        {"model.path": "a", "data.train_batch_size": 64},
        {"model.path": "b", "data.train_batch_size": 32},
    ]
    assert spec.seeds == (0, 1) and len(points) * spec.n_seeds == 4  # not 8


def test_zip_is_crossed_with_the_other_dimensions():
    spec = SweepSpec.from_dict(
        {
            "parameters": {"a": [1, 2, 3], "b": ["x", "y", "z"], "c": [True, False]},
            "zip": [["a", "b"]],
        }
    )
    got = [(p.value("a"), p.value("b"), p.value("c")) for p in SearchSpace(spec).grid()]
    assert got == [(1, "x", True), (1, "x", False), (2, "y", True), (2, "y", False), (3, "z", True), (3, "z", False)]


def test_seed_sweep_on_the_command_line_means_replicates():
    request = parse_sweep(["trainer.lr=1e-4,3e-4", "trainer.seed=1,2,3"])
    assert request.spec.seeds == (1, 2, 3)
    assert request.spec.keys == ("trainer.lr",)  # the seed is no dimension
    assert any("replicates" in n for n in request.spec.notes)


# ---- sweep files and the command line --------------------------------------------------------


def test_a_setting_left_unset_or_invalid_takes_the_spec_types_default():
    unset = SweepSpec.from_dict({"parameters": {"trainer.lr": {"values": [1e-4]}}})
    defaults = SweepSpec()
    assert (unset.method, unset.metric, unset.seed_key, unset.parallel, unset.seed) == (
        defaults.method,
        defaults.metric,
        defaults.seed_key,
        defaults.parallel,
        defaults.seed,
    )
    assert parse_sweep(["trainer.lr=1e-4,2e-4"]).spec.source == defaults.source  # no sweep file
    parser = SpecParser(Problems())
    bad = parser.build({"method": "nope", "parallel": 0, "seed": "x", "seed_key": ""}, "f", {}, [], make=SweepSpec)
    assert (bad.method, bad.parallel, bad.seed, bad.seed_key) == (
        defaults.method,
        defaults.parallel,
        defaults.seed,
        defaults.seed_key,
    )
    assert len(parser.problem.issues) == 4


def test_command_line_wins_over_the_file_key_by_key(tmp_path):
    path = write(
        tmp_path,
        "method: grid\nparameters:\n  trainer.lr: {values: [1.0e-4, 3.0e-4]}\n"
        "  rollout.n: {values: [4, 8]}\nseeds: 3\n",
    )
    request = parse_sweep(
        [f"+sweep={path}", "rollout.n=2,16,32", "trainer.lr=1e-3", "trainer.total_batches=5", "sweep.seeds=2"]
    )
    spec = request.spec
    assert [c.value for c in spec.param("rollout.n").choices] == [2, 16, 32]
    assert spec.param("trainer.lr").kind == "value" and spec.param("trainer.lr").choices[0].value == 1e-3
    assert spec.seeds == (0, 1)
    assert request.base_overrides == ("trainer.total_batches=5",)  # not swept by the file: every job gets it
    assert spec.source.endswith("s.yaml")


def test_hydra_sweeper_params_are_weaker_than_the_command_line():
    request = parse_sweep(
        ["rollout.n=8", "trainer.total_batches=5"], params={"rollout.n": "2,4", "trainer.lr": "1e-4,2e-4"}
    )
    assert request.spec.param("rollout.n").kind == "value"  # fixed by the command line
    assert [c.value for c in request.spec.param("trainer.lr").choices] == [1e-4, 2e-4]
    assert request.base_overrides == ("trainer.total_batches=5",)
    assert request.spec.param("trainer.lr").source == "hydra.sweeper.params.trainer.lr"


def test_global_package_sweep_files_and_group_parameters(tmp_path):
    path = write(
        tmp_path, "# @package _global_\nsweep:\n  parameters:\n    task: [toy_letters]\n    rollout.n: [2, 4]\n"
    )
    spec = parse_sweep([f"+sweep={path}"]).spec
    assert spec.param("task").is_group and not spec.param("rollout.n").is_group
    assert [p.overrides for p in SearchSpace(spec).grid()] == [
        ["task=toy_letters", "rollout.n=2"],
        ["task=toy_letters", "rollout.n=4"],
    ]


def test_file_accepts_wandb_shapes_and_hydra_expressions(tmp_path):
    path = write(
        tmp_path,
        """
method: random
metric: {name: val_reward_std, goal: maximize}
run_cap: 12
parameters:
  trainer.lr: {distribution: log_uniform_values, min: 1.0e-5, max: 1.0e-3}
  algorithm.eps_clip: {distribution: q_uniform, min: 0.1, max: 0.3, q: 0.05}
  model:
    parameters:
      lora.rank: {distribution: int_uniform, min: 4, max: 16}
  rollout.n: "choice(2,4,8)"
  trainer.total_batches: {value: 10}
  algorithm.adv_estimator: [grpo, rloo]
""",
    )
    spec = parse_sweep([f"+sweep={path}"]).spec
    assert spec.budget == 12 and spec.metric[0].name == "val_reward_std"
    assert set(spec.keys) == {
        "trainer.lr",
        "algorithm.eps_clip",
        "model.lora.rank",
        "rollout.n",
        "trainer.total_batches",
        "algorithm.adv_estimator",
    }
    points = SearchSpace(spec).sample(12).points
    for p in points:
        assert any(math.isclose(p.value("algorithm.eps_clip"), v) for v in (0.1, 0.15, 0.2, 0.25, 0.3))
        assert p.value("rollout.n") in (2, 4, 8) and p.value("algorithm.adv_estimator") in ("grpo", "rloo")
        assert p.value("trainer.total_batches") == 10
    assert SweepSpec.from_dict(spec.to_dict()).to_dict() == spec.to_dict()


def test_every_shipped_sweep_file_parses():
    files = sorted(SWEEP_DIR.glob("*.yaml"))
    assert {f.stem for f in files} >= {"lr_grid", "example", "lr_random"}
    for f in files:
        spec = parse_sweep([f"+sweep={f.stem}"]).spec
        assert spec.source.endswith(f"{f.stem}.yaml") and spec.parameters
    assert sweep_file_path("lr_grid") == SWEEP_DIR / "lr_grid.yaml"


# ---- random sampling ---------------------------------------------------------------------


def test_random_log_uniform_is_in_bounds_log_spread_and_reproducible():
    from scipy import stats

    data = {
        "method": "random",
        "parameters": {"trainer.lr": {"distribution": "log_uniform_values", "min": 1e-6, "max": 1e-2}},
        "budget": 20,
        "seed": 7,
    }
    spec = SweepSpec.from_dict(data)
    lrs = [p.value("trainer.lr") for p in SearchSpace(spec).sample(20).points]
    assert len(lrs) == 20 and all(1e-6 <= lr <= 1e-2 for lr in lrs)
    # log-uniform: log10(lr) is uniform on [-6, -2]; uniform in lr would put ~all of them in the top decade.
    exponents = [math.log10(lr) for lr in lrs]
    assert stats.kstest(exponents, stats.uniform(loc=-6, scale=4).cdf).pvalue > 0.05
    per_decade = [sum(d <= e < d + 1 for e in exponents) for d in (-6, -5, -4, -3)]
    assert all(n >= 1 for n in per_decade), per_decade
    assert stats.kstest(lrs, stats.uniform(loc=1e-6, scale=1e-2).cdf).pvalue < 1e-6  # not linear-uniform
    again = [p.value("trainer.lr") for p in SearchSpace(SweepSpec.from_dict(data)).sample(20).points]
    assert again == lrs
    other = [p.value("trainer.lr") for p in SearchSpace(SweepSpec.from_dict({**data, "seed": 8})).sample(20).points]
    assert other != lrs


def test_sampled_values_survive_the_command_line():
    spec = SweepSpec.from_dict(
        {
            "method": "random",
            "budget": 30,
            "parameters": {
                "trainer.lr": {"distribution": "log_uniform_values", "min": 1e-6, "max": 1e-2},
                "model.lora.rank": {"distribution": "int_log_uniform", "min": 1, "max": 64},
            },
        }
    )
    for p in SearchSpace(spec).sample(30).points:
        for (_, choice), line in zip(p.choices, p.overrides, strict=True):
            assert same(parse_value(line.split("=", 1)[1]), choice.value), line


# ---- constraints ---------------------------------------------------------------------------


def test_constraint_reads_config_keys_and_evaluates_safely():
    c = Constraint.parse("rollout.n * data.train_batch_size <= 512 and algorithm.adv_estimator != 'rloo'")
    assert c.keys == ("rollout.n", "data.train_batch_size", "algorithm.adv_estimator")
    values = {"rollout.n": 8, "data.train_batch_size": 64, "algorithm.adv_estimator": "grpo"}
    assert c.holds(values.__getitem__)
    assert not c.holds({**values, "data.train_batch_size": 128}.__getitem__)
    assert Constraint.parse("trainer.adam_betas == [0.9, 0.999]").holds({"trainer.adam_betas": [0.9, 0.999]}.get)
    assert Constraint.parse("max(a, b) < 4 if flag == true else a in (1, 2)").holds({"a": 1, "b": 9, "flag": False}.get)
    assert Constraint.parse("log2(rollout.n) % 1 == 0").holds({"rollout.n": 8}.get)


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "rollout.n.__class__",
        "().__class__.__bases__",
        "(lambda: 1)() == 1",
        "[x for x in (1, 2)] == [1, 2]",
        "rollout['n'] == 1",
        "open('/etc/passwd')",
        "rollout.n = 3",
        "",
    ],
)
def test_constraint_rejects_anything_outside_the_whitelist(text):
    with pytest.raises(ConstraintSyntaxError):
        Constraint.parse(text)


def test_constraint_arithmetic_is_on_numbers_only():
    with pytest.raises(ConstraintEvalError):
        Constraint.parse("model.path * 1000000000 == ''").holds({"model.path": "x"}.get)
    with pytest.raises(ConstraintEvalError):
        Constraint.parse("9 ** 9 ** 9 > 1").holds({}.get)
    with pytest.raises(ConstraintEvalError):
        Constraint.parse("rollout.n + 1").holds({"rollout.n": 1}.get)  # not a true/false


def test_override_values_round_trip():
    for value in [1e-4, 1e-07, 3, -2.5, True, None, "x", "1e-4", "true", "a b", "a,b", "it's", [1, "a,b"], {"k": 1}]:
        assert same(parse_value(format_value(value)), value), value


# ---- bad input: every problem at once, each naming the file and key or the override -------


def errors(overrides: list[str]) -> str:
    with pytest.raises(SweepError) as info:
        parse_sweep(overrides)
    return str(info.value)


def test_zip_of_unequal_lengths_names_file_and_keys(tmp_path):
    path = write(
        tmp_path,
        "parameters:\n  rollout.n: {values: [2, 4, 8]}\n  data.train_batch_size: {values: [16, 32]}\n"
        "zip: [[rollout.n, data.train_batch_size]]\n",
        "bad_zip.yaml",
    )
    message = errors([f"+sweep={path}"])
    assert (
        "bad_zip.yaml: zip[0]" in message and "rollout.n has 3" in message and "data.train_batch_size has 2" in message
    )


def test_log_uniform_values_needs_positive_bounds_and_min_below_max(tmp_path):
    path = write(
        tmp_path,
        "method: random\nbudget: 4\nparameters:\n"
        "  trainer.lr: {distribution: log_uniform_values, min: 0, max: 1.0e-3}\n"
        "  algorithm.eps_clip: {distribution: uniform, min: 0.3, max: 0.1}\n",
        "bad_bounds.yaml",
    )
    message = errors([f"+sweep={path}"])
    assert "bad_bounds.yaml: parameters.trainer.lr: log_uniform_values needs min > 0" in message
    assert "bad_bounds.yaml: parameters.algorithm.eps_clip: min (0.3) must be below max (0.1)" in message
    assert "2 problems" in message


def test_bad_settings_are_all_reported_at_once(tmp_path):
    path = write(
        tmp_path,
        "method: hyperopt\nparallel: 0\nseeds: 2\nmetrc: x\n"
        "parameters:\n  trainer.seed: {values: [1, 2]}\n  trainer.lr: {distribution: normall, mu: 0, sigma: 1}\n"
        "constraints: ['__import__(\"os\")']\n",
        "bad.yaml",
    )
    message = errors([f"+sweep={path}", "rollout.n=tag(log,interval(0,4))"])
    assert "bad.yaml: method: unknown method 'hyperopt'" in message
    assert "bad.yaml: parallel: parallel is an integer >= 1, got 0" in message
    assert "bad.yaml: metrc: unknown sweep setting 'metrc'; did you mean 'metric'?" in message
    assert (
        "bad.yaml: parameters.trainer.seed: trainer.seed is both swept as a parameter and replicated by seeds"
        in message
    )
    assert "bad.yaml: parameters.trainer.lr: unknown distribution 'normall'; did you mean 'normal'" in message
    assert "bad.yaml: constraints[0]" in message
    assert "override 'rollout.n=tag(log,interval(0,4))': log_uniform_values needs min > 0" in message


def test_unknown_distribution_and_grid_with_a_distribution():
    message = errors(["trainer.lr=interval(1e-5,1e-3)"])
    assert "override 'trainer.lr=interval(1e-5,1e-3)'" in message and "needs method random or optuna" in message
    with pytest.raises(SweepError, match="unknown distribution 'uniformm'.*did you mean 'uniform'"):
        SweepSpec.from_dict({"parameters": {"a": {"distribution": "uniformm", "min": 0, "max": 1}}}, source="f.yaml")


def test_budget_counts_jobs_and_random_needs_one():
    assert "needs a budget" in errors(["trainer.lr=1e-4,3e-4", "+sweep.method=random"])
    message = errors(["trainer.lr=interval(0.1,0.2)", "+sweep.method=random", "+sweep.budget=10", "+sweep.seeds=3"])
    assert "budget 10 counts jobs (points x seeds)" in message and "9 or 12" in message


def test_missing_sweep_file_suggests_one():
    message = errors(["+sweep=lr_grd"])
    assert "+sweep=lr_grd: no sweep file conf/sweep/lr_grd.yaml; did you mean 'lr_grid'" in message


def test_optuna_method_is_parsed_with_several_objectives():
    spec = SweepSpec.from_dict(
        {
            "method": "optuna",
            "budget": 8,
            "metric": [
                {"name": "val_reward_mean", "goal": "maximize"},
                {"name": "val_response_length_mean", "goal": "minimize"},
            ],
            "parameters": {"trainer.lr": {"distribution": "log_uniform_values", "min": 1e-5, "max": 1e-3}},
        }
    )
    assert [m.goal for m in spec.metric] == ["maximize", "minimize"]
    assert SearchSpace(spec).distributions()["trainer.lr"].log


def test_each_sweep_node_setting_is_declared_once_with_its_default_and_help():
    """conf/config.yaml's `sweep:` node names the settings; the spec's fields declare each one's default
    and `--help` line together (the two that are no field: NODE_ONLY_HELP)."""
    import dataclasses

    from rllm_sweeps.sweep.node import node_fields
    from rllm_sweeps.sweep.spec import HELP, NODE_ONLY_HELP, SweepSpec, setting_help

    declared = {f.name for f in dataclasses.fields(SweepSpec) if HELP in f.metadata}
    assert declared | set(NODE_ONLY_HELP) == set(node_fields())
    assert declared.isdisjoint(NODE_ONLY_HELP)
    assert all(setting_help(key) for key in node_fields())
    assert SweepSpec().parallel == 1 and setting_help("parallel") == "jobs in flight (default 1)"
