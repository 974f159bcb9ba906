"""`hydra.launcher.*` for local processes: the local launcher's settings (none yet).

Hydra's `hydra/launcher=local` config (hydra_plugins/rllm_sweeps_launcher/local.py; a sweep that
chooses no launcher runs locally too) is this dataclass plus Hydra's `_target_`; the sweeper selects
the local launcher by this type.
"""

from dataclasses import dataclass


@dataclass
class LocalSettings:
    """Nothing to set: a local job's GPUs come from its resources.* (launchers/gpu_placement.py)."""
