"""`hydra.launcher.*` for an existing Ray cluster: the one schema of the Ray launcher's settings.

Hydra's `hydra/launcher=ray_cluster` config (hydra_plugins/rllm_sweeps_launcher/ray_cluster.py) is
this dataclass plus Hydra's `_target_`; `launchers/ray_cluster.py` runs with it (docs/RAY.md).
"""

# No `from __future__ import annotations`: OmegaConf reads these annotations as a structured config.
from dataclasses import dataclass, field
from typing import Any, Dict, Optional  # noqa: UP035 (OmegaConf's structured configs)


@dataclass
class RayClusterSettings:
    address: Optional[str] = None  # noqa: UP045  the dashboard's http://HEAD:8265 (required)
    # Passed to Ray as each job's runtime_env, merged under the job's own env_vars: `working_dir`,
    # `py_modules`, `image_uri` where the cluster does not see the project at this path (docs/RAY.md).
    runtime_env: Dict[str, Any] = field(default_factory=dict)  # noqa: UP006
    poll_interval_s: float = 2.0  # the job API is asked about all jobs at most this often
    probe_timeout_s: float = 120.0  # the dry run's probe job (does the cluster see the sweep directory?)
    # A sweep on an object store (records/store.py): how often a job sends what changed, and the sweeper
    # fetches a running job's records.
    sync_interval_s: float = 10.0
