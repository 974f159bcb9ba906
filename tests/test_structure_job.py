"""The job is a package over one typed config: `JobConfig.of` reads the composed tree once; every
other stage takes typed inputs (the engine its `EngineSettings`, the loop its `LoopSettings`), and
hands the tree on only whole to what writes or logs it (the task and workflow groups, config.yaml,
the trackers)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "rllm_sweeps" / "job"
ENGINES = REPO / "rllm_sweeps" / "engines"
# The stages the job hands its engine settings to: each takes typed inputs, none `Any`.
ENGINE_STAGES = {"node_resources", "build_backend", "_build", "out_of_memory_fix"}
BUILDER = "config.py"  # JobConfig.of: the one reader of the tree
RAW = {"DictConfig", "ListConfig", "OmegaConf"}  # the tree's types and its reader


def raw_config_uses(source: str) -> list[str]:
    """Where `source` takes the raw config or reads into it: a parameter typed as the tree, OmegaConf
    called, or a key read below a JobConfig's `tree`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
                text = ast.unparse(arg.annotation) if arg.annotation is not None else ""
                if any(name in text for name in RAW):
                    found.append(f"{node.name}({arg.arg}: {text})")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "OmegaConf":
            found.append(f"OmegaConf.{node.attr}")
        elif isinstance(node, ast.Attribute | ast.Subscript) and isinstance(node.value, ast.Attribute):
            if node.value.attr == "tree":
                found.append(ast.unparse(node))
    return found


def test_only_the_builder_reads_the_raw_config_in_the_job():
    found = {
        path.name: uses
        for path in sorted(JOB.glob("*.py"))
        if path.name != BUILDER and (uses := raw_config_uses(path.read_text()))
    }
    assert found == {}, "read the value into JobConfig (rllm_sweeps/job/config.py) and take it from there"


def test_the_raw_config_finder_finds_a_tree_parameter_a_key_read_and_omegaconf():
    source = (
        "def stage(cfg: DictConfig, ok: JobConfig, keys: ListConfig | None) -> None:\n"
        "    x = ok.tree.trainer.lr\n"
        "    y = job.tree['model']\n"
        "    z = OmegaConf.to_container(ok.tree)\n"
        "    engine.build_backend(ok.tree, ok.loop)\n"
    )
    assert sorted(raw_config_uses(source)) == sorted(
        [
            "stage(cfg: DictConfig)",
            "stage(keys: ListConfig | None)",
            "ok.tree.trainer",
            "job.tree['model']",
            "OmegaConf.to_container",
        ]
    )


def test_a_job_config_is_built_once_typed_and_frozen():
    from omegaconf import OmegaConf
    from omegaconf.errors import ReadonlyConfigError

    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.job import JobConfig
    from rllm_sweeps.jobhash import config_hash

    cfg = load_config(["trainer.lr=2e-5", "trainer.logger=[console,tensorboard]"], notify=lambda _: None)
    job = JobConfig.of(cfg)
    assert (job.loop.lr, job.loggers, job.resume_mode, job.nodes) == (2e-5, ("console", "tensorboard"), "auto", 1)
    assert (job.engine.name, job.config_hash) == ("jax", config_hash(cfg))
    assert job.resolved_yaml() == OmegaConf.to_yaml(cfg, resolve=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.nodes = 2  # type: ignore[misc]
    with pytest.raises(ReadonlyConfigError):
        job.tree.trainer.lr = 1.0
    cfg.trainer.lr = 1.0  # the caller's tree is its own
    assert job.loop.lr == job.tree.trainer.lr == 2e-5


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, str]]:
    args = node.args
    return [
        (arg.arg, ast.unparse(arg.annotation) if arg.annotation is not None else "")
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs)
    ]


def untyped_engine_inputs(source: str) -> list[str]:
    """Where `source` has an engine take the raw config (a class's method with a parameter typed as the
    tree) or an engine stage (ENGINE_STAGES) take a parameter typed `Any` or not typed at all."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            for method in node.body:
                if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
                    found += [
                        f"{node.name}.{method.name}({name}: {text})"
                        for name, text in _parameters(method)
                        if any(raw in text for raw in RAW)
                    ]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in ENGINE_STAGES:
            found += [
                f"{node.name}({name}: {text or 'untyped'})"
                for name, text in _parameters(node)
                if name != "self" and (not text or "Any" in text)
            ]
    return found


def test_no_engine_method_takes_the_composed_tree_and_its_stages_take_typed_inputs():
    sources = [*sorted(ENGINES.glob("*.py")), REPO / "rllm_sweeps" / "failures.py"]
    found = {path.name: uses for path in sources if (uses := untyped_engine_inputs(path.read_text()))}
    assert found == {}, "read the value into EngineSettings (rllm_sweeps/engines/settings.py) in JobConfig.of"


def test_the_engine_input_finder_finds_a_tree_parameter_and_an_untyped_stage():
    source = (
        "class MyEngine(Engine):\n"
        "    def node_resources(self, cfg: DictConfig) -> tuple[int, int]: ...\n"
        "    def _build(self, settings: EngineSettings, loop: Any, model_dir: Path) -> None: ...\n"
        "    def helper(self, anything: Any, tree: 'ListConfig') -> None: ...\n"
        "def out_of_memory_fix(settings, fit: MemoryFit | None) -> str: ...\n"
    )
    assert sorted(untyped_engine_inputs(source)) == sorted(
        [
            "MyEngine.node_resources(cfg: DictConfig)",
            "MyEngine.helper(tree: 'ListConfig')",
            "_build(loop: Any)",
            "out_of_memory_fix(settings: untyped)",
        ]
    )


def test_the_engine_settings_are_built_once_with_the_job_config():
    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.job import JobConfig

    cfg = load_config(["resources.cpus_per_task=3", "model.lora.rank=4"], notify=lambda _: None)
    settings = JobConfig.of(cfg).engine_settings
    assert (settings.engine, settings.cpus_per_task, settings.lora_rank, settings.nodes) == ("jax", 3, 4, 1)
    assert settings.jax is not None and settings.skyrl_train is None
    assert settings.jax.train_micro_batch_size == "auto"
    assert settings.jax.skyrl_fields()["max_lora_rank"] == 4  # skyrl.jax.max_lora_rank follows model.lora.rank
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.nodes = 2  # type: ignore[misc]
