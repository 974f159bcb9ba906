"""The sweeper's contracts: optional capabilities are base-class methods with defaults, so the
sweeper asks a launcher or a job source instead of probing it with hasattr."""

from __future__ import annotations

import pytest

from launchers.base import Launcher
from launchers.local import LocalLauncher
from launchers.slurm import SlurmLauncher
from rllm_sweeps.records.resources import Resources
from rllm_sweeps.sweep.optuna_search import OptunaSource
from rllm_sweeps.sweep.runner import JobSource, StaticSource


def test_a_launcher_without_a_scheduler_refuses_nothing_and_queues_no_arrays():
    local = LocalLauncher()
    shape = Resources(nodes=1, gpus_per_node=0, cpus_per_task=2, jobs_per_gpu=1, mem_gb=8, time_min=60)
    assert isinstance(local, Launcher) and local.preflight([shape]) == []
    assert not local.queues_arrays
    with pytest.raises(NotImplementedError, match="local launcher does not queue arrays"):
        local.submit_array([], 2)


def test_the_slurm_launcher_has_both_capabilities_of_its_own():
    assert issubclass(SlurmLauncher, Launcher) and SlurmLauncher.queues_arrays
    assert SlurmLauncher.preflight is not Launcher.preflight
    assert SlurmLauncher.submit_array is not Launcher.submit_array


def test_a_plans_source_has_no_study_and_never_stops_early(tmp_path):
    from rllm_sweeps.sweep.planner import plan_sweep

    source = StaticSource(plan_sweep(["trainer.lr=1e-3,2e-3"], validate=False), tmp_path)
    assert isinstance(source, JobSource) and source.pending() == 2
    assert source.study_info() is None and source.stopped is None and source.fatal is None
    source.close()  # nothing to release
    assert issubclass(OptunaSource, JobSource) and OptunaSource.study_info is not JobSource.study_info


def test_a_launcher_missing_a_required_method_cannot_be_made():
    class Half(Launcher):
        name = "half"

        def submit(self, request):
            return None

    with pytest.raises(TypeError, match="abstract"):
        Half()
