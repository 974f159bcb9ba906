"""The `optuna:` block of the sweeps DSL: names, options, what goes with what. Pure logic."""

from __future__ import annotations

import optuna
import pytest

from rllm_sweeps.sweep.optuna_settings import PRUNERS, SAMPLERS, make_pruner, make_sampler
from rllm_sweeps.sweep.parse_cli import parse_sweep
from rllm_sweeps.sweep.spec import SweepError, SweepSpec

LR = {"trainer.lr": {"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-2}}


def spec(optuna_block=None, **fields) -> SweepSpec:
    data = {"method": "optuna", "budget": 4, "parameters": LR, **fields}
    if optuna_block is not None:
        data["optuna"] = optuna_block
    return SweepSpec.from_dict(data)


def problems(**kwargs) -> str:
    with pytest.raises(SweepError) as err:
        spec(**kwargs)
    return str(err.value)


def test_defaults_are_tpe_and_the_median_pruner_and_none_with_several_objectives():
    assert (spec().optuna.sampler, spec().optuna.pruner) == ("tpe", "median")
    two = [{"name": "val_reward_mean"}, {"name": "val_response_length_mean", "goal": "minimize"}]
    assert spec(metric=two).optuna.pruner == "none"


@pytest.mark.parametrize(("name", "canonical"), [("NSGA-II", "nsgaii"), ("TPESampler", "tpe"), ("cma-es", "cmaes")])
def test_sampler_names_are_forgiving(name, canonical):
    assert spec({"sampler": name}).optuna.sampler == canonical


def test_unknown_sampler_pruner_and_option_names_say_what_was_meant():
    message = problems(
        optuna_block={"sampler": "tpee", "pruner": "hyperbnd", "sampler_option": {}, "pruner_options": {"x": 1}}
    )
    assert "unknown sampler 'tpee'; did you mean 'tpe'?" in message
    assert "unknown pruner 'hyperbnd'; did you mean 'hyperband'?" in message
    assert "unknown optuna setting 'sampler_option'; did you mean 'sampler_options'?" in message


def test_option_values_are_checked_and_the_seed_is_the_sweeps():
    message = problems(optuna_block={"sampler_options": {"n_startup_trials": -1, "seed": 3}})
    assert "n_startup_trials of tpe is an integer >= 0, got -1" in message
    assert "the sampler's seed is the sweep's `seed`" in message
    assert "min_resource of asha is an integer >= 1 or auto, got 0" in problems(
        optuna_block={"pruner": "asha", "pruner_options": {"min_resource": 0}}
    )


def test_what_cannot_go_together_is_refused():
    two = [{"name": "val_reward_mean"}, {"name": "val_reward_std", "goal": "minimize"}]
    message = problems(metric=two, optuna_block={"sampler": "cmaes", "pruner": "asha"})
    assert "sampler cmaes optimizes one objective" in message
    assert "pruner asha needs a single objective" in message
    assert "the grid sampler takes values" in problems(optuna_block={"sampler": "grid"})
    assert "storage scheme 'redis' is not supported" in problems(optuna_block={"storage": "redis://x"})


def test_settings_come_from_the_command_line_too_and_win_key_by_key(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "method: optuna\nbudget: 4\nparameters: {trainer.lr: {distribution: uniform, min: 0.1, max: 0.2}}\n"
        "optuna: {sampler: tpe, pruner: asha, pruner_options: {min_resource: 2}}\n"
    )
    request = parse_sweep(
        [f"+sweep={path}", "sweep.optuna.sampler=random", "+sweep.optuna.pruner_options.reduction_factor=2"]
    )
    settings = request.spec.optuna
    assert (settings.sampler, settings.pruner) == ("random", "asha")
    assert settings.pruner_options == {"min_resource": 2, "reduction_factor": 2}
    assert SweepSpec.from_dict(request.spec.to_dict()).optuna == settings  # plan.json reads back


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_every_sampler_builds(name):
    settings = spec({"sampler": name}, parameters={"rollout.n": [2, 4]}).optuna
    assert isinstance(make_sampler(settings, seed=0, grid={"rollout.n": [2, 4]}), optuna.samplers.BaseSampler)


@pytest.mark.parametrize("name", sorted(PRUNERS))
def test_every_pruner_builds(name):
    assert isinstance(make_pruner(spec({"pruner": name}).optuna), optuna.pruners.BasePruner)


def test_another_pruner_on_the_command_line_leaves_the_files_options_for_its_own_pruner():
    request = parse_sweep(["+sweep=lr_optuna", "sweep.optuna.pruner=none"])
    assert (request.spec.optuna.pruner, request.spec.optuna.pruner_options) == ("none", {})
    assert any("optuna.pruner_options are for asha" in n for n in request.spec.notes)
