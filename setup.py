"""The wheel's packages (everything else is in pyproject.toml): the checkout's packages, and its
top-level conf/ installed as rllm_sweeps/conf/ (pyproject.toml's package-dir), so that an installed
rllm-sweeps finds its configs through importlib.resources, never beside a checkout."""

from setuptools import find_namespace_packages, setup

# hydra_plugins is a namespace package (Hydra's plugin discovery); tests/, bench/ and docs/ stay out.
PACKAGES = find_namespace_packages(include=["rllm_sweeps*", "launchers*", "hydra_plugins*"])

setup(packages=[*PACKAGES, "rllm_sweeps.conf"])
