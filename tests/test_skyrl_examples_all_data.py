"""tests/data/skyrl_examples_0.4 (issue 51): the list of SkyRL's example scripts that
bench/skyrl_examples_all.py runs, with the commit they were taken from; read from the files only."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "skyrl_examples_0.4"


def bench(name: str = "skyrl_examples_all"):
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_index_names_the_commit_and_lists_every_script_file_the_bench_runs_and_each_left_out_with_a_reason():
    index = (DATA / "INDEX.txt").read_text().splitlines()
    commit = re.search(r"NovaSky-AI/SkyRL ([0-9a-f]{40})", index[0]).group(1)
    listed = bench().script_names()
    assert listed and sorted(listed) == sorted(p.stem for p in DATA.glob("*.txt") if p.name != "INDEX.txt")
    left_out = [line for line in index if line.startswith("- ")]
    assert all(re.match(r"- examples/\S+\.sh: \S", line) for line in left_out)
    assert f"the {len(listed)} that launch" in index[0] and f"then the {len(left_out)} left out" in index[1]
    for name in listed:
        header, *overrides = (DATA / f"{name}.txt").read_text().splitlines()
        path = "examples/" + name.replace("__", "/") + ".sh"
        assert header.startswith(f"# {path} of NovaSky-AI/SkyRL ({commit[:8]})"), header
        assert any(entry in header for entry in bench("skyrl_examples_extract").ENTRY_POINTS)
        assert [o for o in overrides if not o.startswith("#")], name  # with overrides
