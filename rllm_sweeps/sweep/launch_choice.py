"""The sweep's launcher, from `hydra/launcher`, before anything is planned (launchers/choice.py
chooses), and what its fields ask of the sweep: resources every job gets, jobs in flight.

    choice = launcher_choice(hydra_cfg)                  # LauncherRefused: not a launcher this sweeper drives
    request = with_launcher_resources(request, choice)   # hydra.launcher.timeout_min=240 -> resources.time_min=240
    parallel = launcher_parallel(settings, choice)       # hydra.launcher.array_parallelism -> jobs in flight
    launcher = make_launcher(choice)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from omegaconf import DictConfig

from launchers.base import Launcher
from launchers.choice import LauncherChoice, LauncherRefused, choose
from launchers.submitit_fields import RESOURCE_FIELD
from rllm_sweeps.config.override_values import format_value, parse_value
from rllm_sweeps.override_text import override_key, set_value
from rllm_sweeps.records.resources import Resources
from rllm_sweeps.sweep.plan import Plan
from rllm_sweeps.sweep.spec import SweepRequest
from rllm_sweeps.sweeper_settings import SweeperSettings


def launcher_choice(hydra_cfg: DictConfig) -> LauncherChoice:
    """The launcher `hydra/launcher` chose; Hydra's own default (`basic`) where nothing chose one
    is the local launcher, `hydra/launcher=basic` typed is refused."""
    name = str(hydra_cfg.hydra.runtime.choices.get("hydra/launcher"))
    typed = any(override_key(o) == "hydra/launcher" for o in hydra_cfg.hydra.overrides.hydra)
    return choose(hydra_cfg.hydra.launcher, name, chosen=typed)


def with_launcher_resources(request: SweepRequest, choice: LauncherChoice) -> SweepRequest:
    """Every job's overrides with the resources the launcher's fields set (as if typed on the
    command line); a resource also set there, or swept, to another value is refused naming both."""
    added = launcher_resource_overrides(choice, request.base_overrides, request.spec.keys)
    return dataclasses.replace(request, base_overrides=(*request.base_overrides, *added))


def launcher_resource_overrides(
    choice: LauncherChoice, overrides: Iterable[str], swept: Iterable[str] = ()
) -> list[str]:
    """`resources.KEY=VALUE` for each resource the launcher's fields set that the command line does
    not (`hydra.launcher.timeout_min=240` -> `resources.time_min=240`); the same resource swept, or
    given another value, is refused naming both."""
    overrides, swept = list(overrides), set(swept)
    added = []
    for key, value in choice.resources.items():
        resource = f"resources.{key}"
        both = f"hydra.launcher.{RESOURCE_FIELD[key]}={format_value(value)} and {resource}"
        if resource in swept:
            raise LauncherRefused(f"{both} (swept) both set every job's {key}: keep one")
        given = [v for o in overrides if (v := set_value(o, resource)) is not None]
        if given and parse_value(given[-1]) != value:
            raise LauncherRefused(f"{both}={given[-1]} set different values: keep one")
        if not given:
            added.append(f"{resource}={format_value(value)}")
    return added


def launcher_parallel(settings: SweeperSettings, choice: LauncherChoice) -> int | None:
    """Jobs in flight as the command says (hydra.sweeper.parallel, else the launcher's
    array_parallelism), None for the sweep spec's own; both set to different values is refused."""
    if choice.parallel is None:
        return settings.parallel
    if settings.parallel is not None and settings.parallel != choice.parallel:
        raise LauncherRefused(
            f"hydra.launcher.array_parallelism={choice.parallel} and hydra.sweeper.parallel={settings.parallel} "
            "both set the jobs in flight to different values: keep one"
        )
    return choice.parallel


def make_launcher(choice: LauncherChoice) -> Launcher:
    """The launcher the choice names: SLURM (submitit), a Ray cluster (its job API) or local processes."""
    if choice.ray is not None:
        from launchers.ray_cluster import RayClusterLauncher

        return RayClusterLauncher(choice.ray)
    if choice.slurm is not None:
        from launchers.slurm import SlurmLauncher

        return SlurmLauncher(choice.slurm)
    from launchers.local import LocalLauncher

    return LocalLauncher()


def launch_lines(choice: LauncherChoice, launcher: Launcher, plan: Plan, parallel: int) -> list[str]:
    """The dry run's account of the launch: which launcher, where, how many at once, and per job
    shape its resources and what the scheduler is asked (SLURM: the sbatch flags)."""
    at_once = f"{parallel} job{'s' if parallel > 1 else ''} at a time"
    lines = [f"Launcher: hydra/launcher={choice.name} -> {choice.where()}, {at_once}"]
    counts: dict[Resources, int] = {}
    for job in plan.jobs:
        if job.resources is not None:
            counts[job.resources] = counts.get(job.resources, 0) + 1
    for res, count in counts.items():
        size = (
            f"{res.nodes} node{'s' if res.nodes > 1 else ''} x {res.gpus_per_node} GPUs, "
            f"{res.cpus_per_task} CPUs, {res.mem_gb:g} GB, {res.time_min} min"
        )
        flags = " ".join(launcher.flags(res))
        asked = f": {launcher.flags_label} {flags}" if flags else ""
        lines.append(f"  {count} job{'s' if count > 1 else ''} x ({size}){asked}")
    return lines
