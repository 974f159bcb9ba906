"""``python -m rllm_sweeps.local_slurm up|down|status|env``: the local cluster from a shell."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rllm_sweeps.local_slurm import current
from rllm_sweeps.local_slurm.cluster import LocalSlurm
from rllm_sweeps.local_slurm.errors import LocalSlurmError
from rllm_sweeps.local_slurm.settings import DEFAULT_BASE, DEFAULT_PORT_BASE


def _print_env(cluster: LocalSlurm) -> None:
    for k, v in cluster.env().items():
        print(f"export {k}={v}")


def _print_status(cluster: LocalSlurm) -> int:
    st = cluster.status()
    print(f"state:  {st['state']}")
    print(f"base:   {st['base']}")
    if st["settings"]:
        print(f"nodes:  {st['settings']['nodes']} (netns={st['settings']['netns']}; as last brought up)")
    for name, pid in st["daemons"].items():
        print(f"  {name:12s} {pid if pid else '-'}")
    for node, state in st["nodes"].items():
        print(f"  node {node}: {state}")
    print(f"logs:   {st['logs']}")
    for k, v in st["env"].items():
        print(f"export {k}={v}")
    if st["client_prefix"]:
        print(f"run clients under: {' '.join(st['client_prefix'])}")
    return 0 if st["state"] == "up" else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m rllm_sweeps.local_slurm",
        description="A real local SLURM cluster (slurmctld, slurmd, slurmdbd+MariaDB, munge).",
    )
    p.add_argument("command", choices=["up", "down", "status", "env"])
    p.add_argument("--base", type=Path, default=DEFAULT_BASE, help=f"state dir [{DEFAULT_BASE}]")
    p.add_argument("--nodes", type=int, default=1, help="number of slurmd nodes (up) [1]")
    p.add_argument("--netns", action="store_true", help="one network namespace per node (up; needs root)")
    p.add_argument("--port-base", type=int, default=DEFAULT_PORT_BASE, help="ports (up)")
    p.add_argument("--timeout", type=float, default=60, help="seconds per wait [60]")
    p.add_argument("--purge", action="store_true", help="down: also delete the base dir")
    p.add_argument("-q", "--quiet", action="store_true")
    a = p.parse_args(argv)
    cluster = LocalSlurm(a.base, nodes=a.nodes, netns=a.netns, port_base=a.port_base, verbose=not a.quiet)
    try:
        if a.command == "up":
            cluster.up(timeout=a.timeout)
            _print_env(cluster)
            # cluster=local finds this cluster by itself (no variable to export for train.py)
            print(f"# train.py ... cluster=local now uses this cluster (recorded in {current.record(a.base)})")
            if cluster.client_prefix():
                print(f"# run clients under: {' '.join(cluster.client_prefix())}")
        elif a.command == "down":
            cluster.down(timeout=a.timeout, purge=a.purge)
            current.forget(a.base)
        elif a.command == "env":
            _print_env(cluster)
            if cluster.client_prefix():
                print(f"run clients under: {' '.join(cluster.client_prefix())}", file=sys.stderr)
        else:
            return _print_status(cluster)
    except LocalSlurmError as e:
        print(f"local_slurm: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
