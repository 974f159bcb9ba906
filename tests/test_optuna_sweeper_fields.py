"""hydra-optuna-sweeper's OptunaSweeperConf, field by field (rllm_sweeps/sweep/optuna_sweeper_fields.py):
each field mapped onto this project's Optuna search (what it becomes) or refused (the message), and the
table is what docs/OPTUNA.md shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from rllm_sweeps.sweep.optuna_sweeper_fields import DOC, FIELDS, SAMPLER_CONFIGS, docs_table, translate, with_table

REPO = Path(__file__).resolve().parents[1]

TPE = {"_target_": "optuna.samplers.TPESampler", **SAMPLER_CONFIGS["tpe"].defaults, "seed": None}


def test_every_field_of_optuna_sweeper_conf_is_in_the_table_once():
    names = [f.name for f in FIELDS]
    assert sorted(names) == sorted(
        [
            "_target_",
            "defaults",
            "sampler",
            "direction",
            "storage",
            "study_name",
            "n_trials",
            "n_jobs",
            "search_space",
            "params",
            "custom_search_space",
        ]
    )
    assert len(set(names)) == len(names)


@pytest.mark.parametrize(
    ("values", "settings"),
    [
        ({"_target_": "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"}, {}),
        ({"defaults": [{"sampler": "random"}]}, {}),
        ({"storage": "sqlite:///study.db"}, {"optuna.storage": "sqlite:///study.db"}),
        ({"study_name": "lr"}, {"optuna.study_name": "lr"}),
        ({"n_trials": 4}, {"budget": 4}),
        ({}, {}),
        ({"n_jobs": 3}, {"parallel": 3}),
        ({"direction": "maximize"}, {"metric.goal": "maximize"}),
        ({"direction": ["minimize"]}, {"metric.goal": "minimize"}),
        ({"sampler": TPE}, {"optuna.sampler": "tpe"}),
        (
            {"sampler": {**TPE, "seed": 7, "n_startup_trials": 2}},
            {"optuna.sampler": "tpe", "seed": 7, "optuna.sampler_options": {"n_startup_trials": 2}},
        ),
        (
            {"sampler": {"_target_": "optuna.samplers.RandomSampler", "seed": 1}},
            {"optuna.sampler": "random", "seed": 1},
        ),
        ({"sampler": {"_target_": "optuna.samplers.CmaEsSampler"}}, {"optuna.sampler": "cmaes"}),
        ({"sampler": {"_target_": "optuna.samplers.NSGAIISampler"}}, {"optuna.sampler": "nsgaii"}),
        ({"sampler": {"_target_": "optuna.samplers.QMCSampler"}}, {"optuna.sampler": "qmc"}),
        ({"sampler": {"_target_": "optuna.samplers.GridSampler"}}, {"optuna.sampler": "grid"}),
    ],
)
def test_a_mapped_field_becomes_the_sweep_setting_the_table_names(values, settings):
    t = translate(values)
    assert t.problems == []
    assert t.settings == {"method": "optuna", "budget": 20, **settings}  # the plugin's 20 trials unless set


def test_params_in_the_plugins_grammar_become_the_sweepers_params():
    params = {"trainer.lr": "tag(log, interval(1e-5, 1e-2))", "rollout.n": "range(2, 10, step=2)", "x": "choice(a,b)"}
    t = translate({"params": {**params, "trainer.total_batches": 3}})
    assert t.params == {**params, "trainer.total_batches": "3"}


def test_a_list_of_directions_gives_the_named_metrics_their_goals():
    metric = [{"name": "val_reward_mean"}, {"name": "val_response_length_mean"}]
    t = translate({"direction": ["maximize", "minimize"]}, metric)
    assert t.settings["metric"] == [
        {"name": "val_reward_mean", "goal": "maximize"},
        {"name": "val_response_length_mean", "goal": "minimize"},
    ]
    assert t.notes == []


def test_without_a_metric_the_plan_says_the_products_default_metric_is_optimized():
    (note,) = translate({}).notes
    assert "maximizes val_reward_mean, the product's default metric" in note
    (note,) = translate({"direction": "minimize"}).notes
    assert "minimizes val_reward_mean" in note


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"search_space": {"x": {"type": "float"}}}, "hydra.sweeper.search_space: not supported by this sweeper: the"),
        ({"custom_search_space": "my.module.space"}, "hydra.sweeper.custom_search_space: not supported by this sweep"),
        ({"direction": ["maximize", "minimize"]}, "2 objectives need as many metrics the jobs report, by name"),
        ({"direction": "up"}, "hydra.sweeper.direction=up: a direction is minimize or maximize"),
        ({"sampler": {"_target_": "optuna.samplers.MOTPESampler"}}, "Optuna 4 removed MOTPESampler"),
        ({"sampler": {"_target_": "my.Sampler"}}, "hydra.sweeper.sampler._target_=my.Sampler: not a sampler"),
        ({"sampler": "tpe"}, "hydra.sweeper.sampler='tpe': give a sampler by its _target_"),
    ],
)
def test_a_field_that_cannot_be_honoured_is_refused_by_name(values, message):
    (problem,) = translate(values).problems
    field = next(iter(values))
    assert problem.startswith(f"hydra.sweeper.{field}")  # named
    assert message in problem


def test_docs_optuna_md_shows_the_table_as_generated():
    text = (REPO / DOC).read_text()
    assert with_table(text, docs_table()) == text


def test_the_rllm_sweeper_runs_optuna_only_where_a_field_of_the_plugins_own_is_set():
    assert translate({"params": {"trainer.lr": "1e-3,3e-3"}}, chosen=False).settings == {}
    assert translate({"params": {"trainer.lr": "1e-3,3e-3"}}, chosen=False).params == {"trainer.lr": "1e-3,3e-3"}
    assert translate({"n_trials": 4}, chosen=False).settings == {"method": "optuna", "budget": 4}
