"""The Hydra Sweeper: plan (every job validated), then run through an asynchronous launcher.

Hydra's own launcher contract is synchronous (a whole batch, then the next), so the sweeper
drives launchers/ directly: `parallel` jobs in flight, the next one handed over the moment
one finishes. The sweep directory explains itself (manifest.json, plan.json, one directory
per job) and a rerun of the same command resumes it. Its settings are rllm_sweeps/sweeper_settings.py's.

hydra-optuna-sweeper's vocabulary runs on it too (rllm_sweeps/sweep/optuna_sweeper_fields.py):
`hydra/sweeper=optuna` is registered (where that plugin is not installed) with the plugin's fields
and this sweeper's settings, and its `hydra/sweeper/sampler` options; the `rllm` node holds the
plugin's fields as well, so that a `hydra.sweeper` block written for the plugin in an experiment
overlay (whose `override hydra/sweeper: optuna` conf/config.yaml's own override outranks, Hydra's
rule) still runs the search it describes.
"""

# No `from __future__ import annotations` here: Hydra's plugin scan executes this module
# without registering it in sys.modules, and dataclasses then cannot resolve string annotations.
import dataclasses
import importlib.util
from typing import Any, ClassVar, List  # noqa: UP035 (Hydra's Sweeper signature)

from hydra.core.config_store import ConfigStore
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from rllm_sweeps.sweep.optuna_sweeper_fields import PLUGIN_TARGET, SAMPLER_CONFIGS, sampler_schema, schema
from rllm_sweeps.sweeper_settings import SweeperSettings

RLLM_TARGET = "hydra_plugins.rllm_sweeps_sweeper.sweeper.RllmSweeper"
ConfigStore.instance().store(
    group="hydra/sweeper", name="rllm", node=schema(SweeperSettings, RLLM_TARGET), provider="rllm-sweeps"
)
if importlib.util.find_spec("hydra_plugins.hydra_optuna_sweeper.config") is None:  # the plugin itself
    optuna_node = schema(SweeperSettings, PLUGIN_TARGET, plugin_defaults=True)
    ConfigStore.instance().store(group="hydra/sweeper", name="optuna", node=optuna_node, provider="rllm-sweeps")
    for _name in SAMPLER_CONFIGS:
        ConfigStore.instance().store(
            group="hydra/sweeper/sampler", name=_name, node=sampler_schema(_name), provider="rllm-sweeps"
        )


class RllmSweeper(Sweeper):
    optuna_chosen: ClassVar[bool] = False  # hydra/sweeper=optuna (the class its _target_ names)

    def __init__(self, **fields: Any) -> None:
        # Hydra passes the node's fields (less _target_): SweeperSettings' and hydra-optuna-sweeper's.
        own = {f.name for f in dataclasses.fields(SweeperSettings)} - {"_target_", "params"}
        values = {
            k: OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v) else v for k, v in fields.items()
        }
        self.plugin_fields = {k: v for k, v in values.items() if k not in own}  # params among them
        self.settings = SweeperSettings(**{k: v for k, v in values.items() if k in own})
        self.config: DictConfig | None = None
        self.config_loader: Any = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.config_loader = hydra_context.config_loader

    def sweep(self, arguments: List[str]) -> Any:  # noqa: UP006
        from rllm_sweeps.stop import Stop

        try:
            return self._sweep(arguments)
        except Stop as stop:  # the one place the sweeper ends the process (rllm_sweeps/stop.py)
            raise SystemExit(stop.report()) from None

    def _sweep(self, arguments: List[str]) -> Any:  # noqa: UP006
        from rllm_sweeps.config.override_values import format_value, parse_value
        from rllm_sweeps.override_text import set_value
        from rllm_sweeps.problems import RecordError
        from rllm_sweeps.stop import EXIT_BAD_INPUT, Stop
        from rllm_sweeps.sweep.optuna_sweeper_fields import translate
        from rllm_sweeps.sweep.run import run_sweep

        assert self.config is not None
        given = [v for a in arguments if (v := set_value(a, "sweep.metric")) is not None]
        t = translate(self.plugin_fields, parse_value(given[-1]) if given else None, chosen=self.optuna_chosen)
        if t.problems:
            where = 'docs/OPTUNA.md, "Coming from hydra-optuna-sweeper"'
            raise Stop(EXIT_BAD_INPUT, f"error: {'; '.join(t.problems)} ({where}); nothing was planned or run")
        settings = dataclasses.replace(self.settings, params=t.params)
        extra = [f"sweep.{key}={format_value(value)}" for key, value in t.settings.items()]
        try:
            return run_sweep(
                [*extra, *arguments], self.config, settings, config_loader=self.config_loader, notes=tuple(t.notes)
            )
        except RecordError as err:  # a record of the sweep directory that does not read: its file and field
            raise Stop(EXIT_BAD_INPUT, f"error: {err}; nothing more was launched") from None
