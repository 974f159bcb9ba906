"""A real, local SLURM cluster for development, tests and CI.

Runs slurmctld, one or more slurmd, munged, slurmdbd and a private MariaDB on
this host, as root, without systemd. All state (munge key and socket,
slurm.conf, gres.conf, slurmdbd.conf, the MariaDB datadir, spool, logs, pid
files, fake GPU device nodes) lives under one short base directory.

CLI::

    python -m rllm_sweeps.local_slurm up     [--base DIR] [--nodes N] [--netns] [--port-base P]
    python -m rllm_sweeps.local_slurm down   [--base DIR] [--purge]
    python -m rllm_sweeps.local_slurm status [--base DIR]
    python -m rllm_sweeps.local_slurm env    [--base DIR]   # eval "$(... env)"

Python API::

    cluster = LocalSlurm(Path("/tmp/rllm-slurm"), nodes=1, netns=False)
    cluster.up()                 # idempotent; verifies health when already up
    os.environ.update(cluster.env())   # SLURM_CONF for sbatch/sacct/submitit
    cluster.down()               # idempotent

With ``netns=True`` every node runs in its own network namespace (own
hostname ``nN`` and address on a private /24 that exists only inside the
namespaces created here), joined by veth pairs to a bridge in a controller
namespace where slurmctld, slurmdbd and MariaDB run. Clients (sbatch, squeue,
sacct, python using submitit) must then run inside the controller namespace:
prefix commands with :meth:`LocalSlurm.client_prefix` (``nsenter --net=...``).

Install the packages first with ``launchers/install_slurm_deps.sh``.

Modules: ``settings`` (what a cluster is: nodes, ports, addresses), ``layout`` (its paths),
``config`` (the text of every configuration, pure), ``processes`` (programs, /proc, waits),
``netns`` (network namespaces), ``client`` (SLURM's client programs pointed at the cluster),
``daemons`` (starting each daemon), ``cluster`` (:class:`LocalSlurm`: up, down, status),
``__main__`` (the CLI).
"""

from rllm_sweeps.local_slurm.cluster import LocalSlurm
from rllm_sweeps.local_slurm.errors import LocalSlurmError
from rllm_sweeps.local_slurm.processes import missing_binaries, pid_alive
from rllm_sweeps.local_slurm.settings import DEFAULT_BASE, DEFAULT_PORT_BASE, SUBNET, ClusterSettings

__all__ = [
    "DEFAULT_BASE",
    "DEFAULT_PORT_BASE",
    "SUBNET",
    "ClusterSettings",
    "LocalSlurm",
    "LocalSlurmError",
    "missing_binaries",
    "pid_alive",
]
