"""Records are written and read through their models (records/model.py) alone: no hand-written
to_dict/from_dict, no json.load/json.loads of a record file outside its model. What is not a
record (the sweep DSL's own syntax, files of other programs) is listed with why; a record not yet
converted is listed as such, so the list only shrinks."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Modules that may define to_dict/from_dict: the sweep DSL's file syntax (a sweep file, not a record
# of a sweep directory; plan.json stores it as data under `spec`).
DSL_SERIALIZERS = {
    "rllm_sweeps/sweep/spec.py": "SweepSpec <-> the sweep file's syntax",
    "rllm_sweeps/sweep/param.py": "a parameter in the sweep file's syntax",
    "rllm_sweeps/sweep/optuna_settings.py": "the sweep file's optuna: block",
    "rllm_sweeps/sweep/pbt_settings.py": "the sweep file's pbt: block",
    "rllm_sweeps/sweep/confirm_settings.py": "the sweep file's confirm: block",
    "rllm_sweeps/sweep/plan.py": "Plan.to_dict: PlanRecord's header (dump) and its jobs (dump), for --cfg and tests",
}
# Modules that may parse JSON, each with why it is not a record outside its model.
JSON_READERS = {
    "rllm_sweeps/records/model.py": "the models' own reader",
    "rllm_sweeps/sweep/spool.py": "the plan's spool: each line decoded by the model it is given (PlannedJob)",
    "rllm_sweeps/pbt/decision.py": "Optuna's JSON of a distribution (distribution_to_json), inside the model",
    "rllm_sweeps/report/plots.py": "a categorical value's JSON text, a plot's label",
    "rllm_sweeps/config/native.py": "SkyRL's config files",
    "rllm_sweeps/config/data_files.py": "a user's data file (jsonl)",
    "rllm_sweeps/config/validate.py": "a config tree copied through JSON",
    "rllm_sweeps/config/memory_need.py": "a model's config.json (Hugging Face)",
    "rllm_sweeps/training/policy_export.py": "a model's config.json (Hugging Face)",
    "rllm_sweeps/models/merge.py": "a PEFT adapter's adapter_config.json",
    "rllm_sweeps/tasks/math.py": "a task's data (jsonl)",
    "rllm_sweeps/data/settings.py": "a JSON-valued config setting (env_configs_json)",
    "rllm_sweeps/data/lengths.py": "a tokenizer's JSON (tokenizers' to_str)",
    "rllm_sweeps/local_slurm/settings.py": "the development cluster's cluster.json (not a sweep's record)",
    "rllm_sweeps/training/memory_fit.py": "the machine's learned activation factor (a cache, not a sweep's record)",
}


def _sources() -> dict[str, ast.AST]:
    return {str(p.relative_to(REPO)): ast.parse(p.read_text()) for p in sorted((REPO / "rllm_sweeps").rglob("*.py"))}


def hand_serializers(trees: dict[str, ast.AST]) -> set[str]:
    return {
        path
        for path, tree in trees.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name in ("to_dict", "from_dict")
    }


def json_parsers(trees: dict[str, ast.AST]) -> set[str]:
    return {
        path
        for path, tree in trees.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in ("load", "loads")
        and isinstance(node.value, ast.Name)
        and node.value.id == "json"
    }


def test_no_hand_written_to_dict_or_from_dict_outside_the_sweep_dsl():
    extra = hand_serializers(_sources()) - set(DSL_SERIALIZERS)
    assert not extra, f"a record's to_dict/from_dict written by hand (use records/model.py): {sorted(extra)}"


def test_no_json_load_of_a_record_outside_its_model():
    extra = json_parsers(_sources()) - set(JSON_READERS)
    assert not extra, f"JSON parsed outside a record's model (records/model.py), or list it with why: {sorted(extra)}"


def test_the_lists_name_only_modules_that_still_need_them():
    trees = _sources()
    assert set(DSL_SERIALIZERS) <= hand_serializers(trees) and set(JSON_READERS) <= json_parsers(trees)


def test_the_finders_find_a_hand_serializer_and_a_json_load():
    tree = ast.parse("import json\nclass R:\n    def to_dict(self): return json.loads('{}')\n")
    assert hand_serializers({"x.py": tree}) == {"x.py"} and json_parsers({"x.py": tree}) == {"x.py"}
