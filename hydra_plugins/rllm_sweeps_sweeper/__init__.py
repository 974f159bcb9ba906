"""Hydra plugin: the rllm-sweeps sweeper (`hydra/sweeper=rllm`, the default in conf/)."""
