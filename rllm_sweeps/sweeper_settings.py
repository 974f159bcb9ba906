"""The sweeper's settings (`hydra.sweeper.*`): one dataclass, their one definition.

Hydra's ConfigStore registers it as `hydra/sweeper=rllm` (hydra_plugins/rllm_sweeps_sweeper), which
makes its fields the keys `hydra.sweeper.KEY=VALUE` accepts and their defaults; the sweeper hands the
same record to the run (sweep/run.py). The sweep's own settings (`sweep.*`: method, parallel, ...)
are the sweep node's (conf/config.yaml), not these.
"""

# No `from __future__ import annotations`: OmegaConf reads the field types of a structured config,
# and the typing names (Optional, Dict) are the ones it understands.
from dataclasses import dataclass, field
from typing import Dict, Optional  # noqa: UP035 (OmegaConf's structured configs)

# A run composes and validates every job before it launches any (about 0.2 ms a job, and each job
# is a training run): larger grids are refused with how to sample them instead.
MAX_JOBS = 100_000


@dataclass
class SweeperSettings:
    # The class Hydra instantiates with the other fields (Hydra's config convention).
    _target_: str = "hydra_plugins.rllm_sweeps_sweeper.sweeper.RllmSweeper"
    dry_run: bool = False  # print the plan (and write plan.json), run nothing
    parallel: Optional[int] = None  # noqa: UP045  jobs in flight; overrides the sweep's `parallel`
    # Hydra's sweeper.params: key -> expression, from the command line or a config (an experiment
    # overlay's `hydra: sweeper: params:`); an empty dict, not None, so that a dict merges into it.
    params: Dict[str, str] = field(default_factory=dict)  # noqa: UP006
    rows: int = 20  # job rows a dry run prints
    max_retries: int = 2  # launches again after an infrastructure failure (node lost, OOM kill), per job
    sweep_file: Optional[str] = None  # noqa: UP045  a sweep file by path (train.py: +sweep=PATH.yaml)
    max_jobs: int = MAX_JOBS  # a run plans (validates) every job first: more is refused


__all__ = ["MAX_JOBS", "SweeperSettings"]
