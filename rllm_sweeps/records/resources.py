"""A job's resources: its `resources.*`, as the planner read them from its composed config, for the
launchers to size it by (SLURM's flags, a local job's GPUs) and plan.json to record. A job that
leaves them has conf/config.yaml's `resources:` (their only definition), as plan.json records it:

    {"nodes": 1, "gpus_per_node": 0, "cpus_per_task": 2, "jobs_per_gpu": 1, "mem_gb": 8, "time_min": 60}

Every job's config has every key, so no reader supplies a value of its own (tests/test_structure.py
checks it). A pydantic model (records/model.py): plan.json's and a config's resources validate
through it, a missing or wrong key named.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import Any

from pydantic.dataclasses import dataclass


@dataclass(frozen=True)
class Resources:
    nodes: int
    # What the job asks of each node: the policy's GPUs, plus those of SkyRL's vLLM engines where they
    # are not colocated (config/gpu_trainer_rules.py: node_gpus), so it may exceed the config's value.
    gpus_per_node: int
    cpus_per_task: int
    jobs_per_gpu: int  # local sweeps: k jobs share each GPU
    mem_gb: float
    time_min: int

    def hours(self) -> tuple[float, float]:
        """Node-hours and GPU-hours (an upper bound: its time limit)."""
        return hours(self.nodes, self.gpus_per_node, self.time_min)


FIELDS = tuple(f.name for f in fields(Resources))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def hours(nodes: Any, gpus_per_node: Any, time_min: Any) -> tuple[float, float]:
    """Node-hours and GPU-hours of a job of these values; (0, 0) where one is not a number (a point's
    values that could not be read)."""
    if not all(_is_number(v) for v in (nodes, gpus_per_node, time_min)):
        return 0.0, 0.0
    return nodes * time_min / 60, nodes * gpus_per_node * time_min / 60


def total_hours(resources: Iterable[Resources | None]) -> tuple[float, float]:
    """Node-hours and GPU-hours of jobs of these resources (None: unknown, not counted)."""
    node_h = gpu_h = 0.0
    for r in resources:
        if r is not None:
            n, g = r.hours()
            node_h, gpu_h = node_h + n, gpu_h + g
    return node_h, gpu_h


__all__ = ["FIELDS", "Resources", "hours", "total_hours"]
