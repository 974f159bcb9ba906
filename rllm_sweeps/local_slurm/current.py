"""Which local cluster `cluster=local` talks to: the one `python -m rllm_sweeps.local_slurm up` (make
slurm-up) brought up last, recorded in the cache directory, so that a cluster under another
`--base` needs no variable; $RLLM_SWEEPS_SLURM_BASE (the tests' own clusters) wins over it."""

from __future__ import annotations

import os
from pathlib import Path

from rllm_sweeps.cachedir import cache_dir
from rllm_sweeps.local_slurm.layout import ClusterPaths
from rllm_sweeps.local_slurm.settings import DEFAULT_BASE

BASE_ENV = "RLLM_SWEEPS_SLURM_BASE"


def record_file() -> Path:
    return cache_dir() / "local-slurm-base"


def current_base() -> Path:
    """$RLLM_SWEEPS_SLURM_BASE, else the base `up` recorded last, else the default base."""
    if os.environ.get(BASE_ENV):
        return Path(os.environ[BASE_ENV])
    try:
        recorded = record_file().read_text().strip()
    except OSError:
        recorded = ""
    return Path(recorded) if recorded else DEFAULT_BASE


def current_conf() -> str:
    """The slurm.conf of the current cluster (conf/cluster/local.yaml's SLURM_CONF)."""
    return str(ClusterPaths(current_base()).conf)


def record(base: Path) -> Path:
    """After `up`: later `cluster=local` runs use this cluster."""
    path = record_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{Path(base).resolve()}\n")
    return path


def forget(base: Path) -> None:
    """After `down`: the record goes if it names this cluster."""
    try:
        if Path(record_file().read_text().strip()) == Path(base).resolve():
            record_file().unlink()
    except OSError:
        pass
