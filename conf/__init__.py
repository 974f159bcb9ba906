"""The config tree, installed as the package rllm_sweeps.conf (pkg://rllm_sweeps.conf on Hydra's
search path): Hydra's package source reads a directory that holds an __init__.py."""
