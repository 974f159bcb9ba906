"""Every use of Hydra's and OmegaConf's private (underscored or undocumented) API in the project.

Checked against hydra-core 1.3.2, omegaconf 2.3.1 (antlr4-python3-runtime 4.9.3). Each function says why the
public API does not do it. After upgrading either library, tests/test_sweep_plan.py (the fast composition
against load_config()) and tests/test_sweep_spec.py (override values, glob()) say whether these still hold;
tests/test_structure.py keeps such uses here (submitit's are in launchers/submitit_private.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from omegaconf import Container, DictConfig, Node

if TYPE_CHECKING:  # hydra._internal is imported where used: importing this module stays cheap
    from hydra.core.config_loader import ConfigLoader
    from hydra.core.config_search_path import ConfigSearchPath
    from hydra.core.override_parser.types import Override

    from rllm_sweeps.config.source import ConfigSource


def apply_overrides(overrides: Sequence[Override], cfg: DictConfig) -> None:
    """Hydra's own application of value overrides (`k=v`, `+k=v`, `++k=v`, `~k`) to a composed config, in place.

    Public Hydra only composes from scratch (hydra.compose: the defaults list again, ~0.1 s a call); a copy of
    this function on OmegaConf.update would be a second copy of Hydra's rules for +, ++ and ~ and their errors.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    ConfigLoaderImpl._apply_overrides_to_config(list(overrides), cfg)


def config_loader(source: ConfigSource) -> ConfigLoader:
    """Hydra's config loader over `source`'s search path: what glob() needs to list a config group's options.

    Public Hydra makes one only inside a Hydra app (hydra.main, initialize*), as global state
    (GlobalHydra), which parsing a sweep outside the app must neither need nor change.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    return ConfigLoaderImpl(config_search_path=search_path(source))


def search_path(source: ConfigSource) -> ConfigSearchPath:
    """Hydra's search path for `source`: Hydra's own entries, the primary config's directory, the
    plugins', and `--config-dir` where Hydra's run_hydra puts it (before the structured schema).

    Public Hydra builds this only inside hydra.main; the pre-flight check and the sweeper's
    compositions need the same path outside it.
    """
    from hydra._internal.utils import create_config_search_path
    from hydra.core.config_search_path import SearchPathQuery

    path = create_config_search_path(source.primary)
    if source.config_dir is not None:
        path.prepend(
            provider="command-line", path=f"file://{source.config_dir}", anchor=SearchPathQuery(provider="schema")
        )
    return path


def start_hydra(source: ConfigSource) -> None:
    """GlobalHydra initialized over `source`'s search path (public hydra.compose() then composes with
    it). Public Hydra initializes over one directory only (initialize_config_dir)."""
    from hydra._internal.hydra import Hydra

    Hydra.create_main_hydra2(task_name="rllm_sweeps", config_search_path=search_path(source))


def config_repository(source: ConfigSource, overrides: Sequence[str]) -> Any:
    """Hydra's repository of configs for `source` with `overrides`' hydra.searchpath (or the primary
    config's) applied by Hydra's own rule: what its groups and options are, and which directories it
    reads (`get_group_options`, `group_exists`, `get_sources`).

    Public Hydra lists a group's options only inside a Hydra app (GlobalHydra's config loader).
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    loader = ConfigLoaderImpl(config_search_path=search_path(source))
    _, repo = loader._parse_overrides_and_create_caching_repo(source.config_name, source.with_searchpath(overrides))
    return repo


def command_line_parser() -> argparse.ArgumentParser:
    """Hydra's own parser of an app's command line (-m, --cfg, --help, the overrides).

    Public Hydra parses the command line only inside hydra.main, which then runs the app; the
    pre-flight check reads the same flags before it.
    """
    from hydra._internal.utils import get_args_parser

    return get_args_parser()


def override_value_text(value: Any) -> str:
    """A value as Hydra writes it right of `=` in an override: strings with , : = ( ) [ ] { } and
    spaces escaped, None as null, booleans as True/False.

    Public Hydra writes only an Override's own parsed value (Override.get_value_element_as_str),
    not a value the caller holds; a copy of its escaping here would be a second copy of its rules.
    """
    from hydra.core.override_parser.types import Override

    return Override._get_value_element_as_str(value)


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
