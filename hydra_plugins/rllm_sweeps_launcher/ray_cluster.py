"""`hydra/launcher=ray_cluster`: an existing Ray cluster, reached through Ray's job API by the
rllm-sweeps sweeper (launchers/ray_cluster.py); this class only holds the settings."""

# No `from __future__ import annotations`: Hydra's plugin scan executes this module without
# registering it in sys.modules, and dataclasses then cannot resolve string annotations.
from dataclasses import dataclass
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.plugins.launcher import Launcher

from launchers.ray_cluster_settings import RayClusterSettings


@dataclass
class RayClusterLauncherConf(RayClusterSettings):
    """RayClusterSettings (the one schema) as Hydra's launcher config; the sweeper selects the Ray
    launcher by this type."""

    _target_: str = "hydra_plugins.rllm_sweeps_launcher.ray_cluster.RayClusterHydraLauncher"


ConfigStore.instance().store(
    group="hydra/launcher", name="ray_cluster", node=RayClusterLauncherConf, provider="rllm-sweeps"
)


class RayClusterHydraLauncher(Launcher):
    def __init__(self, **settings: Any) -> None:
        self.settings = settings

    def setup(self, **kwargs: Any) -> None:
        pass

    def launch(self, job_overrides: Any, initial_job_idx: int) -> Any:
        raise RuntimeError("hydra/launcher=ray_cluster is driven by the rllm sweeper (hydra/sweeper=rllm, the default)")
