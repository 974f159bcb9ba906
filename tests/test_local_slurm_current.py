"""`cluster=local` finds the cluster `make slurm-up` brought up, whatever its --base: the printout
of `up` is enough (no variable to export); $RLLM_SWEEPS_SLURM_BASE, the tests' own, wins."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from rllm_sweeps.config.native import register
from rllm_sweeps.local_slurm import current

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # composes the real config tree


def cluster_local_slurm_conf() -> str:
    """SLURM_CONF as `train.py -m ... cluster=local` hands it to the SLURM launcher."""
    register()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(str(REPO / "conf"), version_base=None):
            cfg = compose("config", overrides=["cluster=local"], return_hydra_config=True)
            return str(cfg.hydra.launcher.env.SLURM_CONF)
    finally:
        GlobalHydra.instance().clear()


def test_cluster_local_uses_the_cluster_up_recorded_and_the_environment_variable_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("RLLM_SWEEPS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(current.BASE_ENV, raising=False)
    assert cluster_local_slurm_conf() == "/tmp/rllm-slurm/etc/slurm.conf"  # nothing brought up: the default
    current.record(tmp_path / "up")  # what `python -m rllm_sweeps.local_slurm up --base ...` does
    assert cluster_local_slurm_conf() == str(tmp_path / "up" / "etc" / "slurm.conf")
    monkeypatch.setenv(current.BASE_ENV, str(tmp_path / "mine"))
    assert cluster_local_slurm_conf() == str(tmp_path / "mine" / "etc" / "slurm.conf")
    monkeypatch.delenv(current.BASE_ENV)
    current.forget(tmp_path / "other")  # `down` of another cluster leaves the record
    assert cluster_local_slurm_conf() == str(tmp_path / "up" / "etc" / "slurm.conf")
    current.forget(tmp_path / "up")
    assert cluster_local_slurm_conf() == "/tmp/rllm-slurm/etc/slurm.conf"
