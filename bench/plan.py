"""Time to plan 1,000 jobs: our planner (compose + validate every job) against Hydra's
BasicSweeper composing the same 1,000 jobs (no validation), in one process, one run; then
a run's plan of 100,000 distinct jobs (composed, validated, hashed, streamed to disk and
written as plan.json): its time and the process's peak memory.

    /usr/bin/time -v .venv/bin/python bench/plan.py [--jobs 1000] [--large 100000] [--sample 20]

The sweep: trainer.lr (jobs/8 values) x rollout.n (1,2,4,8) x trainer.mini_batch_size (2,4),
every job valid, every job a distinct SkyRL-native tree (no cache hits to flatter us).

- ours: rllm_sweeps.sweep.plan_sweep(...), which composes each job's config and validates
  it (common keys, SkyRL's native tree with SkyRL's own validate_cfg, the JAX settings)
  and hashes it;
- Hydra: what `python train.py -m ...` does before it launches anything: the master
  config, BasicSweeper.split_arguments, then ConfigLoader.load_sweep_config per job
  (Sweeper.validate_batch_is_legal). It composes; it validates nothing.
- for scale, load_config() (our single-job pipeline) on `--sample` jobs, extrapolated.

Imports and the first composition (SkyRL and JAX load: seconds) are paid once, before
any timing, and reported apart. The peak memory printed is the process's (ru_maxrss, the
figure /usr/bin/time -v reports as "Maximum resident set size"), imports included.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path


def sweep_args(jobs: int) -> list[str]:
    n_lr = max(1, jobs // 8)
    lrs = ",".join(f"{(i + 1) * 1e-5:.6g}" for i in range(n_lr))
    return [f"trainer.lr={lrs}", "rollout.n=1,2,4,8", "trainer.mini_batch_size=2,4"]


def time_ours(args: list[str]) -> tuple[float, int]:
    from rllm_sweeps.sweep import plan_sweep

    start = time.perf_counter()
    plan = plan_sweep(args)
    return time.perf_counter() - start, plan.totals.validated


def time_large(args: list[str]) -> tuple[float, float, int, int]:
    """A run's plan (no job limit, no size limit) written as plan.json: seconds to plan, to write,
    jobs validated, plan.json's bytes."""
    from rllm_sweeps.sweep import plan_sweep

    start = time.perf_counter()
    plan = plan_sweep(args, max_jobs=None, progress=lambda n, total, s: print(f"  {n:,} of {total:,} ({s:.0f} s)"))
    planned = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        path = plan.write(Path(tmp))
        written = time.perf_counter() - start
        size = path.stat().st_size
    return planned, written, plan.totals.validated, size


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def time_hydra(args: list[str]) -> tuple[float, int]:
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra._internal.utils import create_config_search_path
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.types import RunMode

    from rllm_sweeps.config.compose import CONF_DIR, CONFIG_NAME

    start = time.perf_counter()
    loader = ConfigLoaderImpl(config_search_path=create_config_search_path(str(CONF_DIR)))
    master = loader.load_configuration(config_name=CONFIG_NAME, overrides=args, run_mode=RunMode.MULTIRUN)
    parser = OverridesParser.create(config_loader=loader)
    (batch,) = BasicSweeper.split_arguments(parser.parse_overrides(args), max_batch_size=None)
    for overrides in batch:
        loader.load_sweep_config(master_config=master, sweep_overrides=list(overrides))
    return time.perf_counter() - start, len(batch)


def time_load_config(args: list[str], sample: int) -> float:
    """Seconds per job of load_config() on the first `sample` jobs of the sweep."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from rllm_sweeps.config.load import load_config

    (batch,) = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(args), max_batch_size=None)
    start = time.perf_counter()
    for overrides in batch[:sample]:
        load_config(overrides, notify=lambda _: None)
    return (time.perf_counter() - start) / max(1, min(sample, len(batch)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--sample", type=int, default=20, help="jobs timed with load_config() (0 = skip)")
    ap.add_argument("--large", type=int, default=100_000, help="jobs of the large plan (0 = skip)")
    opts = ap.parse_args()
    args = sweep_args(opts.jobs)

    t0 = time.perf_counter()
    from rllm_sweeps.config.native import quiet_skyrl, register
    from rllm_sweeps.sweep import plan_sweep

    register()
    with quiet_skyrl():
        plan_sweep(["trainer.lr=1e-4"])  # imports SkyRL/JAX, composes once
    warmup = time.perf_counter() - t0
    print(f"warm-up (imports, first composition): {warmup:.1f} s, not counted below; peak memory {peak_mb():.0f} MB")

    ours, n_ours = time_ours(args)
    print(f"ours:  {n_ours} jobs composed + validated + hashed in {ours:.2f} s ({ours / n_ours * 1e3:.2f} ms/job)")
    hydra, n_hydra = time_hydra(args)
    print(
        f"hydra: {n_hydra} jobs composed (BasicSweeper, no validation) in {hydra:.2f} s "
        f"({hydra / n_hydra * 1e3:.1f} ms/job)"
    )
    print(f"ratio: Hydra / ours = {hydra / ours:.1f}x")
    if opts.sample:
        per_job = time_load_config(args, opts.sample)
        print(
            f"load_config() per job (sample of {opts.sample}): {per_job * 1e3:.0f} ms "
            f"-> {per_job * n_ours:.0f} s for {n_ours} jobs"
        )
    if opts.large:
        cpu = time.process_time()
        planned, written, n, size = time_large(sweep_args(opts.large))
        cpu = time.process_time() - cpu
        print(
            f"large: {n:,} jobs composed + validated + hashed in {planned:.1f} s ({planned / n * 1e3:.2f} ms/job; "
            f"CPU {cpu:.1f} s, {cpu / n * 1e3:.2f} ms/job), plan.json ({size / 1e6:.0f} MB) written in {written:.1f} s"
        )
        print(f"peak memory of the process (ru_maxrss): {peak_mb():.0f} MB")


if __name__ == "__main__":
    main()
