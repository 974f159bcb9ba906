"""`hydra.launcher.*` for SLURM: the one schema of the SLURM launcher's settings.

Hydra's `hydra/launcher=slurm` config (hydra_plugins/rllm_sweeps_launcher/slurm.py) is this
dataclass plus Hydra's `_target_`; `launchers/slurm.py` runs with it. Profiles set it in
conf/cluster/*.yaml.
"""

# No `from __future__ import annotations`: OmegaConf reads these annotations as a structured config.
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional  # noqa: UP035 (OmegaConf's structured configs)


@dataclass
class SlurmSettings:
    partition: Optional[str] = None  # noqa: UP045
    account: Optional[str] = None  # noqa: UP045
    qos: Optional[str] = None  # noqa: UP045
    constraint: Optional[str] = None  # noqa: UP045
    setup: List[str] = field(default_factory=list)  # noqa: UP006  shell lines run before each job (module load ...)
    env: Dict[str, str] = field(default_factory=dict)  # noqa: UP006  for the clients (SLURM_CONF) and the job
    # more sbatch flags, as submitit's additional parameters: {"exclude": "node3", "mail-type": "END"}
    additional_parameters: Dict[str, Any] = field(default_factory=dict)  # noqa: UP006
    max_requeues: int = 3  # requeues after a time limit or preemption
    signal_delay_s: int = 90  # SIGUSR2 this long before the time limit: checkpoint and requeue
    poll_interval_s: float = 2.0  # sacct at most this often (all jobs in one call)
    max_array_size: Optional[int] = None  # noqa: UP045  tasks per array; the cluster's MaxArraySize caps it
    submit_interval_s: float = 0.5  # at least this long between two submissions (sbatch calls)
    requeue_grace_s: float = 30.0  # how long TIMEOUT/PREEMPTED must stay in sacct to mean the job ended
