"""The launcher contract is typed: each launcher names its handle (`Launcher[Handle]`), so that what
`submit` returns is what `poll`, `cancel` and `reattach` take back, as submitit types its `Job[R]`."""

from __future__ import annotations

import ast
from pathlib import Path

from launchers.base import Launcher
from launchers.local import LocalHandle, LocalLauncher

REPO = Path(__file__).resolve().parents[1]


def any_in_class(source: str, name: str) -> list[str]:
    """The methods of class `name` in `source` whose signature says `Any`."""
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    found = []
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            annotations = [a.annotation for a in (*node.args.args, *node.args.kwonlyargs) if a.annotation]
            if node.returns is not None:
                annotations.append(node.returns)
            if any(isinstance(n, ast.Name) and n.id == "Any" for a in annotations for n in ast.walk(a)):
                found.append(node.name)
    return found


def test_the_launcher_protocol_says_no_any():
    assert any_in_class((REPO / "launchers/base.py").read_text(), "Launcher") == []


def test_the_any_finder_finds_any_in_a_signature():
    source = "class Launcher:\n    def poll(self, handle: Any) -> int: ...\n    def f(self) -> dict[str, Any]: ...\n"
    assert any_in_class(source, "Launcher") == ["poll", "f"]


def test_every_launcher_names_its_handle():
    from launchers.ray_cluster import RayClusterLauncher, RayJobHandle
    from launchers.slurm import SlurmHandle, SlurmLauncher

    named = {
        cls: next(b.__args__[0] for b in cls.__orig_bases__ if getattr(b, "__origin__", None) is Launcher)
        for cls in (LocalLauncher, SlurmLauncher, RayClusterLauncher)
    }
    assert named == {LocalLauncher: LocalHandle, SlurmLauncher: SlurmHandle, RayClusterLauncher: RayJobHandle}
