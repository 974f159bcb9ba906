"""`_target_: hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper`, the class users' configs
written for hydra-optuna-sweeper name (`hydra/sweeper=optuna`'s default; lightning-hydra-template writes
it out), runs this project's Optuna search (hydra_plugins/rllm_sweeps_sweeper/sweeper.py). The plugin itself
cannot be installed beside Optuna 5 (its releases pin Optuna below 3 or 5); where it is, whichever
package comes first on sys.path is used."""

from typing import ClassVar

from hydra_plugins.rllm_sweeps_sweeper.sweeper import RllmSweeper


class OptunaSweeper(RllmSweeper):
    optuna_chosen: ClassVar[bool] = True
