"""Command-line overrides: which are config-group choices, and do their keys exist?

Hydra stops at the first unknown key with a message about struct mode; users need
every bad key at once, each with the key it probably meant.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, Override, OverrideType
from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.config.paths import CONF_PACKAGE, is_sweep_file_path, package_dir
from rllm_sweeps.config.private_api import child_node, config_repository
from rllm_sweeps.config.source import ConfigSource, current_source
from rllm_sweeps.native_keys import SKYRL_TRAIN_PREFIX
from rllm_sweeps.problems import ConfigIssue, did_you_mean, did_you_mean_key


@dataclass(frozen=True)
class ParsedOverrides:
    groups: list[Override]  # config-group choices: task=gsm8k, hydra/launcher=slurm, +sweep=x
    values: list[Override]  # key=value (possibly a sweep: key=a,b)
    hydra: list[Override]  # hydra.* keys: Hydra checks those itself

    @property
    def explicit_keys(self) -> set[str]:
        """Keys the user set by name (reconciliation treats these as deliberate)."""
        return {o.key_or_group for o in self.values}


@lru_cache(maxsize=16)
def _repository(source: ConfigSource) -> Any:
    from rllm_sweeps.config import native

    native.register()  # skyrl_native/planted, in Hydra's ConfigStore
    return config_repository(source, [])


def config_groups(source: ConfigSource | None = None) -> set[str]:
    """The config groups Hydra finds on the search path (conf/'s, the user's, the ConfigStore's), less hydra."""
    from hydra.core.object_type import ObjectType

    return set(_repository(source or current_source()).get_group_options("", ObjectType.GROUP)) - {"hydra"}


def looked_in(source: ConfigSource | None = None) -> str:
    """The directories of the search path, as a refusal names them: 'conf/, /data/my_conf'."""
    dirs = []
    for s in _repository(source or current_source()).get_sources():
        if s.scheme() == "pkg" and s.path == CONF_PACKAGE:
            dirs.append("conf/")
        elif s.scheme() == "file":
            dirs.append(s.path)
        elif s.scheme() == "pkg" and s.provider != "hydra":
            dirs.append(f"pkg://{s.path}")
    return ", ".join(dirs)


def parse_overrides(overrides: Iterable[str]) -> ParsedOverrides:
    parsed = OverridesParser.create().parse_overrides(list(overrides))
    groups, values, hydra = [], [], []
    known_groups = config_groups()
    for o in parsed:
        key = o.key_or_group
        if key == "hydra" or key.startswith("hydra."):
            hydra.append(o)
        elif "/" in key or key in known_groups:
            groups.append(o)
        else:
            values.append(o)
    return ParsedOverrides(groups=groups, values=values, hydra=hydra)


def all_keys(cfg: DictConfig) -> list[str]:
    """Every key path of the config (inner nodes too), without resolving."""
    keys: list[str] = []

    def walk(node: object, prefix: str) -> None:
        if OmegaConf.is_dict(node):
            for k in node.keys():  # type: ignore[union-attr]
                path = f"{prefix}{k}"
                keys.append(path)
                walk(child_node(node, k), path + ".")  # type: ignore[arg-type]

    walk(cfg, "")
    return [k for k in keys if k != "hydra" and not k.startswith("hydra.")]


def config_file(group: str, name: str, source: ConfigSource | None = None) -> Path | None:
    """The file of `group/name` that Hydra would load (the first search-path directory that has it), or None."""
    for s in _repository(source or current_source()).get_sources():
        root = Path(s.path) if s.scheme() == "file" else package_dir(s.path) if s.scheme() == "pkg" else None
        if root is not None and (path := root / group / f"{name}.yaml").is_file():
            return path
    return None


def group_choices(group: str, source: ConfigSource | None = None) -> list[str]:
    """The options of a config group on the search path (conf/GROUP/NAME.yaml, the user's), sorted."""
    from hydra.core.object_type import ObjectType

    return sorted(_repository(source or current_source()).get_group_options(group, ObjectType.CONFIG))


def unknown_choice_issues(groups: list[Override]) -> list[ConfigIssue]:
    """Group choices the search path does not have (`task=nonexistent`, `workflow=multiturn`): Hydra would
    stop with a 40-line traceback; this says which choices there are, where it looked, with a did-you-mean."""
    issues = []
    known = config_groups()
    for o in groups:
        group = o.key_or_group
        if "/" in group or group not in known or o.type == OverrideType.DEL:
            continue
        if o.is_sweep_override():
            if not isinstance(o.value(), ChoiceSweep):
                continue  # glob(), range(), ...: Hydra expands them over the options that exist
            names = list(o.sweep_string_iterator())
        else:
            names = [o.value()] if isinstance(o.value(), str) else []
        choices = group_choices(group)
        for name in names:
            if name in choices or (group == "sweep" and is_sweep_file_path(name)):
                continue
            issues.append(
                ConfigIssue(
                    o.input_line,
                    f"{o.input_line}: there is no {group} '{name}' (looked in {group}/ of {looked_in()}): "
                    f"the choices are {', '.join(choices)}{did_you_mean(name, choices)}",
                )
            )
    return issues


def unknown_key_issues(cfg: DictConfig, values: list[Override]) -> list[ConfigIssue]:
    """Overrides (without +) of keys that the composed config does not have."""
    from rllm_sweeps.config.spelling import is_unknown_in_shared_section  # spelling imports this module

    known = set(all_keys(cfg))
    issues = []
    for o in values:
        if o.key_or_group in known:
            continue
        if o.type in (OverrideType.ADD, OverrideType.FORCE_ADD):
            if (unread := unread_added_key(o.key_or_group, known)) is not None:
                issues.append(ConfigIssue(o.key_or_group, unread))
            continue
        key = o.key_or_group
        special = rllm_hint(key) or skyrl_refusal(o)
        if special:
            issues.append(ConfigIssue(key, f"unknown key '{key}'{special}"))
            continue
        hint = did_you_mean_key(key, known)
        if hint == "." and is_unknown_in_shared_section(key):
            issues.append(
                ConfigIssue(
                    key,
                    f"unknown key '{key}': neither a common key nor a setting of SkyRL 0.4's config; a setting "
                    "that an example's own entry point adds to SkyRL's config (its DAPO example's "
                    "overlong_buffer_*) is not SkyRL's: remove it",
                )
            )
            continue
        issues.append(
            ConfigIssue(
                key,
                f"unknown key '{key}'{hint} `rllm-sweeps keys` lists the common keys; "
                f"to add a key that does not exist, write +{key}=...",
            )
        )
    return issues


# The sections of the common keys: this project's code reads each of their keys by name, so a key
# `+` adds there is read by nothing (a sweep over it would run identical jobs). Elsewhere (task.*,
# workflow.*, a loader's or a workflow's own arguments) a `+` key may be read by the user's code.
COMMON_SECTIONS = ("model", "data", "rollout", "trainer", "algorithm", "resources")


def unread_added_key(key: str, known: set[str]) -> str | None:
    """Why `+key` (a key the config lacks) is refused, or None when something may read it."""
    if key.split(".", 1)[0] not in COMMON_SECTIONS:
        return None
    return (
        f"unknown key '{key}'{did_you_mean_key(key, known)} `+` adds a key the config lacks, and nothing "
        f"reads a {key.split('.', 1)[0]}.* key the config does not have (`rllm-sweeps keys` lists them)"
    )


def rllm_hint(key: str) -> str:
    """An rLLM key this project has no setting for (rllm.X is the common key X where one exists)."""
    if not key.startswith("rllm."):
        return ""
    return (
        ": an rLLM setting this project does not have (rLLM's common keys are written rllm.KEY or KEY; "
        "`rllm-sweeps keys` lists them); remove it"
    )


def skyrl_refusal(override: Override) -> str:
    """SkyRL's own message for a native override it refuses (a removed setting), or ""."""
    from rllm_sweeps.config.native import skyrl_reading
    from rllm_sweeps.config.spelling import is_unknown_in_shared_section, moved_paths

    key = override.key_or_group
    if override.is_sweep_override() or not (key.startswith(SKYRL_TRAIN_PREFIX) or is_unknown_in_shared_section(key)):
        return ""
    rel = key.removeprefix(SKYRL_TRAIN_PREFIX)
    for path in [rel, *moved_paths(rel)]:
        reading = skyrl_reading(path, override.value())
        if reading.kind == "refused":
            return f": SkyRL 0.4 refuses it: {reading.message}"
    return ""
