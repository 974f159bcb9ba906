"""The sweep node's settings: conf/config.yaml's `sweep:` node declares them, once, each with its
comment (null: not set), so that `sweep.KEY=VALUE` needs no `+`. The parsers take the names from here:
parse_file.py the node's own, optuna_settings.py, pbt_settings.py and confirm_settings.py their block's."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def _sweep_node() -> dict[str, Any]:
    from omegaconf import OmegaConf

    from rllm_sweeps.config.compose import CONF_DIR

    node = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml").sweep)
    assert isinstance(node, dict)
    return node


def node_fields(block: str | None = None) -> tuple[str, ...]:
    """The settings of the sweep node (block None) or of its block `block` (optuna, pbt, confirm), in
    conf/config.yaml's order."""
    return tuple(_sweep_node() if block is None else _sweep_node()[block])


def node_blocks() -> tuple[str, ...]:
    """The node's blocks (a mapping of settings of their own: optuna, pbt, confirm), in its order."""
    return tuple(key for key, value in _sweep_node().items() if isinstance(value, dict))


__all__ = ["node_blocks", "node_fields"]
