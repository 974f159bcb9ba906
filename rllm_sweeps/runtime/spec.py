"""What one Ray node is given (:class:`RayClusterSpec`), and the rule its temp dir obeys."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

from rllm_sweeps.runtime.auth import RayAuth
from rllm_sweeps.runtime.ports import DEFAULT_BLOCK_SIZE, SERVICE_SLOTS

# AF_UNIX paths are limited to 107 bytes.  Ray puts its sockets at
# <temp_dir>/session_YYYY-MM-DD_HH-MM-SS_ffffff_<pid>/sockets/plasma_store
# (64 bytes after temp_dir with a 7-digit pid); keep a small margin.
MAX_TEMP_DIR_LEN = 107 - 64 - 2
TEMP_BASE_ENV = "RLLM_RAY_TMP"  # short base directory for temp dirs


@dataclasses.dataclass(frozen=True)
class RayClusterSpec:
    """What one Ray node (the head of a local cluster, or one node of a
    multi-node cluster) is given.

    num_cpus / num_gpus are always passed explicitly (Ray hangs or
    over-subscribes under SLURM CPU limits otherwise).  temp_dir None means a
    fresh short directory under $RLLM_RAY_TMP or /tmp, removed after a clean
    stop.  port None means: allocate a free, locked port block; an explicit
    port P uses the block [P, P + block_size) and the caller guarantees it is
    disjoint from every other cluster's.  dashboard_host: the address the head's
    dashboard (and so the Job Submission API) listens on, for clients on other
    machines.  auth: the token file every process of the node reads
    (``RAY_AUTH_MODE=token``); None runs the node without authentication, which only
    tests of the node machinery do: a job's nodes always have one (``job_ray.py``).
    """

    num_cpus: int
    num_gpus: int = 0
    temp_dir: Path | None = None
    port: int | None = None
    object_store_memory_mb: int | None = None
    node_ip_address: str = "127.0.0.1"
    resources: Mapping[str, float] | None = None
    include_dashboard: bool = False
    dashboard_host: str | None = None  # None: Ray's default, loopback
    block_size: int = DEFAULT_BLOCK_SIZE
    start_timeout_s: float = 60.0
    stop_grace_s: float = 15.0
    env: Mapping[str, str] | None = None
    keep_temp_dir: bool = False
    auth: RayAuth | None = None

    def __post_init__(self) -> None:
        if self.num_cpus < 0 or self.num_gpus < 0:
            raise ValueError("num_cpus and num_gpus must be >= 0")
        if self.block_size < SERVICE_SLOTS + 2:
            raise ValueError(f"block_size must be >= {SERVICE_SLOTS + 2}")
        if self.object_store_memory_mb is not None and self.object_store_memory_mb < 75:
            raise ValueError("object_store_memory_mb must be >= 75 (Ray's minimum)")
        if self.temp_dir is not None:
            check_temp_dir(Path(self.temp_dir))


def check_temp_dir(temp_dir: Path) -> None:
    """Refuse a relative ``temp_dir`` or one too long for the AF_UNIX sockets Ray puts under it."""
    s = str(temp_dir)
    if not os.path.isabs(s):
        raise ValueError(f"temp_dir must be absolute: {s}")
    if len(s.encode()) > MAX_TEMP_DIR_LEN:
        raise ValueError(
            f"temp_dir {s!r} is {len(s.encode())} bytes; Ray's socket paths under it "
            f"would exceed the 107-byte AF_UNIX limit (max {MAX_TEMP_DIR_LEN} bytes). "
            f"Use a short directory, e.g. /tmp/rr-XXXX (set {TEMP_BASE_ENV})."
        )
