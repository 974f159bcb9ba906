"""The code's shape, checked on its source in milliseconds: no import circle, packages that import
each other one way only, no module over 500 lines (one of many concepts),
no hasattr/getattr probing of the contracts (records, engines), no private Hydra, OmegaConf,
submitit or Ray API outside the modules that hold it, and each fact defined once."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rllm_sweeps", "launchers", "hydra_plugins", "bench")
MAX_LINES = 500
PRIVATE_API_LIBRARIES = ("hydra", "omegaconf", "submitit")
PRIVATE_API_HOMES = ("rllm_sweeps.config.private_api", "launchers.submitit_private")
RAY_PRIVATE_HOME = "rllm_sweeps.runtime.ray_private"
# Benchmarks that time a library's internals on purpose, each with why.
PRIVATE_API_BENCHMARKS = {
    "bench.plan": "times Hydra's own multirun composition (BasicSweeper, ConfigLoaderImpl) against the planner",
}


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


def test_no_module_is_over_500_lines():
    long = {name: n for name, path in modules().items() if (n := path.read_text().count("\n")) > MAX_LINES}
    assert long == {}, "split the module by its concepts"


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
        if name not in PRIVATE_API_HOMES and name not in PRIVATE_API_BENCHMARKS:
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


# ---- packages import each other one way ---------------------------------------------------------

# Package pairs that still import each other both ways, each with why. Every other pair of the
# project's packages (rllm_sweeps.<package or top-level module>, launchers, hydra_plugins, bench)
# imports one way only: problems, native_keys, keymap and records below config; config below
# engines; workflows below data and training; the job below training and engines; pbt (PBT's
# shared part) below the sweep and the job.
TWO_WAY_PACKAGES = {
    ("rllm_sweeps.report", "rllm_sweeps.sweep"): (
        "the sweep ranks (sweep/confirm.py) and prints (sweep/run.py) with the report's model; the report "
        "reads a plan.json of schema 1 (no stated facts) with the sweep spec's own parser (report/sweepdir.py)"
    ),
}


def package_of(module: str) -> str:
    """rllm_sweeps.config.validate -> rllm_sweeps.config; a top-level module is its own; launchers.x -> launchers."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "rllm_sweeps" and len(parts) > 1 else parts[0]


