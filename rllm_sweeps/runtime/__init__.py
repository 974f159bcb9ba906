"""Runtime pieces a training job needs around its engine (per-job Ray cluster).

Names are loaded lazily so that ``python -m rllm_sweeps.runtime.ray_cluster``
runs without importing the module twice.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "LocalRayCluster",
    "NodeInfo",
    "RayClusterError",
    "RayClusterSpec",
    "RayNode",
    "RayPorts",
    "Terminated",
    "allocate_ports",
    "head_command",
    "install_sigterm_handler",
    "sigterm_raises",
    "slurm_head_host",
    "slurm_node_resources",
    "start_head_node",
    "start_worker_node",
    "wait_for_nodes",
    "worker_command",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module("rllm_sweeps.runtime.ray_cluster"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
