"""Which keys each engine reads: a key the chosen engine would ignore is refused before anything
starts (command line, sweep file, sweep dimension), and the native keys the JAX engine does
read change what the loop does."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from config_problems import problems, quiet

from rllm_sweeps.config.load import load_config
from rllm_sweeps.engines import ENGINES, GPU_TRAINER, readers
from rllm_sweeps.keymap import KEY_MAPPINGS
from rllm_sweeps.sweep.spec import SweepError

pytestmark = pytest.mark.slow  # composes the real config tree through Hydra and SkyRL; some run train.py

REPO = Path(__file__).resolve().parents[1]
GSPO = "skyrl.train.trainer.algorithm.policy_loss_type=gspo"


# ---- the table -------------------------------------------------------------------------------


def test_every_mapped_native_key_is_read_by_the_engines_that_read_its_common_key():
    for m in KEY_MAPPINGS:
        expected = ("jax",) if m.native.startswith("skyrl.jax.") else readers(m.common)
        assert readers(m.native) == expected, m.native


def test_the_jax_backend_settings_are_read_by_jax_only_and_the_gpu_trainer_tree_by_fsdp_and_megatron():
    assert readers("skyrl.jax.loss_chunk_size") == ("jax",)
    assert readers("skyrl.train.trainer.algorithm.sapo.tau_pos") == GPU_TRAINER
    assert readers("skyrl.train.generator.inference_engine.gpu_memory_utilization") == GPU_TRAINER
    # the loop reads these native keys itself, on every engine
    assert readers("skyrl.train.generator.sampling_params.top_k") == ENGINES
    # SkyRL's data files: read through their common key on every engine (data by path); its own
    # generator's environment settings are read only with data by path (engines.py), not as such
    assert readers("skyrl.train.data.train_data") == ENGINES
    assert readers("skyrl.train.environment.env_class") == ()
    # common keys an engine cannot honour
    assert readers("trainer.max_grad_norm") == GPU_TRAINER
    assert readers("trainer.adam_eps") == ("jax",)
    assert readers("trainer.lr") == ENGINES
    # SkyRL's own PPO loop's settings, which its backend code never names: derived from SkyRL
    assert readers("skyrl.train.trainer.hf_save_interval") == ()
    assert readers("skyrl.train.trainer.algorithm.use_tis") == ()
    assert readers("skyrl.train.trainer.policy.fsdp_config.cpu_offload") == GPU_TRAINER


def test_keys_lists_the_engines_that_read_each_key_without_lambda_reprs():
    proc = subprocess.run(
        [sys.executable, "-m", "rllm_sweeps.cli", "keys"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    rows = {}
    for line in proc.stdout.splitlines()[1:]:
        if line.startswith("  ") or not line.strip():
            continue
        common, native, engines = line.split()[:3]
        rows[native] = engines
    assert rows["skyrl.train.trainer.policy.optimizer_config.lr"] == "jax,fsdp,megatron"
    assert rows["skyrl.train.trainer.policy.optimizer_config.max_grad_norm"] == "fsdp,megatron"
    assert rows["skyrl.jax.max_lora_rank"] == "jax"
    assert "skyrl.train.generator.sampling_params.top_k" in proc.stdout  # a native key the loop reads
    assert "lambda" not in proc.stdout


# ---- refusals --------------------------------------------------------------------------------


def test_a_native_loss_the_jax_engine_lacks_stops_train_py_before_any_model_or_ray_starts(tmp_path):
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(REPO / "train.py"), GSPO], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "skyrl.train.trainer.algorithm.policy_loss_type='gspo'" in proc.stderr
    assert "skyrl.engine=jax" in proc.stderr and "fsdp or megatron" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []  # no job directory, no checkpoint, no Ray session
    assert time.monotonic() - start < 60


def test_a_native_key_only_the_gpu_trainer_reads_is_refused_on_jax_naming_the_engines_that_read_it():
    found = problems(["skyrl.train.trainer.algorithm.sapo.tau_pos=2.0"])
    message = found["skyrl.train.trainer.algorithm.sapo.tau_pos"]
    assert "not read by skyrl.engine=jax" in message and "skyrl.engine=fsdp or megatron" in message


def test_a_native_key_named_at_its_default_value_is_refused_too():
    # Named by the user = meant to matter, even when it equals SkyRL's default.
    found = problems(["skyrl.train.trainer.algorithm.sapo.tau_pos=1.0"])
    assert "skyrl.train.trainer.algorithm.sapo.tau_pos" in found


def test_a_key_of_skyrls_own_generator_and_data_loader_is_refused_on_every_engine():
    for engine in (["skyrl.engine=jax"], ["skyrl.engine=fsdp", "resources.gpus_per_node=1"]):
        found = problems([*engine, "skyrl.train.environment.env_class=aime"])
        assert "read by no engine" in found["skyrl.train.environment.env_class"]
        assert "task.*" in found["skyrl.train.environment.env_class"]


def test_jax_backend_settings_and_adam_eps_are_refused_on_the_gpu_trainer():
    found = problems(["skyrl.engine=megatron", "resources.gpus_per_node=1", "skyrl.jax.loss_chunk_size=7"])
    assert "skyrl.jax.loss_chunk_size" in found and "skyrl.engine=jax" in found["skyrl.jax.loss_chunk_size"]
    found = problems(["skyrl.engine=fsdp", "resources.gpus_per_node=1", "trainer.adam_eps=1e-6"])
    assert "torch's eps" in found["trainer.adam_eps"]


def test_gradient_clipping_is_refused_on_jax_which_has_none():
    found = problems(["trainer.max_grad_norm=0.5"])
    assert "no gradient clipping" in found["trainer.max_grad_norm"]
    load_config(["trainer.max_grad_norm=0.5", "skyrl.engine=fsdp", "resources.gpus_per_node=1"], notify=quiet)


def test_what_skyrls_tinker_mode_builder_would_override_is_refused_with_the_reason():
    gpu = ["skyrl.engine=fsdp", "resources.gpus_per_node=1"]
    found = problems([*gpu, "skyrl.train.trainer.policy.optimizer_config.num_warmup_steps=10"])
    assert "algorithm.warmup_steps_ratio" in found["skyrl.train.trainer.policy.optimizer_config.num_warmup_steps"]
    found = problems([*gpu, "skyrl.train.trainer.critic.model.path=/models/critic"])
    assert "trains no critic" in found["skyrl.train.trainer.critic.model.path"]
    found = problems([*gpu, "skyrl.train.trainer.placement.ref_num_gpus_per_node=2"])
    assert "no reference model" in found["skyrl.train.trainer.placement.ref_num_gpus_per_node"]
    found = problems([*gpu, "algorithm.use_kl_loss=true"])
    assert "turns its KL loss off" in found["algorithm.use_kl_loss"]
    # The policy's lr schedule is the loop's: cosine is honoured, not refused.
    load_config([*gpu, "algorithm.lr_schedule=cosine"], notify=quiet)


def test_a_sweep_dimension_over_a_native_key_the_engine_does_not_read_fails_the_dry_run():
    from rllm_sweeps.sweep.planner import plan_sweep

    with pytest.raises(SweepError) as info:
        plan_sweep(["skyrl.train.trainer.algorithm.policy_loss_type=regular,gspo,dual_clip"])
    message = str(info.value)
    assert "2 of 3 jobs are invalid" in message
    assert "policy_loss_type='gspo'" in message and "fsdp or megatron" in message
    # The same sweep on SkyRL's GPU trainer is three different trainings.
    plan = plan_sweep(
        [
            "skyrl.train.trainer.algorithm.policy_loss_type=regular,gspo,dual_clip",
            "skyrl.engine=fsdp",
            "resources.gpus_per_node=1",
        ]
    )
    assert len(plan.jobs) == 3 and len({j.config_hash for j in plan.jobs}) == 3


def test_a_sweep_file_that_fixes_an_unread_native_key_fails_the_dry_run(tmp_path):
    from rllm_sweeps.sweep.planner import plan_sweep

    path = tmp_path / "native.yaml"
    path.write_text(
        "parameters:\n  trainer.lr: {values: [1.0e-3, 3.0e-3]}\n"
        "  skyrl.train.trainer.algorithm.sapo.tau_pos: {value: 1.0}\n"
    )
    with pytest.raises(SweepError, match=r"sapo.tau_pos=1.0 is not read by skyrl.engine=jax"):
        plan_sweep([f"+sweep={path}"])


def test_a_skyrl_user_picks_the_megatron_engine_with_skyrls_own_strategy_key():
    merge = "skyrl.train.trainer.policy.megatron_config.lora_config.merge_lora=false"  # gpu_trainer_rules.py
    cfg = load_config(["skyrl.train.trainer.strategy=megatron", "resources.gpus_per_node=1", merge], notify=quiet)
    assert cfg.skyrl.engine == "megatron"
    # SkyRL's old name for fsdp means the fsdp engine (validate_cfg: "renamed to 'fsdp'").
    cfg = load_config(["skyrl.engine=fsdp", "skyrl.train.trainer.strategy=fsdp2", "resources.gpus_per_node=1"])
    assert cfg.skyrl.engine == "fsdp" and cfg.skyrl.train.trainer.strategy == "fsdp"


def test_ray_actor_options_carry_the_jax_cache_settings_and_the_users_own_variables_win():
    from rllm_sweeps.training.jax_backend import jax_cache_settings, with_jax_cache_env

    user = {"num_cpus": 2, "runtime_env": {"env_vars": {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "5", "A": "1"}}}
    options = with_jax_cache_env(user, "/c/jax")
    assert options["num_cpus"] == 2
    assert options["runtime_env"]["env_vars"] == {
        "JAX_COMPILATION_CACHE_DIR": "/c/jax",
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "5",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        "A": "1",
    }
    assert user["runtime_env"]["env_vars"] == {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "5", "A": "1"}
    assert set(jax_cache_settings("/c")) == {name.lower() for name in options["runtime_env"]["env_vars"]} - {"a"}
