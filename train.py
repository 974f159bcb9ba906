"""Train one job, or a sweep with -m. `python train.py --help` lists the keys."""

import sys

import hydra
from omegaconf import DictConfig

from rllm_sweeps.app import command_line, preflight, run_hydra_job
from rllm_sweeps.config.native import register

register()


@hydra.main(config_path="conf", config_name="config", version_base=None)
def main(cfg: DictConfig) -> dict:
    return run_hydra_job(cfg)


if __name__ == "__main__":
    # rLLM's and SkyRL's spellings, sweep files by path; notes (a key SkyRL renamed) go to stderr
    sys.argv[1:] = command_line(sys.argv[1:], notify=lambda note: print(note, file=sys.stderr))
    preflight(sys.argv[1:])
    main()
