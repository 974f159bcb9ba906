"""The code's shape, checked on its source in milliseconds: no import circle, no module of many
concepts (over 500 lines without saying why at its top), no hasattr probing of the contracts."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rllm_sweeps", "launchers", "hydra_plugins")
MAX_LINES = 500
REASON = "Over 500 lines because"  # what a longer module must say in its docstring


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the project's modules it imports (at the top or inside functions)."""
    mods = modules()
    graph: dict[str, set[str]] = {name: set() for name in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    if target in mods or node.module in mods:
                        graph[name].add(target if target in mods else node.module)
            elif isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names if a.name in mods}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_back_through_others():
    graph = import_graph()
    assert len(graph) > 50  # the walk found the project
    assert circles(graph) == []


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_is_over_500_lines_without_saying_why_at_its_top():
    long = []
    for name, path in modules().items():
        text = path.read_text()
        if text.count("\n") > MAX_LINES and REASON not in (ast.get_docstring(ast.parse(text)) or ""):
            long.append(f"{name}: {text.count(chr(10))} lines")
    assert long == []


def test_the_sweeper_never_probes_a_launcher_or_job_source_with_hasattr():
    probing = []
    for name, path in modules().items():
        if name.startswith(("rllm_sweeps.sweep", "launchers", "hydra_plugins")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "hasattr":
                    probing.append(f"{name}:{node.lineno}")
    assert probing == []
