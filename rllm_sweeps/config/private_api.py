"""Every use of Hydra's and OmegaConf's private (underscored or undocumented) API by the fast composition.

Checked against hydra-core 1.3.2, omegaconf 2.3.1 (antlr4-python3-runtime 4.9.3). Each function says why the
public API does not do it. After upgrading either library, tests/test_sweep_plan.py (the fast composition
against load_config()) says whether these still hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.core.override_parser.types import Override
from omegaconf import Container, DictConfig, Node


def apply_overrides(overrides: Sequence[Override], cfg: DictConfig) -> None:
    """Hydra's own application of value overrides (`k=v`, `+k=v`, `++k=v`, `~k`) to a composed config, in place.

    Public Hydra only composes from scratch (hydra.compose: the defaults list again, ~0.1 s a call); a copy of
    this function on OmegaConf.update would be a second copy of Hydra's rules for +, ++ and ~ and their errors.
    """
    ConfigLoaderImpl._apply_overrides_to_config(list(overrides), cfg)


def child_node(container: Container, key: str | int) -> Node:
    """The node at `key` itself, whose type says whether it is typed (a structured config's field) or not.

    Public item access (cfg[key]) gives the value: it resolves interpolations and unwraps leaves.
    """
    node = container._get_node(key)
    assert isinstance(node, Node)
    return node


def raw_value(node: Node) -> Any:
    """A node's value as written: an interpolation's `${...}` text, unresolved (public access resolves it)."""
    return node._value()


def is_none(node: Node) -> bool:
    """A node set to None. OmegaConf 2.3 has no public test of a node: item access gives None for a None
    container, but raises for a missing (`???`) one and resolves an interpolation."""
    return node._is_none()


# ---- what an interpolation reads: OmegaConf's grammar ----------------------------------------------------


@dataclass(frozen=True)
class NodeReference:
    """`${key}`: the text between `${` and `}` (it may be relative, `.a`, or nested, `a.${b}`)."""

    key: str


@dataclass(frozen=True)
class ResolverCall:
    """`${name:args}`: the resolver's name and its arguments as written."""

    name: str
    args: str


def interpolation_parts(raw: str) -> list[NodeReference | ResolverCall]:
    """The node references and resolver calls in an interpolation, outermost first, in text order.

    Raises when OmegaConf's grammar cannot parse `raw`. OmegaConf's public API resolves interpolations but does
    not say what they read; its grammar (omegaconf.grammar_parser, undocumented) does.
    """
    from omegaconf.grammar.gen.OmegaConfGrammarParser import OmegaConfGrammarParser as Grammar
    from omegaconf.grammar_parser import parse

    parts: list[NodeReference | ResolverCall] = []

    def walk(ctx: Any) -> None:
        if isinstance(ctx, Grammar.InterpolationNodeContext):
            parts.append(NodeReference(ctx.getText()[2:-1]))
        elif isinstance(ctx, Grammar.InterpolationResolverContext):
            args = ctx.sequence()
            parts.append(ResolverCall(ctx.resolverName().getText(), args.getText() if args is not None else ""))
        for i in range(ctx.getChildCount()):  # a token (a leaf of the parse tree) has none
            walk(ctx.getChild(i))

    walk(parse(raw))
    return parts
