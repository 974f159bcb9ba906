"""Chaos at full size on the real 2-node local SLURM cluster: what a sweep loses when the cluster
misbehaves (issue: faults lose nothing).

    .venv/bin/python bench/chaos.py [--jobs 16] [--steps 6] [--parallel 2] [--requeue-share 0.3]

A sweep of `--jobs` jobs through the SLURM launcher; while it runs, about `--requeue-share` of
them are requeued (`scontrol requeue`) at random moments of their life, one node's daemon is
killed while a job trains (SLURM declares the node dead: NODE_FAIL), and the sweeper is SIGKILLed
once and run again. Prints: jobs completed / total, steps lost, steps repeated, results lost,
leftover processes, the problems found, and the wall time. Needs root (it brings the cluster up).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # the chaos driver is shared with the chaos test

from chaos import ChaosSweep  # noqa: E402
from slurm_fixtures import SLURM_NETNS_BASE, LocalSlurm, slurm_unavailable_reason  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--requeue-share", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if reason := slurm_unavailable_reason(netns=True):
        print(f"bench/chaos.py: {reason}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    cluster = LocalSlurm(SLURM_NETNS_BASE, nodes=2, netns=True)
    was_up = LocalSlurm(SLURM_NETNS_BASE, verbose=False).is_up()
    cluster.up()
    work = Path(tempfile.mkdtemp(prefix="rllm-chaos-"))
    chaos = ChaosSweep(cluster, work / "sweep", jobs=args.jobs, steps=args.steps, parallel=args.parallel)
    started = time.monotonic()
    requeued: set[Path] = set()
    to_requeue = max(1, round(args.requeue_share * args.jobs))
    node_lost = sweeper_killed = False
    try:
        chaos.start()
        while chaos.sweeper.poll() is None:
            running = chaos.running()
            candidates = [d for d in running if d not in requeued]
            if candidates and len(requeued) < to_requeue and rng.random() < 0.15:
                victim = rng.choice(candidates)
                chaos.requeue(victim)
                requeued.add(victim)
            if not sweeper_killed and len(requeued) >= to_requeue // 2 and running:
                chaos.kill_sweeper_and_rerun()
                sweeper_killed = True
            begun = [d for d in running if chaos.training_now(d) and len(chaos.trained_steps(d)) == 1]
            training = [(d, running[d][1]) for d in begun]
            if not node_lost and sweeper_killed and training:
                victim, node = training[0]
                chaos.slow_down(1.0)  # it must still train when SLURM declares its node dead
                chaos.kill_node_daemon(node)
                node_lost = True
                chaos.wait_for(lambda d=victim: "node failure" in chaos.result_text(d), "the node failure", 240)
                chaos.slow_down(None)
                chaos.restart_node_daemons()
            time.sleep(1)
        problems = chaos.check(args.parallel)
        figures = chaos.figures()
    finally:
        if chaos.sweeper is not None and chaos.sweeper.poll() is None:
            chaos.sweeper.kill()
        cluster.restart_slurmds()
        if not was_up:
            cluster.down()
    print("\n".join(chaos.events))
    print(f"sweeper exit code: {chaos.sweeper.returncode}")
    print(f"requeued: {len(requeued)} of {args.jobs} jobs; node lost: {node_lost}; sweeper killed: {sweeper_killed}")
    print(f"jobs completed / total: {figures['jobs_completed']} / {figures['jobs']}")
    for key in ("steps_lost", "steps_repeated", "results_lost", "leftover_processes"):
        print(f"{key.replace('_', ' ')}: {figures[key]}")
    print(f"problems: {problems or 'none'}")
    print(f"wall time: {time.monotonic() - started:.0f} s  (sweep directory: {chaos.sweep_dir})")
    return 0 if not problems and chaos.sweeper.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
