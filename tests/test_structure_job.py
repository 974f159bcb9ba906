"""The job is a package over one typed config: `JobConfig.of` reads the composed tree once; every
other stage takes typed inputs, and hands the tree on only whole (to the engine, which builds SkyRL's
own config from it, and to what writes or logs it)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "rllm_sweeps" / "job"
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
