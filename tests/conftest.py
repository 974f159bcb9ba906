"""Shared fixtures. The local SLURM cluster fixtures come from slurm_fixtures.py."""

from slurm_fixtures import local_slurm, local_slurm_netns, slurm_env  # noqa: F401
