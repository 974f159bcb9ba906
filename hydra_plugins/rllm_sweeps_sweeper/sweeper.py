"""The Hydra Sweeper: plan (every job validated), then run through an asynchronous launcher.

Hydra's own launcher contract is synchronous (a whole batch, then the next), so the sweeper
drives launchers/ directly: `parallel` jobs in flight, the next one handed over the moment
one finishes. The sweep directory explains itself (manifest.json, plan.json, one directory
per job) and a rerun of the same command resumes it.
"""

# No `from __future__ import annotations` here: Hydra's plugin scan executes this module
# without registering it in sys.modules, and dataclasses then cannot resolve string annotations.
from dataclasses import dataclass
from typing import Any, Dict, List, Optional  # noqa: UP035 (OmegaConf's structured configs)

from hydra.core.config_store import ConfigStore
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


@dataclass
class RllmSweeperConf:
    _target_: str = "hydra_plugins.rllm_sweeps_sweeper.sweeper.RllmSweeper"
    dry_run: bool = False  # print the plan (and write plan.json), run nothing
    parallel: Optional[int] = None  # noqa: UP045  jobs in flight; overrides the sweep's `parallel`
    params: Optional[Dict[str, str]] = None  # noqa: UP006,UP045  Hydra's sweeper.params: key -> expression
    rows: int = 20  # job rows a dry run prints
    max_retries: int = 2  # launches again after an infrastructure failure (node lost, OOM kill), per job
    sweep_file: Optional[str] = None  # noqa: UP045  a sweep file by path (train.py: +sweep=PATH.yaml)
    max_jobs: int = 100_000  # a run plans (validates) every job first: more is refused (sweep.planner.MAX_JOBS)


ConfigStore.instance().store(group="hydra/sweeper", name="rllm", node=RllmSweeperConf, provider="rllm-sweeps")


class RllmSweeper(Sweeper):
    def __init__(
        self,
        dry_run: bool,
        parallel: int | None,
        params: dict[str, str] | None,
        rows: int,
        max_retries: int,
        sweep_file: str | None = None,
        max_jobs: int = 100_000,
    ) -> None:
        self.max_jobs = max_jobs
        self.max_retries = max_retries
        self.sweep_file = sweep_file
        self.dry_run = dry_run
        self.parallel = parallel
        self.params = dict(params or {})
        self.rows = rows
        self.config: DictConfig | None = None
        self.config_loader: Any = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.config_loader = hydra_context.config_loader

    def sweep(self, arguments: List[str]) -> Any:  # noqa: UP006
        from rllm_sweeps.sweep.run import SweepOptions, run_sweep

        assert self.config is not None
        options = SweepOptions(
            dry_run=self.dry_run,
            parallel=self.parallel,
            params=self.params,
            rows=self.rows,
            max_retries=self.max_retries,
            sweep_file=self.sweep_file,
            max_jobs=self.max_jobs,
        )
        return run_sweep(arguments, self.config, options, config_loader=self.config_loader)
