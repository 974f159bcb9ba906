"""Train one job, or a sweep with -m. `python train.py --help` lists the keys."""

if __name__ == "__main__":
    from launchers.warm_server import run_on_warm_server

    run_on_warm_server(__file__)  # exits here if this machine's warm server ran the job (docs/JOBS.md)

import hydra
from omegaconf import DictConfig

from rllm_sweeps.app import run_hydra_job, run_train_py
from rllm_sweeps.config.native import register

register()


@hydra.main(config_path="conf", config_name="config", version_base=None)
def main(cfg: DictConfig) -> dict:
    return run_hydra_job(cfg)


if __name__ == "__main__":
    run_train_py(main)
