"""HashTemplate: config_hash of configs that differ from one base at known paths, from the base's
text and the changed values only. Plain trees, no config composition (fast)."""

from __future__ import annotations

import copy

import pytest

from rllm_sweeps.jobhash import HashTemplate, config_hash

BASE = {
    "model": {"path": "builtin:tiny", "lora": {"rank": 4, "alpha": 8}},
    "trainer": {"lr": 1e-4, "adam_betas": [0.9, 0.999], "seed": 0, "logger": ["console"], "experiment_name": "x"},
    "resources": {"nodes": 1},
    "skyrl": {"train": {"trainer": {"seed": 0, "run_name": "x", "policy": {"lr": 1e-4}}}, "engine": "jax"},
    "data": {"tags": {"b": [1, {"c": None}], "a": "é"}},
}


def changed_copy(updates: dict[str, object]) -> dict:
    tree = copy.deepcopy(BASE)
    for dotted, value in updates.items():
        *parents, leaf = dotted.split(".")
        node = tree
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(leaf)] = value
        else:
            node[leaf] = value
    return tree


def without(tree: dict, paths: tuple[str, ...]) -> dict:
    tree = copy.deepcopy(tree)
    for dotted in paths:
        *parents, leaf = dotted.split(".")
        node = tree
        for part in parents:
            node = node[part]
        node.pop(leaf, None)
    return tree


@pytest.mark.parametrize(
    "updates",
    [
        {"trainer.lr": 3e-4, "skyrl.train.trainer.policy.lr": 3e-4},
        {"trainer.adam_betas.1": 0.95},  # a list element: the list is encoded whole
        {"trainer.adam_betas": [0.8, 0.9, 1.0], "model.lora.rank": 16},
        {"resources.nodes": 2, "trainer.logger": ["wandb"], "trainer.experiment_name": "y"},  # not hashed
        {"data.tags": {"z": float("inf"), "a": "ü", "b": []}, "model.path": 'a"b'},  # a dict value, escapes
        {"trainer.seed": 7, "skyrl.train.trainer.seed": 7, "model.lora.alpha": True},
        {"trainer.lr": float("nan"), "model.lora.rank": None},
    ],
)
def test_a_templates_hashes_are_config_hash_with_and_without_the_dropped_paths(updates):
    seeds = ("trainer.seed", "skyrl.train.trainer.seed")
    config = changed_copy(updates)
    assert HashTemplate(BASE, updates).hash(config) == config_hash(config)
    assert HashTemplate(BASE, updates, drop=seeds).hash(config) == config_hash(without(config, seeds))
    assert HashTemplate(BASE, updates, drop=seeds).text(config).count('"seed"') == 0


@pytest.mark.parametrize(
    ("changed", "drop"),
    [
        (["trainer.missing"], ()),  # not a key of the base
        (["trainer"], ()),  # a changed value holding keys the hash leaves out (trainer.logger)
        (["skyrl.train"], ()),
        (["trainer.adam_betas"], ("trainer.adam_betas.0",)),  # a dropped path inside a changed value
    ],
)
def test_paths_a_template_cannot_stand_for_are_refused(changed, drop):
    with pytest.raises(ValueError):
        HashTemplate(BASE, changed, drop)
