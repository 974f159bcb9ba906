"""The Hydra Sweeper: plan (every job validated), then run through an asynchronous launcher.

Hydra's own launcher contract is synchronous (a whole batch, then the next), so the sweeper
drives launchers/ directly: `parallel` jobs in flight, the next one handed over the moment
one finishes. The sweep directory explains itself (manifest.json, plan.json, one directory
per job) and a rerun of the same command resumes it. Its settings are rllm_sweeps/sweeper_settings.py's.
"""

# No `from __future__ import annotations` here: Hydra's plugin scan executes this module
# without registering it in sys.modules, and dataclasses then cannot resolve string annotations.
import dataclasses
from typing import Any, List  # noqa: UP035 (Hydra's Sweeper signature)

from hydra.core.config_store import ConfigStore
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from rllm_sweeps.sweeper_settings import SweeperSettings

ConfigStore.instance().store(group="hydra/sweeper", name="rllm", node=SweeperSettings, provider="rllm-sweeps")


class RllmSweeper(Sweeper):
    def __init__(self, **settings: Any) -> None:
        # Hydra passes the fields of SweeperSettings (less _target_); params arrives as a DictConfig.
        given = SweeperSettings(**settings)
        self.settings = dataclasses.replace(given, params=dict(given.params or {}))
        self.config: DictConfig | None = None
        self.config_loader: Any = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.config_loader = hydra_context.config_loader

    def sweep(self, arguments: List[str]) -> Any:  # noqa: UP006
        from rllm_sweeps.sweep.run import run_sweep

        assert self.config is not None
        return run_sweep(arguments, self.config, self.settings, config_loader=self.config_loader)
