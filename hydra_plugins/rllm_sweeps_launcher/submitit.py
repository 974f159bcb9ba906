"""`hydra/launcher=submitit_slurm` / `submitit_local` where hydra-submitit-launcher is not installed.

The sweeper runs them on its own SLURM and local launchers, field by field as launchers/submitit_fields.py
says. Where hydra-submitit-launcher 1.2 is installed, its own SlurmQueueConf/LocalQueueConf are these
configs (same fields, defaults and `_target_`); elsewhere this module registers the same schema, rebuilt
from the table, so that the choice composes either way, users' own launcher configs that
`defaults:` from it included.
"""

import importlib.util

from hydra.core.config_store import ConfigStore

from launchers.submitit_fields import schema

if importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is None:
    for slurm, name in ((True, "submitit_slurm"), (False, "submitit_local")):
        ConfigStore.instance().store(group="hydra/launcher", name=name, node=schema(slurm), provider="rllm-sweeps")
