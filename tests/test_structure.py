"""The code's shape, checked on its source in milliseconds: no import circle, no module of many
concepts (over 500 lines without saying why at its top), no hasattr probing of the contracts, no
private Hydra, OmegaConf or submitit API outside the two modules that hold it."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rllm_sweeps", "launchers", "hydra_plugins")
MAX_LINES = 500
REASON = "Over 500 lines because"  # what a longer module must say in its docstring
PRIVATE_API_LIBRARIES = ("hydra", "omegaconf", "submitit")
PRIVATE_API_HOMES = ("rllm_sweeps.config.private_api", "launchers.submitit_private")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    found["train"] = REPO / "train.py"
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


def library_private_names() -> set[str]:
    """The underscored names Hydra, OmegaConf and submitit define or use on their objects (methods,
    attributes, dataclass fields), read from their installed source without importing them."""
    defined = re.compile(r"(?:\bdef\s+|\.|^[ \t]*)(_[A-Za-z]\w*)", re.MULTILINE)
    names: set[str] = set()
    for library in PRIVATE_API_LIBRARIES:
        spec = importlib.util.find_spec(library)
        assert spec is not None and spec.submodule_search_locations, library
        for root in spec.submodule_search_locations:
            for path in Path(root).rglob("*.py"):
                names |= set(defined.findall(path.read_text()))
    return names


def private_api_uses(source: str, private_names: set[str]) -> list[int]:
    """Lines that import an underscored module or name of the libraries (hydra._internal,
    omegaconf._utils, ...) or read one of their underscored attributes on an object not `self`/`cls`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
            if any(m.split(".")[0] in PRIVATE_API_LIBRARIES for m in modules) and any(
                part.startswith("_") for m in modules for part in m.split(".")[1:] + names
            ):
                lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in private_names:
            # os._exit and sys._getframe are the standard library's documented API, not the libraries'.
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls", "os", "sys")):
                lines.append(node.lineno)
    return lines


def test_private_hydra_and_omegaconf_api_is_used_only_in_private_api():
    private_names = library_private_names()
    assert {"_get_node", "_executor"} <= private_names  # the libraries' source was read
    outside = []
    for name, path in modules().items():
        if name not in PRIVATE_API_HOMES:
            outside += [f"{name}:{line}" for line in private_api_uses(path.read_text(), private_names)]
    assert outside == [], "route these through rllm_sweeps/config/private_api.py or launchers/submitit_private.py"


def test_the_private_api_finder_finds_private_imports_and_attributes():
    source = """
from hydra._internal.utils import get_args_parser
from omegaconf import _utils
import submitit.core._submit
from hydra.core.override_parser.types import Override
node = cfg._get_node("a")
self._get_node = None
other._not_a_library_name()
os._exit(0)
cfg._exit()
"""
    assert private_api_uses(source, {"_get_node", "_exit"}) == [2, 3, 4, 6, 10]
