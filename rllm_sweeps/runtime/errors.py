"""The one error the per-job Ray runtime raises for its own failures."""

from __future__ import annotations


class RayClusterError(RuntimeError):
    """Ray could not be started, did not answer in time, or left processes."""
