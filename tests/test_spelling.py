"""What rLLM and SkyRL users type works as they type it (config/spelling.py): rLLM's rllm.*
namespace and backend group, SkyRL's native paths without a prefix, SkyRL's own reading of
renamed or removed keys, and one message for each key that cannot be honoured."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from config_problems import problems, quiet

from rllm_sweeps.config.load import load_config
from rllm_sweeps.config.native import skyrl_reading
from rllm_sweeps.config.override_values import parse_value, same
from rllm_sweeps.config.spelling import canonical_overrides, common_paths, native_paths
from rllm_sweeps.keymap import BY_NATIVE

pytestmark = pytest.mark.slow  # composes the real config tree through Hydra and SkyRL; some run train.py

REPO = Path(__file__).resolve().parents[1]
GPU = ["skyrl.engine=fsdp", "resources.gpus_per_node=1"]


def words(script: str) -> list[str]:
    return [w for line in script.strip().splitlines() for w in shlex.split(line.rstrip("\\"))]


# rLLM's SkyRL-backend scripts themselves: tests/test_rllm_scripts.py (tests/data/rllm_skyrl/).


# SkyRL 0.3 names (rLLM's scripts) that SkyRL 0.4 moved: used under the new name, with a note.
MOVED = {
    "generator.num_inference_engines": "generator.inference_engine.num_engines",
    "generator.inference_engine_tensor_parallel_size": "generator.inference_engine.tensor_parallel_size",
    "generator.gpu_memory_utilization": "generator.inference_engine.gpu_memory_utilization",
    "generator.max_num_seqs": "generator.inference_engine.max_num_seqs",
}


def test_skyrl_0_3_names_that_0_4_moved_are_used_under_their_new_name_with_a_note():
    notes: list[str] = []
    cfg = load_config([*GPU, *(f"{old}=1" for old in MOVED)], notify=notes.append)
    for old, new in MOVED.items():
        assert any(old in n and new in n for n in notes), (old, notes)
        assert cfg.skyrl.train[new.split(".")[0]][new.split(".")[1]][new.split(".")[2]] == 1


def test_rllm_namespace_keys_are_the_common_keys():
    cfg = load_config(
        ["rllm.algorithm.adv_estimator=rloo", "rllm.rollout.n=4", "rllm.trainer.total_batches=7", "rllm/backend=skyrl"],
        notify=quiet,
    )
    assert (cfg.algorithm.adv_estimator, cfg.rollout.n, cfg.trainer.total_batches) == ("rloo", 4, 7)
    assert cfg.skyrl.train.generator.n_samples_per_prompt == 4


def test_skyrl_native_paths_without_a_prefix_are_skyrl_train_keys():
    cfg = load_config(["trainer.policy.optimizer_config.lr=2e-5", "generator.n_samples_per_prompt=3"], notify=quiet)
    assert cfg.trainer.lr == 2e-5 and cfg.rollout.n == 3
    assert canonical_overrides(["trainer.placement.colocate_all=false"]) == [
        "skyrl.train.trainer.placement.colocate_all=false"
    ]
    assert canonical_overrides(["trainer.lr=1e-3"]) == ["trainer.lr=1e-3"]  # a common key stays one


def test_every_path_both_trees_have_is_one_setting():
    leaves = {p for p in common_paths() if not any(q.startswith(p + ".") for q in common_paths())}
    shared = {p for p in leaves & native_paths() if not p.startswith("task.")}
    assert shared == {"trainer.seed", "trainer.logger", "trainer.project_name", "trainer.resume_mode"}
    for path in shared:
        mapping = BY_NATIVE["skyrl.train." + path]
        assert mapping.common == path, path  # the key map makes both spellings one setting


def test_skyrl_spellings_of_shared_paths_mean_the_same_setting():
    cfg = load_config(["trainer.resume_mode=null"], notify=quiet)  # SkyRL: null = none
    assert cfg.trainer.resume_mode == "disable" and cfg.skyrl.train.trainer.resume_mode == "none"
    cfg = load_config(["trainer.logger=tensorboard"], notify=quiet)  # SkyRL (and rLLM): one name
    assert cfg.skyrl.train.trainer.logger == "tensorboard"


def test_a_native_list_logger_is_not_wrapped_twice():
    cfg = load_config(["skyrl.train.trainer.logger=[tensorboard]"], notify=quiet)
    assert list(cfg.trainer.logger) == ["tensorboard"]


def test_skyrls_own_override_handling_decides_renamed_dropped_and_removed_keys():
    notes: list[str] = []
    cfg = load_config([*GPU, "trainer.use_sample_packing=false", "generator.async_engine=true"], notify=notes.append)
    assert cfg.skyrl.train.trainer.remove_microbatch_padding is False  # SkyRL's rename
    assert any("remove_microbatch_padding" in n for n in notes)
    assert any("changes nothing" in n and "async_engine" in n for n in notes)  # SkyRL drops it
    found = problems([*GPU, "skyrl.train.generator.inference_engine.async_engine=false"])
    assert "no longer supported" in found["skyrl.train.generator.inference_engine.async_engine"]


KWARG = "generator.inference_engine.engine_init_kwargs.foo"  # a new key of a free-form dictionary


def test_the_override_skyrl_reads_in_place_of_the_typed_one_parses_back_to_skyrls_value():
    typed, path = "trainer.use_sample_packing=false", "trainer.remove_microbatch_padding"  # SkyRL's rename
    notes: list[str] = []
    (line,) = canonical_overrides([typed], notes.append)
    assert notes == [f"note: SkyRL 0.4 reads {typed.partition('=')[0]} as {line}"]
    key, _, text = line.partition("=")
    assert key == f"skyrl.train.{path}"
    (read,) = skyrl_reading("trainer.use_sample_packing", False).changed.values()
    assert same(parse_value(text), read), (line, read)  # Hydra gives the job SkyRL's very value


@pytest.mark.parametrize(
    "typed",
    [
        f"skyrl.train.{KWARG}=bar",
        f"skyrl.train.{KWARG}='a b, c'",  # Hydra's special characters
        f"skyrl.train.{KWARG}='1e-3'",
        f"skyrl.train.{KWARG}=[a,'b:c']",
        f"skyrl.train.{KWARG}='é\\\\x'",  # not ASCII, a backslash: Hydra reads no JSON escapes
    ],
)
def test_a_key_of_a_free_form_dictionary_is_added_and_parses_to_skyrls_value(typed):
    (line,) = canonical_overrides([typed])
    rel, _, typed_text = typed.partition("=")
    key, _, text = line.partition("=")
    assert key == "++" + rel  # added or set whatever the dictionary holds (config/free_form.py)
    (read,) = skyrl_reading(rel.removeprefix("skyrl.train."), parse_value(typed_text)).changed.values()
    assert same(parse_value(text), read), (line, read)  # Hydra gives the job SkyRL's very value


def test_a_malformed_override_is_one_line_with_exit_code_2(tmp_path):
    for bad in ("trainer.lr==3", "trainer.lr=[1,", "trainer.lr=1e-3 # x"):
        proc = subprocess.run(
            [sys.executable, str(REPO / "train.py"), bad], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and f"'{bad}'" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_sweep_file_in_rllms_and_skyrls_spelling_plans(tmp_path):
    from rllm_sweeps.sweep.planner import plan_sweep

    path = tmp_path / "spelled.yaml"
    path.write_text(
        "parameters:\n  rllm.rollout.n: {values: [2, 4]}\n"
        "  trainer.policy.optimizer_config.lr: {values: [1.0e-3, 2.0e-3]}\n"
    )
    plan = plan_sweep([f"+sweep={path}", "rllm.trainer.total_batches=3"])
    assert len(plan.jobs) == 4


def test_cfg_job_prints_the_resolved_config_and_a_sweep_file_without_m_is_refused(tmp_path):
    shown = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "--cfg", "job", "trainer.lr=3e-3"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert "${" not in shown.stdout and "lr: 0.003" in shown.stdout
    one = subprocess.run(
        [sys.executable, str(REPO / "train.py"), "+sweep=lr_grid"], cwd=tmp_path, capture_output=True, text=True
    )
    assert one.returncode == 2 and "-m" in one.stderr and "Traceback" not in one.stderr
    assert list(tmp_path.iterdir()) == []  # nothing ran


def test_a_plus_on_a_setting_this_tree_has_is_dropped_but_never_on_a_config_group():
    got = canonical_overrides(["+sweep=lr_optuna", "+data.train_batch_size=32", "+task.dataset.extra=1"])
    assert got == ["+sweep=lr_optuna", "data.train_batch_size=32", "+task.dataset.extra=1"]


def test_constraints_read_rllms_and_skyrls_spellings_of_a_key(tmp_path):
    from rllm_sweeps.sweep.planner import plan_sweep

    path = tmp_path / "c.yaml"
    path.write_text(
        "parameters:\n  rllm.rollout.n: {values: [2, 4, 8]}\n"
        'constraints: ["rllm.rollout.n * rllm.data.train_batch_size <= 128", '
        '"generator.n_samples_per_prompt >= 2"]\n'
    )
    plan = plan_sweep([f"+sweep={path}"], validate=False)
    assert sorted(list(job.overrides) for job in plan.jobs) == [["rollout.n=2"], ["rollout.n=4"]]
