"""Where Hydra finds the configs: the user's search path, one record for every stage.

    source = ConfigSource.from_command_line(args)   # train.py's --config-path/--config-name/--config-dir,
                                                    # its hydra.searchpath=[...] (the pre-flight check, validate)
    source = ConfigSource.from_hydra(hydra_cfg)     # the same, as the running app's Hydra recorded it (the sweeper)
    use_source(source)                              # what this process composes with (config/compose.py)
    source.train_py_args()                          # what a sweep's job gets on its command line

Hydra's own loader composes with it (`config/compose.py`): the package's conf/
(pkg://rllm_sweeps.conf, config/paths.py) or the primary config's directory (`--config-path`), the
primary config (`--config-name`), `--config-dir`, and
`hydra.searchpath` (the command line's, else the primary config's: Hydra's rule). Every stage (the
pre-flight check, `--cfg job`, `rllm-sweeps validate`, the planner, the job) composes through it, so
a group that Hydra finds there works as if it were in conf/.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rllm_sweeps.config.paths import CONF_DIR, CONF_SEARCH_PATH
from rllm_sweeps.override_text import override_key

CONFIG_NAME = "config"
SEARCHPATH_KEY = "hydra.searchpath"


@dataclass(frozen=True)
class ConfigSource:
    """The search path a composition uses (the defaults: the training app's own, conf/config.yaml)."""

    # where the primary config is: the package's conf/, or --config-path (an absolute directory or pkg://)
    primary: str = CONF_SEARCH_PATH
    config_name: str = CONFIG_NAME  # --config-name
    config_dir: Path | None = None  # --config-dir (absolute): added to the search path
    searchpath: str | None = None  # the command line's `hydra.searchpath=[...]` override, as typed

    @classmethod
    def from_command_line(cls, args: Any) -> ConfigSource:
        """From Hydra's parsed command line (config/private_api.command_line_parser); a relative
        --config-path is relative to the working directory, as the training app takes it (train.py)."""
        primary = CONF_SEARCH_PATH if args.config_path is None else config_path_from_cwd(args.config_path)
        config_dir = None if args.config_dir is None else Path(os.path.abspath(args.config_dir))
        return cls(primary, args.config_name or CONFIG_NAME, config_dir, searchpath_override(args.overrides))

    @classmethod
    def from_hydra(cls, hydra_cfg: Any) -> ConfigSource:
        """From a running app's config (`hydra.runtime.config_sources`, `hydra.job.config_name`, the
        hydra overrides), as Hydra itself composed it."""
        primary, config_dir = CONF_SEARCH_PATH, None
        for entry in hydra_cfg.hydra.runtime.config_sources:
            if entry.provider == "main":
                primary = f"pkg://{entry.path}" if entry.schema == "pkg" else str(entry.path)
            elif entry.provider == "command-line" and entry.schema == "file":
                config_dir = Path(str(entry.path))
        name = hydra_cfg.hydra.job.config_name or CONFIG_NAME
        return cls(primary, str(name), config_dir, searchpath_override(hydra_cfg.hydra.overrides.hydra))

    def with_searchpath(self, overrides: Iterable[str]) -> list[str]:
        """`overrides` with the command line's hydra.searchpath, unless they set their own."""
        lines = list(overrides)
        if self.searchpath is not None and searchpath_override(lines) is None:
            lines.append(self.searchpath)
        return lines

    def train_py_args(self) -> list[str]:
        """The training app's arguments that compose with this source (a sweep's jobs get them)."""
        args = []
        if self.primary != CONF_SEARCH_PATH:
            args += ["--config-path", self.primary]
        if self.config_name != CONFIG_NAME:
            args += ["--config-name", self.config_name]
        if self.config_dir is not None:
            args += ["--config-dir", str(self.config_dir)]
        return args + ([self.searchpath] if self.searchpath is not None else [])

    def is_default(self) -> bool:
        return self == ConfigSource()


def config_path_from_cwd(path: str) -> str:
    """--config-path as the training app takes it: a directory relative to the working directory (as
    --config-dir), or a package (pkg://)."""
    return path if path.startswith("pkg://") else os.path.abspath(path)


def searchpath_override(overrides: Iterable[str]) -> str | None:
    """The first `hydra.searchpath=...` override (the one Hydra reads), or None."""
    return next((o for o in overrides if override_key(o) == SEARCHPATH_KEY), None)


_current = ConfigSource()


def use_source(source: ConfigSource) -> None:
    """What this process composes with from now on: set once by the entry point (train.py's
    pre-flight check, the sweeper, `rllm-sweeps validate`)."""
    global _current
    _current = source


def current_source() -> ConfigSource:
    return _current


__all__ = [
    "CONFIG_NAME",
    "CONF_DIR",
    "ConfigSource",
    "config_path_from_cwd",
    "current_source",
    "searchpath_override",
    "use_source",
]
