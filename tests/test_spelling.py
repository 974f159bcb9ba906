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
from rllm_sweeps.config.spelling import canonical_overrides, common_paths, native_paths
from rllm_sweeps.keymap import BY_NATIVE

pytestmark = pytest.mark.slow  # composes the real config tree through Hydra and SkyRL; some run train.py

REPO = Path(__file__).resolve().parents[1]
GPU = ["skyrl.engine=fsdp", "resources.gpus_per_node=1"]


def words(script: str) -> list[str]:
    return [w for line in script.strip().splitlines() for w in shlex.split(line.rstrip("\\"))]


# rLLM's unified-trainer test scripts for its SkyRL backend (rllm-org/rllm, PR #407:
# rllm/experimental/test/run_skyrl_simple_math.sh and run_skyrl_solver_judge.sh), as written.
RLLM_SIMPLE_MATH = r"""
rllm/backend=skyrl \
trainer.policy.model.path=Qwen/Qwen2.5-0.5B-Instruct \
trainer.placement.policy_num_gpus_per_node=1 \
trainer.placement.ref_num_gpus_per_node=1 \
trainer.placement.colocate_all=false \
rllm.trainer.total_epochs=1 \
rllm.trainer.total_batches=100 \
rllm.trainer.val_before_train=false \
rllm.trainer.test_freq=5 \
rllm.trainer.experiment_name=skyrl_simple_math_test \
rllm.rejection_sample.min_trajs_per_group=1 \
trainer.policy.optimizer_config.lr=1e-5 \
trainer.critic.optimizer_config.lr=5e-5 \
+data.train_batch_size=32 \
+data.val_batch_size=16 \
generator.n_samples_per_prompt=8 \
generator.num_inference_engines=1 \
generator.inference_engine_tensor_parallel_size=1 \
generator.gpu_memory_utilization=0.7 \
generator.batched=false \
generator.async_engine=true \
generator.max_num_seqs=255 \
+ray_init.num_cpus=32
"""

RLLM_SOLVER_JUDGE = r"""
rllm/backend=skyrl \
trainer.policy.model.path=Qwen/Qwen3-4B-Instruct-2507 \
trainer.placement.policy_num_gpus_per_node=1 \
trainer.placement.ref_num_gpus_per_node=1 \
trainer.placement.colocate_all=false \
trainer.epochs=1 \
rllm.trainer.total_batches=100 \
trainer.eval_before_train=false \
trainer.eval_interval=10 \
trainer.val_max_samples=8 \
trainer.ckpt_interval=20 \
trainer.run_name=skyrl_solver_judge_test \
rllm.episode_logging.log_episodes=true \
rllm.rejection_sample.min_trajs_per_group=1 \
trainer.policy.optimizer_config.lr=1e-6 \
trainer.critic.optimizer_config.lr=5e-5 \
trainer.algorithm.use_kl_loss=false \
trainer.algorithm.eps_clip_high=0.28 \
data.train_batch_size=32 \
data.val_batch_size=32 \
data.max_prompt_length=2048 \
data.max_response_length=1024 \
generator.n_samples_per_prompt=4 \
generator.eval_n_samples_per_prompt=1 \
generator.num_inference_engines=1 \
generator.inference_engine_tensor_parallel_size=1 \
generator.gpu_memory_utilization=0.7 \
generator.batched=false \
generator.async_engine=true \
generator.max_num_seqs=255 \
+ray_init.num_cpus=32
"""

# Each key of those scripts this project cannot honour, and what its message must say.
RLLM_REFUSED = {
    "skyrl.train.trainer.placement.ref_num_gpus_per_node": "no reference model",
    "skyrl.train.trainer.critic.optimizer_config.lr": "trains no critic",
    "rllm.rejection_sample.min_trajs_per_group": "an rLLM setting this project does not have",
    "rllm.episode_logging.log_episodes": "an rLLM setting this project does not have",
    "trainer.val_max_samples": "unknown key",
    "skyrl.train.generator.batched": "read by no engine",
}


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


@pytest.mark.parametrize("script", [RLLM_SIMPLE_MATH, RLLM_SOLVER_JUDGE], ids=["simple_math", "solver_judge"])
def test_rllms_skyrl_command_lines_compose_once_what_cannot_be_honoured_is_removed_each_named(script):
    typed = words(script)
    found = problems([*typed, "skyrl.engine=fsdp"])
    for key, why in RLLM_REFUSED.items():
        if any(w.lstrip("+").startswith(key.removeprefix("skyrl.train.") + "=") for w in typed):
            assert why in found.pop(key), key
    # rLLM's `+ray_init.num_cpus` adds a key nothing reads: Hydra's `+` accepts it, so it is kept
    # out of the comparison above and removed here with the rest.
    assert found == {}, found
    kept = [w for w in typed if not any(w.lstrip("+").startswith(k.removeprefix("skyrl.train.")) for k in RLLM_REFUSED)]
    kept = [w for w in kept if not w.startswith("+ray_init")]
    cfg = load_config([*kept, "skyrl.engine=fsdp"], notify=quiet)
    assert cfg.trainer.total_batches == 100
    assert cfg.model.path.startswith("Qwen/")
    assert cfg.resources.gpus_per_node == 1
    assert cfg.skyrl.train.trainer.placement.colocate_all is False


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
