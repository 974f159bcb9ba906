"""Which launcher `hydra/launcher` chose, read from its composed `hydra.launcher` node; anything this
sweeper does not drive is refused, never run somewhere else.

    choose(node, name) -> LauncherChoice    # raises LauncherRefused (one line) for any other launcher

Chosen by the node's type or `_target_`, not its name, so users' own `conf/hydra/launcher/*.yaml`
that `defaults:` from one of these is that launcher:
- nothing chosen (Hydra's default, `basic`, not typed) or `local` (launchers/local_settings.py) -> local
  processes;
- `slurm` (launchers/slurm_settings.py) -> SLURM;
- `ray_cluster` (launchers/ray_cluster_settings.py) -> an existing Ray cluster, through Ray's job API;
- hydra-submitit-launcher's `submitit_slurm` / `submitit_local` -> SLURM / local processes, each
  field mapped or refused by launchers/submitit_fields.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from launchers.local_settings import LocalSettings
from launchers.ray_cluster_settings import RayClusterSettings
from launchers.slurm_settings import SlurmSettings
from launchers.submitit_fields import FIELDS, LOCAL_TARGET, SLURM_TARGET, translate
from rllm_sweeps.problems import did_you_mean

HYDRA_DEFAULT_TARGET = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"  # hydra/launcher=basic
DRIVEN = ("local", "slurm", "ray_cluster", "submitit_slurm", "submitit_local")  # the launchers this sweeper drives


class LauncherRefused(Exception):
    """A `hydra/launcher` this sweeper does not drive, or one of its fields it cannot honour."""


@dataclass(frozen=True)
class LauncherChoice:
    name: str  # hydra/launcher=NAME as chosen (a user's own config's name included)
    slurm: SlurmSettings | None  # None: local processes
    resources: dict[str, Any]  # resources.KEY -> value every job gets from the launcher's fields
    parallel: int | None  # jobs in flight the launcher's fields ask for (array_parallelism)
    ray: RayClusterSettings | None = None  # an existing Ray cluster (then slurm is None)

    def where(self) -> str:
        """Where the jobs run, for the dry run: 'local processes', 'SLURM partition gpu'."""
        if self.ray is not None:
            return f"the Ray cluster at {self.ray.address} (Ray's job API)"
        if self.slurm is None:
            return "local processes on this machine"
        partition = self.slurm.partition
        return f"SLURM partition {partition}" if partition else "SLURM (the cluster's default partition)"


def not_driven(name: str, why: str) -> str:
    """The one line that refuses `hydra/launcher=NAME`: why, the launchers driven, the nearest."""
    return (
        f"hydra/launcher={name}: {why}; this sweeper runs jobs only through {', '.join(DRIVEN)} (or your own "
        f"hydra/launcher config built on one of them; docs/SLURM.md){did_you_mean(name, DRIVEN)}; nothing was "
        "planned or run"
    )


def choose(node: DictConfig, name: str, chosen: bool = True) -> LauncherChoice:
    """`name`: the `hydra/launcher` choice; chosen: whether the command line chose it (Hydra's own
    default, `basic`, not chosen: the local launcher)."""
    kind = OmegaConf.get_type(node)
    if isinstance(kind, type) and issubclass(kind, SlurmSettings):
        values = OmegaConf.to_container(node, resolve=True)
        assert isinstance(values, dict)
        settings = SlurmSettings(**{f.name: values[f.name] for f in dataclasses.fields(SlurmSettings)})
        return LauncherChoice(name, settings, {}, None)
    if isinstance(kind, type) and issubclass(kind, RayClusterSettings):
        values = OmegaConf.to_container(node, resolve=True)
        assert isinstance(values, dict)
        ray = RayClusterSettings(**{f.name: values[f.name] for f in dataclasses.fields(RayClusterSettings)})
        if not ray.address:
            raise LauncherRefused(
                f"hydra/launcher={name}: hydra.launcher.address is not set: give the Ray dashboard's address, "
                "e.g. hydra.launcher.address=http://HEAD:8265 (docs/RAY.md)"
            )
        return LauncherChoice(name, None, {}, None, ray)
    if isinstance(kind, type) and issubclass(kind, LocalSettings):
        return LauncherChoice(name, None, {}, None)
    target = node.get("_target_")
    if target == HYDRA_DEFAULT_TARGET and not chosen:
        return LauncherChoice("local", None, {}, None)
    if target not in (SLURM_TARGET, LOCAL_TARGET):
        shown = f" (its _target_ is {target})" if target else ""
        raise LauncherRefused(not_driven(name, f"is not a launcher this sweeper drives{shown}"))
    slurm = target == SLURM_TARGET
    translation = translate(submitit_values(node), slurm)
    if translation.problems:
        raise LauncherRefused(
            f"hydra/launcher={name}: " + "; ".join(translation.problems) + " (docs/SLURM.md, "
            '"Coming from hydra-submitit-launcher")'
        )
    settings = dataclasses.replace(SlurmSettings(), **translation.settings) if slurm else None
    return LauncherChoice(name, settings, translation.resources, translation.parallel)


def submitit_values(node: DictConfig) -> dict[str, Any]:
    """A submitit_* node's values, resolved, except where a field still has its default interpolation
    (`${hydra.sweep.dir}/.submitit/%j`): that is 1.2's default, not a value the user set."""
    raw = OmegaConf.to_container(node, resolve=False)
    assert isinstance(raw, dict)
    defaults = {f.name: f.default for f in FIELDS}
    values = {}
    for key, value in raw.items():
        if isinstance(value, str) and "${" in value and value == defaults.get(str(key)):
            values[str(key)] = value
        else:
            resolved = node[key]
            values[str(key)] = (
                OmegaConf.to_container(resolved, resolve=True) if OmegaConf.is_config(resolved) else resolved
            )
    return values
