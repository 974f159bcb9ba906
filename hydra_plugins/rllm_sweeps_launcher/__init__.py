"""Hydra plugin: `hydra/launcher=slurm` settings for the rllm-sweeps sweeper."""
