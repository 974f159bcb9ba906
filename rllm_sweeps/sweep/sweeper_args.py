"""`rllm-sweeps plan`'s arguments taken apart: the sweeper's settings (`hydra.sweeper.*`, `hydra.sweep.*`)
and the sweep's own overrides.

train.py hands Hydra's overrides to Hydra and the rest to the sweeper; `rllm-sweeps plan` gets them
all in one list. A sweeper setting is not a job override: it is read into `SweeperSettings` (their
one definition, typed by OmegaConf as Hydra does) and shown as a setting by the plan.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from rllm_sweeps.override_text import override_key
from rllm_sweeps.problems import ConfigError, ConfigIssue, did_you_mean
from rllm_sweeps.sweeper_settings import SweeperSettings

SWEEPER = "hydra.sweeper."
PARAMS = SWEEPER + "params."
SWEEP_DIR_KEYS = ("hydra.sweep.dir", "hydra.sweep.subdir")


@dataclass(frozen=True)
class SweeperArgs:
    overrides: list[str]  # the sweep's own (train.py -m's job overrides and sweep settings)
    settings: SweeperSettings
    given: dict[str, str] = field(default_factory=dict)  # key -> value, as the user wrote them
    sweep_dir: str | None = None

    def lines(self) -> list[str]:
        """The settings given, for the plan's head."""
        return [f"{key}={value}" for key, value in self.given.items()]


def split_sweeper_args(arguments: Iterable[str]) -> SweeperArgs:
    """The arguments' sweeper settings and the rest; ConfigError naming the setting when one is wrong."""
    overrides: list[str] = []
    given: dict[str, str] = {}
    dotlist: list[str] = []
    params: dict[str, str] = {}
    for arg in arguments:
        key = override_key(arg)
        value = arg.split("=", 1)[1] if "=" in arg else ""
        if key.startswith(PARAMS):  # Hydra's sweeper.params: a dotted key -> its sweep expression
            given[key] = value
            params[key[len(PARAMS) :]] = value
        elif key.startswith(SWEEPER):
            given[key] = value
            dotlist.append(f"{key[len(SWEEPER) :]}={value}")
        elif key in SWEEP_DIR_KEYS:
            given[key] = value
        else:
            overrides.append(arg)
    schema = OmegaConf.structured(SweeperSettings)
    known = [k for k in schema if k != "_target_"]
    for key in given:
        head = key[len(SWEEPER) :].split(".", 1)[0] if key.startswith(SWEEPER) else None
        if head is not None and head not in known:
            hint = did_you_mean(head, known) or f" (sweeper settings: {', '.join(known)})"
            raise ConfigError([ConfigIssue(key, f"{key}: not a sweeper setting{hint}")])
    try:
        merged = OmegaConf.merge(schema, OmegaConf.from_dotlist(dotlist))
    except OmegaConfBaseException as err:
        what = str(err).splitlines()[0]
        shown = " ".join(f"{k}={v}" for k, v in given.items() if k.startswith(SWEEPER))
        raise ConfigError([ConfigIssue("hydra.sweeper", f"{shown}: {what}")]) from None
    settings: SweeperSettings = OmegaConf.to_object(merged)  # type: ignore[assignment]
    settings.params = {**settings.params, **params}
    if settings.parallel is not None and settings.parallel < 1:
        raise ConfigError(
            [
                ConfigIssue(
                    "hydra.sweeper.parallel", f"hydra.sweeper.parallel={settings.parallel}: expected an integer >= 1"
                )
            ]
        )
    return SweeperArgs(overrides, settings, given, given.get("hydra.sweep.dir"))


__all__ = ["SweeperArgs", "split_sweeper_args"]
