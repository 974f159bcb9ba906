"""An override's text taken apart in one place (rllm_sweeps/override_text.py), and no other module
strips `+`/`~` by hand."""

from __future__ import annotations

import ast

import pytest
from test_structure import modules

from rllm_sweeps.override_text import OverrideText, override_key, set_value, split_override, split_prefix

HOME = "rllm_sweeps.override_text"


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("trainer.lr=1e-4", ("", "trainer.lr", "1e-4")),
        ("+trainer.lr=1e-4", ("+", "trainer.lr", "1e-4")),
        ("++trainer.lr=1e-4", ("++", "trainer.lr", "1e-4")),
        ("~skyrl.jax", ("~", "skyrl.jax", None)),
        ("~skyrl.jax=x", ("~", "skyrl.jax", "x")),
        ("hydra.run.dir=", ("", "hydra.run.dir", "")),
        ("data.path=a=b", ("", "data.path", "a=b")),  # the value keeps its own "="
        ("+model@pkg=tiny", ("+", "model@pkg", "tiny")),
        ("+++a=1", ("+++", "a", "1")),  # as written: a caller reports a prefix that is not Hydra's
    ],
)
def test_an_override_splits_into_its_prefix_key_and_value(text, parts):
    assert split_override(text) == OverrideText(*parts)
    assert override_key(text) == parts[1]


def test_a_key_element_splits_into_its_prefix_and_key():
    assert split_prefix("+a.b") == ("+", "a.b")
    assert split_prefix("a.b") == ("", "a.b")
    assert split_prefix("~a") == ("~", "a")


def test_only_a_set_of_the_key_gives_its_value():
    assert set_value("hydra.run.dir=/x", "hydra.run.dir") == "/x"
    assert set_value("+hydra.run.dir=/x", "hydra.run.dir") == "/x"
    assert set_value("++hydra.run.dir=", "hydra.run.dir") == ""
    assert set_value("~hydra.run.dir=/x", "hydra.run.dir") is None  # a delete sets nothing
    assert set_value("~hydra.run.dir", "hydra.run.dir") is None
    assert set_value("hydra.run.dir.x=/x", "hydra.run.dir") is None
    assert set_value("hydra.run.dir", "hydra.run.dir") is None  # no value
    assert split_override("~a").deletes and not split_override("++a=1").deletes


def hand_stripped_prefixes(source: str) -> list[int]:
    """Lines that strip an override's prefix by hand: `.lstrip(...)` of `+` or `~`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "lstrip":
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and set(arg.value) & set("+~"):
                lines.append(node.lineno)
    return lines


def test_no_module_strips_an_overrides_prefix_by_hand():
    found = []
    for name, path in modules().items():
        if name != HOME:
            found += [f"{name}:{line}" for line in hand_stripped_prefixes(path.read_text())]
    assert found == [], "take the override apart with rllm_sweeps/override_text.py"
    assert hand_stripped_prefixes((modules()[HOME]).read_text())  # it holds them


def test_the_hand_strip_finder_finds_strips():
    source = 'k = o.lstrip("+")\nk = o.lstrip("+~")\nk = o.lstrip("~")\nk = o.lstrip(" ")\nk = o.lstrip()\n'
    assert hand_stripped_prefixes(source) == [1, 2, 3]