def two_way_packages(graph: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(package a, package b), a < b, that import each other -> the module imports of both ways."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            a, b = package_of(module), package_of(target)
            if a != b:
                edges.setdefault((a, b), []).append(f"{module} -> {target}")
    return {(a, b): sorted(edges[a, b] + edges[b, a]) for a, b in edges if a < b and (b, a) in edges}


def test_packages_import_each_other_one_way_only():
    found = two_way_packages(import_graph())
    unlisted = {pair: imports for pair, imports in found.items() if pair not in TWO_WAY_PACKAGES}
    assert unlisted == {}, "move the shared concept to the lower package, or list the pair with its reason"
    assert set(TWO_WAY_PACKAGES) <= set(found), "a listed pair imports one way now: drop it from the list"


def test_the_two_way_finder_finds_a_pair():
    graph = {"rllm_sweeps.a.x": {"rllm_sweeps.b.y"}, "rllm_sweeps.b.y": set(), "rllm_sweeps.b.z": {"rllm_sweeps.a"}}
    graph["rllm_sweeps.a"] = set()
    assert two_way_packages(graph) == {
        ("rllm_sweeps.a", "rllm_sweeps.b"): ["rllm_sweeps.a.x -> rllm_sweeps.b.y", "rllm_sweeps.b.z -> rllm_sweeps.a"]
    }


def test_the_job_runtime_imports_nothing_of_the_sweep():
    """The job (job/, training/, workflows/, engines/, runtime/, and PBT's shared part that a trial's
    job runs, pbt/) reads records, never the sweep DSL: the sweeper writes down what a job needs."""
    job_side = ("rllm_sweeps.job", "rllm_sweeps.training", "rllm_sweeps.workflows", "rllm_sweeps.engines")
    found = {
        (module, target)
        for module, targets in import_graph().items()
        if module.startswith((*job_side, "rllm_sweeps.runtime", "rllm_sweeps.pbt"))
        for target in targets
        if target.startswith("rllm_sweeps.sweep")
    }
    assert found == set()


# ---- no probing of records or engines ------------------------------------------------------------


def contract_attributes() -> set[str]:
    """The fields, methods and class attributes of the classes of records/ and engines/."""
    names: set[str] = set()
    for name, path in modules().items():
        if name.startswith(("rllm_sweeps.records", "rllm_sweeps.engines")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef):
                    for item in node.body:
                        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                            names.add(item.target.id)
                        elif isinstance(item, ast.Assign):
                            names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
                        elif isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                            names.add(item.name)
    return {n for n in names if not n.startswith("__")}


def attribute_probes(source: str, names: set[str]) -> list[int]:
    """Lines with hasattr(x, "name") or getattr(x, "name", default) for a name in `names`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2:
            attr = node.args[1]
            probe = node.func.id == "hasattr" or (node.func.id == "getattr" and len(node.args) == 3)
            if probe and isinstance(attr, ast.Constant) and attr.value in names:
                lines.append(node.lineno)
    return lines


def test_no_hasattr_or_getattr_default_probes_on_records_or_engines():
    names = contract_attributes()
    assert {"status", "uses_ray", "config_hash"} <= names  # the records' and engines' classes were read
    found = []
    for name, path in modules().items():
        found += [f"{name}:{line}" for line in attribute_probes(path.read_text(), names)]
    assert found == [], "read the record's field or the engine's attribute: it always has one"


def test_the_probe_finder_finds_probes():
    source = 'hasattr(r, "status")\ngetattr(e, "uses_ray", False)\ngetattr(e, "uses_ray")\nhasattr(a, "other")\n'
    assert attribute_probes(source, {"status", "uses_ray"}) == [1, 2]


# ---- Ray's private API in one module --------------------------------------------------------------


def ray_private_uses(source: str) -> list[int]:
    """Lines that import or name a private module of Ray (ray._raylet, ray._private...), import an
    underscored name from Ray, or read an underscored attribute of `ray`."""
    private_module = re.compile(r"^ray(\.\w+)*\._\w+(\.\w+)*$")
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            if any(private_module.match(a.name) for a in node.names):
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ray":
            if private_module.match(node.module) or any(a.name.startswith("_") for a in node.names):
                lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and private_module.match(node.value):
            lines.append(node.lineno)  # sys.modules.get("ray._raylet"), importlib.import_module(...)
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id == "ray":
                lines.append(node.lineno)
    return sorted(lines)


def test_private_ray_api_is_used_only_in_ray_private():
    outside = []
    for name, path in modules().items():
        if name != RAY_PRIVATE_HOME:
            outside += [f"{name}:{line}" for line in ray_private_uses(path.read_text())]
    assert outside == [], "route these through rllm_sweeps/runtime/ray_private.py"
    assert ray_private_uses((REPO / "rllm_sweeps/runtime/ray_private.py").read_text())  # it holds them


def test_the_ray_private_finder_finds_private_uses():
    source = """
from ray._raylet import GcsClient
import ray._private.services
sys.modules.get("ray._private.ray_constants")
ray._private.worker.global_worker
from ray import _raylet
import ray
ray.init()
'''ray._raylet.GcsClient(address) blocks'''
"""
    assert ray_private_uses(source) == [2, 3, 4, 5, 6]


# ---- one definition per fact ------------------------------------------------------------------------


def _fields_of(node: ast.ClassDef) -> set[str]:
    return {i.target.id for i in node.body if isinstance(i, ast.AnnAssign) and isinstance(i.target, ast.Name)}


def _strings(node: ast.AST) -> set[str]:
    elements = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else []
    return {e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _enum_values(node: ast.ClassDef) -> set[str]:
    if not any("Enum" in ast.unparse(b) for b in node.bases):
        return set()
    return {i.value.value for i in node.body if isinstance(i, ast.Assign) and isinstance(i.value, ast.Constant)} - {
        None
    }


# Fields named like a resource that hold something else, each with why (not a second default of it).
NOT_RESOURCE_DEFAULTS = {
    ("rllm_sweeps.records.result", "nodes"): "the nodes the job's Ray cluster counted (1 before it counts them)",
    ("rllm_sweeps.records.ray_cluster", "nodes"): "ray.json: the nodes alive in the job's Ray cluster (1: no Ray)",
}
# Where keyword arguments named like a resource are the local SLURM cluster's own shape, not a job's.
LOCAL_CLUSTER = "rllm_sweeps.local_slurm"


def resource_defaults(name: str, tree: ast.AST, fields: set[str]) -> bool:
    """A module that supplies a value of its own for a job's resource: a class field named like one
    given a default, `.get("gpus_per_node", 1)` (or "resources.gpus_per_node"), a call naming
    "resources.X" with a default=, or a keyword argument named like one given a default."""
    keys = fields | {f"resources.{f}" for f in fields}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                    if item.target.id in fields and (name, item.target.id) not in NOT_RESOURCE_DEFAULTS:
                        return True
        elif isinstance(node, ast.Call):
            named = [a for a in node.args if isinstance(a, ast.Constant) and a.value in keys]
            is_get = isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            if named and ((is_get and len(node.args) == 2) or any(k.arg == "default" for k in node.keywords)):
                return True
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not name.startswith(LOCAL_CLUSTER):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            with_default = positional[len(positional) - len(args.defaults) :]
            with_default += [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            if any(a.arg in fields for a in with_default):
                return True
    return False


def fact_definitions() -> dict[str, set[str]]:
    """Each fact -> the modules that define it (a value, a list of names, a class of fields)."""
    from rllm_sweeps.records.plan import PlannedJob
    from rllm_sweeps.records.resources import FIELDS as RESOURCE_FIELDS
    from rllm_sweeps.records.status import JobStatus
    from rllm_sweeps.sweep.node import node_fields
    from rllm_sweeps.sweeper_settings import SweeperSettings

    prefixes = {"skyrl.", "skyrl.train.", "skyrl.jax.", "skyrl.train", "skyrl.jax"}
    engines = {"jax", "fsdp", "megatron"}
    sweeper = {f.name for f in dataclasses.fields(SweeperSettings)} - {"_target_", "parallel"}
    states = {str(s) for s in JobStatus}
    job_fields = {f.name for f in dataclasses.fields(PlannedJob)}
    required_job_fields = {f.name for f in dataclasses.fields(PlannedJob) if f.default is dataclasses.MISSING}
    sweep_node = {*node_fields(), *(f for block in ("optuna", "pbt", "confirm") for f in node_fields(block))}
    found: dict[str, set[str]] = {
        "the sweep node's settings": set(),  # conf/config.yaml's `sweep:` declares them (sweep/node.py reads it)
        "the native prefixes": set(),
        "ENGINES": set(),
        "the sweeper's settings": set(),
        "the job states": set(),
        "plan.json's job fields": set(),
        "resource defaults": set(),  # conf/config.yaml's `resources:` declares them (records/resources.py reads it)
    }
    for name, path in modules().items():
        if name.startswith("bench"):  # benchmarks pick their own sizes (bench/plan.py: --large 100000)
            continue
        tree = ast.parse(path.read_text())
        if resource_defaults(name, tree, set(RESOURCE_FIELDS)):
            found["resource defaults"].add(name)
        for node in ast.walk(tree):
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if (isinstance(node, ast.Constant) and node.value in prefixes) or (
                isinstance(value, ast.Constant) and value.value == "skyrl"
            ):
                found["the native prefixes"].add(name)
            if len(_strings(node) & sweep_node) >= 3:
                found["the sweep node's settings"].add(name)
            if (isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "ENGINES" for t in node.targets)) or (
                engines <= _strings(node)
            ):
                found["ENGINES"].add(name)
            if isinstance(node, ast.ClassDef) and len(_fields_of(node) & sweeper) >= 3:
                found["the sweeper's settings"].add(name)
            if isinstance(node, ast.Constant) and node.value == 100_000 and type(node.value) is int:
                found["the sweeper's settings"].add(name)  # MAX_JOBS, the default of hydra.sweeper.max_jobs
            if isinstance(node, ast.ClassDef) and len(_enum_values(node) & states) >= 2:
                found["the job states"].add(name)
            if isinstance(node, ast.Compare) and any(
                isinstance(c, ast.Constant) and c.value in states for c in [node.left, *node.comparators]
            ):
                found["the job states"].add(name)  # status == "completed": JobStatus.COMPLETED
            # A class of all the job's required fields (report/model.py's JobRow, a table row, repeats a few).
            if (isinstance(node, ast.ClassDef) and required_job_fields <= _fields_of(node)) or (
                len(_strings(node) & job_fields) >= 4
            ):
                found["plan.json's job fields"].add(name)
    return found


def test_the_resource_default_finder_finds_defaults():
    def found(source: str, name: str = "launchers.x") -> bool:
        return resource_defaults(name, ast.parse(source), {"jobs_per_gpu", "nodes"})

    assert found("class GpuRequest:\n    gpus: int\n    jobs_per_gpu: int = 1\n")
    assert found('n = res.get("nodes", 1)') and found('n = cfg.get("resources.nodes", 1)')
    assert found('n = OmegaConf.select(cfg, "resources.nodes", default=1)')
    assert found("def start(gpus, jobs_per_gpu=1): ...") and found("def start(*, nodes: int = 1): ...")
    assert not found("class GpuRequest:\n    gpus: int\n    jobs_per_gpu: int\n")
    assert not found('n = res["nodes"]') and not found('n = res.get("nodes")') and not found("def start(nodes): ...")
    assert not found("def up(*, nodes: int = 1): ...", name=LOCAL_CLUSTER + ".cluster")
    assert not found("class JobResult:\n    nodes: int = 1\n", name="rllm_sweeps.records.result")


def test_each_fact_is_defined_once():
    assert fact_definitions() == {
        "the sweep node's settings": set(),
        "the native prefixes": {"rllm_sweeps.native_keys"},
        "ENGINES": {"rllm_sweeps.config.engine_names"},
        "the sweeper's settings": {"rllm_sweeps.sweeper_settings"},
        "the job states": {"rllm_sweeps.records.status"},
        "plan.json's job fields": {"rllm_sweeps.records.plan"},
        "resource defaults": set(),
    }
    # Hydra's ConfigStore registers the dataclass the run receives (with hydra-optuna-sweeper's fields).
    plugin = (REPO / "hydra_plugins/rllm_sweeps_sweeper/sweeper.py").read_text()
    assert 'group="hydra/sweeper", name="rllm", node=schema(SweeperSettings, RLLM_TARGET)' in plugin
    run = (REPO / "rllm_sweeps/sweep/run.py").read_text()
    assert "settings: SweeperSettings" in run
