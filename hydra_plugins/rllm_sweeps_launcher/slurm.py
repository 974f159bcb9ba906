"""`hydra/launcher=slurm`: SLURM settings read by the rllm-sweeps sweeper.

The sweeper launches jobs itself, asynchronously (launchers/slurm.py); Hydra's launcher
contract (a whole batch at a time) is not used, so this class only holds the settings.
"""

# No `from __future__ import annotations`: Hydra's plugin scan executes this module without
# registering it in sys.modules, and dataclasses then cannot resolve string annotations.
from dataclasses import dataclass
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.plugins.launcher import Launcher

from launchers.slurm_settings import SlurmSettings


@dataclass
class SlurmLauncherConf(SlurmSettings):
    """SlurmSettings (the one schema) as Hydra's launcher config; the sweeper selects the SLURM
    launcher by this type."""

    _target_: str = "hydra_plugins.rllm_sweeps_launcher.slurm.SlurmHydraLauncher"


ConfigStore.instance().store(group="hydra/launcher", name="slurm", node=SlurmLauncherConf, provider="rllm-sweeps")


class SlurmHydraLauncher(Launcher):
    def __init__(self, **settings: Any) -> None:
        self.settings = settings

    def setup(self, **kwargs: Any) -> None:
        pass

    def launch(self, job_overrides: Any, initial_job_idx: int) -> Any:
        raise RuntimeError("hydra/launcher=slurm is driven by the rllm sweeper (hydra/sweeper=rllm, the default)")
