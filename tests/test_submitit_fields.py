"""hydra-submitit-launcher 1.2's `submitit_slurm` / `submitit_local` fields: each mapped (the sbatch
flag, resource or setting it becomes) or refused by name, through launchers/submitit_fields.py's one
table; any other launcher refused naming the ones this sweeper drives."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hydra_plugins.hydra_submitit_launcher.config import LocalQueueConf, SlurmQueueConf
from omegaconf import OmegaConf

from launchers.base import LaunchRequest
from launchers.choice import DRIVEN, LauncherRefused, choose
from launchers.submitit_fields import DOC, FIELDS, MARK_BEGIN, MARK_END, docs_table, schema, with_table
from rllm_sweeps.records.resources import Resources

REPO = Path(__file__).resolve().parents[1]
BASE = Resources(nodes=1, gpus_per_node=0, cpus_per_task=2, jobs_per_gpu=1, mem_gb=8, time_min=60)


def node(conf: type = SlurmQueueConf, **values: Any) -> Any:
    return OmegaConf.merge(OmegaConf.structured(conf), values)


def batch_script(**values: Any) -> str:
    """The sbatch script SLURM would get for a job of BASE under submitit_slurm with these values."""
    from launchers.slurm import SlurmLauncher
    from launchers.submitit_private import sbatch_script

    choice = choose(node(**values), "submitit_slurm")
    assert choice.slurm is not None
    resources = dataclasses.replace(BASE, **choice.resources)
    request = LaunchRequest(index=0, job_dir=Path("/nonexistent/jobs/x"), argv=[], resources=resources)
    return sbatch_script(SlurmLauncher(choice.slurm).executor(request, render_only=True), "true")


def test_the_table_is_hydra_submitit_launcher_1_2s_slurm_and_local_queue_confs_field_for_field():
    for slurm, theirs in ((True, SlurmQueueConf), (False, LocalQueueConf)):
        ours = schema(slurm)
        assert {f.name for f in dataclasses.fields(ours)} == {f.name for f in dataclasses.fields(theirs)}
        assert OmegaConf.to_container(OmegaConf.structured(ours)) == OmegaConf.to_container(
            OmegaConf.structured(theirs)
        )
        assert {f.name: f.type for f in dataclasses.fields(ours)} == {
            f.name: f.type for f in dataclasses.fields(theirs)
        }
    assert {f.name for f in FIELDS} | {"_target_"} == {f.name for f in dataclasses.fields(SlurmQueueConf)}


# Each mapped field of SlurmQueueConf with a value, and a line the job's sbatch script then has.
MAPPED = {
    "timeout_min": (240, "#SBATCH --time=240"),
    "cpus_per_task": (4, "#SBATCH --cpus-per-task=4"),
    "gpus_per_node": (2, "#SBATCH --gpus-per-node=2"),
    "mem_gb": (16, "#SBATCH --mem=16GB"),
    "nodes": (2, "#SBATCH --nodes=2"),
    "partition": ("gpu", "#SBATCH --partition=gpu"),
    "qos": ("high", "#SBATCH --qos=high"),
    "account": ("lab", "#SBATCH --account=lab"),
    "constraint": ("h100", "#SBATCH --constraint=h100"),
    "comment": ("lr-sweep", "#SBATCH --comment=lr-sweep"),
    "exclude": ("node3", "#SBATCH --exclude=node3"),
    "gres": ("nvme:1", "#SBATCH --gres=nvme:1"),
    "additional_parameters": ({"mail_type": "END"}, "#SBATCH --mail-type=END"),
    "setup": (["module load cuda/12.4"], "module load cuda/12.4"),
    "signal_delay_s": (77, "#SBATCH --signal=USR2@77"),
}
# Mapped onto something other than the script: the requeue count and the jobs in flight.
MAPPED_ELSEWHERE = {"max_num_timeout", "array_parallelism"}
REFUSED = {
    "submitit_folder": ("/scratch/x", "hydra.sweep.dir"),
    "tasks_per_node": (2, "one task per node"),
    "name": ("my-job", "SLURM job names are the sweep's"),
    "stderr_to_stdout": (True, "stderr"),
    "cpus_per_gpu": (4, "cpus_per_task"),
    "gpus_per_task": (1, "gpus_per_node"),
    "mem_per_gpu": ("10G", "mem_gb"),
    "mem_per_cpu": ("2G", "mem_gb"),
}


def test_every_slurm_queue_conf_field_has_its_case_below():
    fields = {f.name for f in dataclasses.fields(SlurmQueueConf)} - {"_target_"}
    assert fields == set(MAPPED) | MAPPED_ELSEWHERE | set(REFUSED)


@pytest.mark.parametrize("field", sorted(MAPPED))
def test_a_mapped_submitit_slurm_field_becomes_its_sbatch_line(field):
    value, line = MAPPED[field]
    script = batch_script(**{field: value})
    assert line in script.splitlines(), script
    assert line not in batch_script().splitlines()  # the default does not write it


def test_max_num_timeout_is_the_requeues_and_array_parallelism_the_jobs_in_flight():
    choice = choose(node(max_num_timeout=5, array_parallelism=3), "submitit_slurm")
    assert choice.slurm is not None and choice.slurm.max_requeues == 5 and choice.parallel == 3
    default = choose(node(), "submitit_slurm")  # 1.2's defaults: no requeue, jobs in flight not set
    assert default.slurm is not None and default.slurm.max_requeues == 0 and default.parallel is None
    assert default.slurm.signal_delay_s == 120 and default.resources == {}


@pytest.mark.parametrize("field", sorted(REFUSED))
def test_a_refused_submitit_slurm_field_is_refused_by_name_with_what_to_write_instead(field):
    value, why = REFUSED[field]
    with pytest.raises(LauncherRefused) as refused:
        choose(node(**{field: value}), "submitit_slurm")
    assert f"hydra.launcher.{field}=" in str(refused.value) and why in str(refused.value)
    assert "\n" not in str(refused.value)


def test_submitit_local_runs_locally_with_its_resources_mapped():
    choice = choose(node(LocalQueueConf, timeout_min=30, gpus_per_node=1, mem_gb=4), "submitit_local")
    assert choice.slurm is None and choice.resources == {"time_min": 30, "gpus_per_node": 1, "mem_gb": 4}
    with pytest.raises(LauncherRefused, match="hydra.launcher.tasks_per_node=4"):
        choose(node(LocalQueueConf, tasks_per_node=4), "submitit_local")


def test_gpus_through_gres_or_sbatch_flags_the_launcher_sets_itself_are_refused_naming_the_field_to_use():
    with pytest.raises(LauncherRefused, match="hydra.launcher.gres=gpu:2: .* set gpus_per_node instead"):
        choose(node(gres="gpu:2"), "submitit_slurm")
    with pytest.raises(LauncherRefused, match="additional_parameters.time: .* set timeout_min instead"):
        choose(node(additional_parameters={"time": 30}), "submitit_slurm")
    with pytest.raises(LauncherRefused, match="additional_parameters.comment=b and hydra.launcher.comment=a"):
        choose(node(comment="a", additional_parameters={"comment": "b"}), "submitit_slurm")


@pytest.mark.parametrize(
    ("name", "target", "nearest"),
    [
        ("joblib", "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher", ""),
        ("basic", "hydra._internal.core_plugins.basic_launcher.BasicLauncher", ""),
        ("submitit_slrum", "my.Launcher", "did you mean 'submitit_slurm'"),
    ],
)
def test_any_other_launcher_is_refused_in_one_line_naming_the_driven_ones_and_the_nearest(name, target, nearest):
    with pytest.raises(LauncherRefused) as refused:
        choose(OmegaConf.create({"_target_": target}), name)
    line = str(refused.value)
    assert line.startswith(f"hydra/launcher={name}: ") and all(d in line for d in DRIVEN) and nearest in line
    assert "nothing was planned or run" in line and "\n" not in line


def test_hydras_default_launcher_is_the_local_one_only_when_nobody_chose_it():
    basic = OmegaConf.create({"_target_": "hydra._internal.core_plugins.basic_launcher.BasicLauncher"})
    assert choose(basic, "basic", chosen=False).slurm is None
    with pytest.raises(LauncherRefused):
        choose(basic, "basic", chosen=True)


def test_docs_slurm_md_shows_the_table_as_generated():
    doc = (REPO / DOC).read_text()
    assert MARK_BEGIN in doc and MARK_END in doc
    assert with_table(doc, docs_table()) == doc, "run: python -m launchers.submitit_fields --write"


def test_without_hydra_submitit_launcher_the_same_submitit_choices_are_registered_from_the_table(monkeypatch):
    import importlib.util
    import runpy

    from hydra.core.config_store import ConfigStore

    launchers = ConfigStore.instance().repo["hydra"]["launcher"]
    kept = {name: launchers.get(name) for name in ("submitit_slurm.yaml", "submitit_local.yaml")}
    real_find_spec = importlib.util.find_spec
    absent = "hydra_plugins.hydra_submitit_launcher"
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == absent else real_find_spec(n, *a))
    try:
        for name in kept:
            launchers.pop(name, None)
        runpy.run_path(str(REPO / "hydra_plugins" / "rllm_sweeps_launcher" / "submitit.py"))  # as Hydra's scan runs it
        for name, conf in (("submitit_slurm.yaml", SlurmQueueConf), ("submitit_local.yaml", LocalQueueConf)):
            assert launchers[name].provider == "rllm-sweeps"
            assert launchers[name].node == OmegaConf.structured(conf)
    finally:
        launchers.update({name: node for name, node in kept.items() if node is not None})
