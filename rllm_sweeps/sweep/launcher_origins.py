"""Where each launcher value came from, for `--cfg job` and `--cfg hydra`: hydra-submitit-launcher's
fields (launchers/submitit_fields.py) set every job's resources and the SLURM launcher's settings
from outside the job config, so both printouts say, line by line, what set what.

    shown = launcher_resources(overrides)              # what a sweep's jobs get from hydra/launcher's fields
    text = with_resource_sources(job_yaml, shown)      # --cfg job: each resources line with `# <its source>`
    text = with_field_destinations(hydra_yaml, node)   # --cfg hydra/all: each set field with `# -> what it becomes`
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from omegaconf import DictConfig

from launchers.choice import submitit_values
from launchers.submitit_fields import FIELDS, LOCAL_TARGET, RESOURCE_FIELD, SLURM_TARGET, is_set, meaning
from rllm_sweeps.config.compose import compose_config
from rllm_sweeps.override_text import override_key
from rllm_sweeps.sweep.launch_choice import launcher_choice, launcher_resource_overrides


@dataclass(frozen=True)
class LauncherResources:
    """The resources a sweep's jobs get from `hydra/launcher`'s fields, and where each came from."""

    launcher: str  # hydra/launcher=NAME as chosen
    overrides: list[str]  # resources.KEY=VALUE the launcher's fields add to every job's command line
    sources: dict[str, str]  # resources KEY -> 'hydra.launcher.FIELD' or 'command line'


def launcher_resources(overrides: Iterable[str]) -> LauncherResources:
    """Raises LauncherRefused where a field and the command line disagree (as the sweep would)."""
    overrides = list(overrides)
    choice = launcher_choice(compose_config(overrides, with_hydra=True))
    added = launcher_resource_overrides(choice, overrides)
    sources = {key: f"hydra.launcher.{RESOURCE_FIELD[key]}" for key in choice.resources}
    if sources:  # the command line's own resources beside them, so every set value is accounted for
        for o in overrides:
            if (key := override_key(o)).startswith("resources."):
                sources.setdefault(key.removeprefix("resources."), "command line")
    return LauncherResources(choice.name, added, sources)


def with_resource_sources(text: str, shown: LauncherResources) -> str:
    """`--cfg job`'s YAML with each resources line the launcher or the command line set marked with
    its source, under one line saying these are the values a sweep's jobs (-m) get."""
    if not any(v.startswith("hydra.launcher.") for v in shown.sources.values()):
        return text
    lines, section = [], ""
    for line in text.splitlines():
        if not line.startswith(" "):
            section = line.rstrip(":")
        key = line.strip().split(":", 1)[0]
        if section == "resources" and line.startswith("  ") and not line.startswith("   ") and key in shown.sources:
            line = f"{line}  # {shown.sources[key]}"
        lines.append(line)
    head = (
        f"# resources as each job of a sweep (-m) with hydra/launcher={shown.launcher} gets them: "
        'a value\'s source is noted on its line (docs/SLURM.md, "Coming from hydra-submitit-launcher")'
    )
    return "\n".join([head, *lines]) + "\n"


def with_field_destinations(text: str, launcher: DictConfig, package: str | None = None) -> str:
    """Hydra's own `--cfg hydra`/`--cfg all` YAML (`--package`: as printed under it) with each
    hydra-submitit-launcher field set away from 1.2's default marked with what it becomes here."""
    if launcher.get("_target_") not in (SLURM_TARGET, LOCAL_TARGET):
        return text
    # The launcher's block: under `hydra:` and `launcher:`, or the whole text for --package hydra.launcher.
    header = {"hydra": "launcher:", "hydra.launcher": None}.get(package or "", "  launcher:")
    indent = " " * (len(header) - len(header.lstrip()) + 2) if header is not None else ""
    values = submitit_values(launcher)
    fields = {f.name: f for f in FIELDS if f.name in values}
    out, inside = [], header is None
    for line in text.splitlines():
        if header is not None and line == header:
            inside = True
        elif header is not None and inside and not line.startswith(indent):
            inside = False
        key = line[len(indent) :].split(":", 1)[0]
        if inside and line.startswith(indent) and not line[len(indent) :].startswith(" ") and key in fields:
            if is_set(fields[key], values[key]):
                line = f"{line}  # -> {meaning(fields[key]).replace('`', '')}"
        out.append(line)
    return "\n".join(out) + "\n"


__all__ = ["LauncherResources", "launcher_resources", "with_field_destinations", "with_resource_sources"]
