"""`hydra/launcher=local`: the rllm-sweeps sweeper's local processes (also where no launcher is chosen).

The sweeper launches jobs itself, asynchronously (launchers/local.py); this class only names the
choice; Hydra's `basic` typed is refused (launchers/choice.py).
"""

# No `from __future__ import annotations`: Hydra's plugin scan executes this module without
# registering it in sys.modules, and dataclasses then cannot resolve string annotations.
from dataclasses import dataclass
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.plugins.launcher import Launcher

from launchers.local_settings import LocalSettings


@dataclass
class LocalLauncherConf(LocalSettings):
    _target_: str = "hydra_plugins.rllm_sweeps_launcher.local.LocalHydraLauncher"


ConfigStore.instance().store(group="hydra/launcher", name="local", node=LocalLauncherConf, provider="rllm-sweeps")


class LocalHydraLauncher(Launcher):
    def __init__(self, **settings: Any) -> None:
        self.settings = settings

    def setup(self, **kwargs: Any) -> None:
        pass

    def launch(self, job_overrides: Any, initial_job_idx: int) -> Any:
        raise RuntimeError("hydra/launcher=local is driven by the rllm sweeper (hydra/sweeper=rllm, the default)")
