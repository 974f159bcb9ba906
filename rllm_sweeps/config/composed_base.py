"""The composed config that a sweep's jobs share: one per combination of config-group choices."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from omegaconf import AnyNode, DictConfig, ListConfig, OmegaConf

from rllm_sweeps.config.interpolations import Reevaluation, find_interpolations, reevaluation
from rllm_sweeps.config.overrides import all_keys
from rllm_sweeps.config.private_api import child_node, is_none
from rllm_sweeps.config.reconcile import is_planted
from rllm_sweeps.jobhash import HashTemplate
from rllm_sweeps.keymap import BY_NATIVE, KEY_MAPPINGS
from rllm_sweeps.plain_tree import TreePath
from rllm_sweeps.problems import ConfigIssue


class Base:
    """The config of one combination of config-group choices, with the base overrides."""

    def __init__(self, groups: tuple[str, ...], cfg: DictConfig) -> None:
        self.groups = groups
        self.cfg = cfg  # the working copy: jobs set values on it and restore them
        self.known_keys = set(all_keys(cfg))
        self.needs_reconcile = any(not is_planted(cfg, m) for m in KEY_MAPPINGS)
        try:
            self.plain: dict[str, Any] | None = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
        except Exception:
            self.plain = None  # an interpolation that does not resolve: the exact path reports it
        self.interps = find_interpolations(cfg)
        self._analyses: dict[frozenset[str], Reevaluation] = {}
        self._targets: dict[str, bool] = {}
        self.native_types: list[ConfigIssue] | None = None  # SkyRL type checks of the base's tree
        self._templates: dict[tuple[frozenset[str], tuple[str, ...]], HashTemplate | None] = {}

    def hash_template(self, changed: frozenset[str], drop: tuple[str, ...] = ()) -> HashTemplate | None:
        """The config hash of jobs that differ from this base at `changed`, less `drop` (cached: a
        sweep's jobs change the same paths); None when a template cannot say (config_hash can)."""
        key = (changed, drop)
        if key not in self._templates:
            try:
                self._templates[key] = HashTemplate(self.plain, changed, drop) if self.plain is not None else None
            except ValueError:
                self._templates[key] = None
        return self._templates[key]

    def _target_ok(self, key: str) -> bool:
        """Can a job's value go straight into the tree at `key`? (an untyped leaf or a list)."""
        if key not in self._targets:
            ok = key not in BY_NATIVE
            node: Any = self.cfg
            parts = key.split(".")
            for i, part in enumerate(parts):
                if not ok:
                    break
                if not isinstance(node, DictConfig) or is_none(node) or OmegaConf.is_interpolation(node):
                    ok = False
                    break
                if part not in node:
                    ok = False
                    break
                child = child_node(node, part)
                if i == len(parts) - 1:
                    is_list = isinstance(child, ListConfig) and not OmegaConf.is_interpolation(child)
                    ok = type(child) is AnyNode or (is_list and not is_none(child))
                node = child
            self._targets[key] = ok
        return self._targets[key]

    def analysis(self, keys: frozenset[str]) -> Reevaluation:
        """What a job that sets `keys` does to this base (cached: a sweep's jobs set the same keys)."""
        if keys not in self._analyses:
            fast = self.plain is not None and not self.needs_reconcile and all(self._target_ok(k) for k in keys)
            found = reevaluation(self.interps, keys)
            self._analyses[keys] = replace(found, fast=fast and found.fast)
        return self._analyses[keys]

    def node_parent(self, path: TreePath) -> tuple[Any, str | int]:
        """The node holding `path`'s last part, and that part."""
        node: Any = self.cfg
        for part in path[:-1]:
            node = child_node(node, part)
        return node, path[-1]
