"""Which part of a job this process plays, decided by its node's rank in the allocation.

Every node of a SLURM allocation runs the same command, ``python -m rllm_sweeps ...`` (the training
app, as ``python train.py ...``; submitit starts it once per node, ``launchers/slurm_task.py``).
Rank 0 trains; when the job has several nodes it runs the Ray head there, and every other rank runs
a Ray worker node that joins it and leaves when rank 0's attempt is over (``job_ray.py``). Outside
SLURM: rank 0 of one node.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from rllm_sweeps.override_text import set_value

JOB_DIR_OVERRIDE = "hydra.run.dir"  # where the nodes of a job find each other (ray.json)
MULTIRUN_FLAGS = ("-m", "--multirun")  # Hydra's: train.py runs the sweeper, not a job


@dataclasses.dataclass(frozen=True)
class NodeRole:
    rank: int  # this node's index in the allocation
    nodes: int

    @classmethod
    def of_this_process(cls) -> NodeRole:
        if "SLURM_JOB_ID" not in os.environ:  # not in a SLURM job: skip submitit's import (start-up)
            return cls(rank=0, nodes=1)
        # submitit's reading of SLURM's variables (SLURM_NODEID, SLURM_JOB_NUM_NODES).
        from submitit.slurm.slurm import SlurmJobEnvironment

        env = SlurmJobEnvironment()
        return cls(rank=env.node, nodes=env.num_nodes)


class NoJobDir(ValueError):
    """A job on several nodes was started without its directory on the command line."""


def job_dir_of(argv: Sequence[str]) -> Path | None:
    """The job directory given on train.py's command line (`hydra.run.dir=DIR`), if any."""
    for arg in argv:
        if (value := set_value(arg, JOB_DIR_OVERRIDE)) is not None:
            return Path(value)
    return None


def run_node(argv: Sequence[str], train: Callable[[], object], role: NodeRole | None = None) -> None:
    """train.py on this node: rank 0 runs `train`; rank k > 0 serves the job's Ray cluster until
    rank 0's attempt is over (exits with the worker's code)."""
    role = role or NodeRole.of_this_process()
    if role.nodes == 1 or any(arg in MULTIRUN_FLAGS for arg in argv):
        train()  # one node, or a sweeper (which may run inside a multi-node allocation): not a job's node
        return
    job_dir = job_dir_of(argv)
    if job_dir is None:
        raise NoJobDir(
            f"a job on {role.nodes} nodes needs its directory on the command line "
            f"({JOB_DIR_OVERRIDE}=DIR, on a filesystem every node sees): its nodes find each other there"
        )
    from rllm_sweeps.runtime import job_ray

    if role.rank > 0:
        from rllm_sweeps.stop import Stop

        raise Stop(job_ray.run_worker(job_dir, role.rank))  # a worker node's exit is its Ray node's
    try:
        train()
    finally:
        job_ray.mark_attempt_over(job_dir)  # also when the job failed before its Ray head was up
