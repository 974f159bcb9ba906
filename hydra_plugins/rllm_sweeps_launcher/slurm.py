"""`hydra/launcher=slurm`: SLURM settings read by the rllm-sweeps sweeper.

The sweeper launches jobs itself, asynchronously (launchers/slurm.py); Hydra's launcher
contract (a whole batch at a time) is not used, so this class only holds the settings.
"""

# No `from __future__ import annotations`: Hydra's plugin scan executes this module without
# registering it in sys.modules, and dataclasses then cannot resolve string annotations.
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional  # noqa: UP035 (OmegaConf's structured configs)

from hydra.core.config_store import ConfigStore
from hydra.plugins.launcher import Launcher


@dataclass
class SlurmLauncherConf:
    _target_: str = "hydra_plugins.rllm_sweeps_launcher.slurm.SlurmHydraLauncher"
    partition: Optional[str] = None  # noqa: UP045
    account: Optional[str] = None  # noqa: UP045
    qos: Optional[str] = None  # noqa: UP045
    constraint: Optional[str] = None  # noqa: UP045
    setup: List[str] = field(default_factory=list)  # noqa: UP006  shell lines before each job
    env: Dict[str, str] = field(default_factory=dict)  # noqa: UP006  e.g. SLURM_CONF
    max_requeues: int = 3  # requeues after a time limit or preemption
    signal_delay_s: int = 90  # SIGUSR2 this long before the time limit: checkpoint and requeue
    poll_interval_s: float = 2.0  # sacct at most this often
    max_array_size: Optional[int] = None  # noqa: UP045  tasks per array (the cluster's MaxArraySize caps it)
    submit_interval_s: float = 0.5  # at least this long between two sbatch calls
    requeue_grace_s: float = 30.0  # TIMEOUT/PREEMPTED must stay this long to mean the job ended


ConfigStore.instance().store(group="hydra/launcher", name="slurm", node=SlurmLauncherConf, provider="rllm-sweeps")


class SlurmHydraLauncher(Launcher):
    def __init__(self, **settings: Any) -> None:
        self.settings = settings

    def setup(self, **kwargs: Any) -> None:
        pass

    def launch(self, job_overrides: Any, initial_job_idx: int) -> Any:
        raise RuntimeError("hydra/launcher=slurm is driven by the rllm sweeper (hydra/sweeper=rllm, the default)")
