"""Runtime pieces a training job needs around its engine: its own Ray cluster.

- ``job_ray``: the job's Ray cluster on every node of its allocation (what ``job/train.py`` and the
  SLURM task use), and its record ``ray.json``.
- ``nodes``: one Ray node we own (start, wait until it answers, stop exactly its processes).
- ``commands``: the ``ray start`` argv of a head or worker node.
- ``spec``: what a node is given (``RayClusterSpec``); ``ports``: its locked port block.
- ``gcs``: queries to a cluster's GCS (alive nodes, reachability, address, driver disconnect).
- ``ray_env``: the environment variables Ray reads that a job sets; ``ray_private``: Ray's private API,
  the one module that uses it; ``auth``: the cluster's token; ``listeners``: the ports a node's
  processes listen on; ``node_role``: which part of the job this node plays.
- ``processes``: a node's processes from /proc; ``signals``: SIGTERM as an exception.
- ``slurm_env``: this node's CPUs/GPUs, hosts and attempt under SLURM; ``errors``: RayClusterError.

Nothing is imported here, so ``python -m rllm_sweeps.runtime.job_ray`` loads its module once.
"""
