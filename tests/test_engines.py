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

from rllm_sweeps.config.engine_names import ENGINES, GPU_TRAINER
from rllm_sweeps.config.gpu_trainer_rules import MERGE_LORA
from rllm_sweeps.config.load import load_config
from rllm_sweeps.engines import ALL_ENGINES, JaxEngine, RayJaxEngine, SkyRLTrainEngine, engine_of, readers
from rllm_sweeps.keymap import KEY_MAPPINGS
from rllm_sweeps.sweep.spec import SweepError

pytestmark = pytest.mark.slow  # composes the real config tree through Hydra and SkyRL; some run train.py

REPO = Path(__file__).resolve().parents[1]
ENTROPY = "skyrl.train.trainer.algorithm.use_entropy_loss=true"  # SkyRL's trainer only


# ---- the table -------------------------------------------------------------------------------


def test_every_mapped_native_key_is_read_by_the_engines_that_read_its_common_key():
    for m in KEY_MAPPINGS:
        expected = ("jax",) if m.native.startswith("skyrl.jax.") else readers(m.common)
        assert readers(m.native) == expected, m.native


def test_the_jax_backend_settings_are_read_by_jax_only_and_the_gpu_trainer_tree_by_fsdp_and_megatron():
    assert readers("skyrl.jax.loss_chunk_size") == ("jax",)
    assert readers("skyrl.train.generator.inference_engine.gpu_memory_utilization") == GPU_TRAINER
    # the loop reads these native keys itself, on every engine
    assert readers("skyrl.train.generator.sampling_params.top_k") == ENGINES
    # SkyRL's data files: read through their common key on every engine (data by path); its own
    # generator's environment settings are read only with data by path (config/engine_settings.py), not as such
    assert readers("skyrl.train.data.train_data") == ENGINES
    assert readers("skyrl.train.environment.env_class") == ()
    # common keys an engine cannot honour
    assert readers("trainer.max_grad_norm") == ENGINES  # every engine, RayJaxBackend included
    assert readers("trainer.adam_eps") == ("jax",)
    assert readers("trainer.lr") == ENGINES
    # SkyRL's own PPO loop's settings, which its backend code never names: derived from SkyRL
    assert readers("skyrl.train.trainer.hf_save_interval") == ()
    assert readers("skyrl.train.trainer.algorithm.use_tis") == ()
    assert readers("skyrl.train.trainer.policy.fsdp_config.cpu_offload") == GPU_TRAINER


def test_every_engine_name_has_its_class_and_the_config_chooses_it():
    assert tuple(dict.fromkeys(e.name for e in ALL_ENGINES)) == ENGINES
    chosen = {
        (name, use_ray): type(engine_of({"skyrl": {"engine": name, "jax": {"use_ray": use_ray}}}))
        for name in ENGINES
        for use_ray in (False, True)
    }
    assert chosen[("jax", False)] is JaxEngine and chosen[("jax", True)] is RayJaxEngine
    assert {chosen[(n, r)] for n in GPU_TRAINER for r in (False, True)} == {SkyRLTrainEngine}
    # Ray only where the backend runs on it; the reduction the loop scales advantages for
    assert [e.uses_ray for e in ALL_ENGINES] == [False, True, True, True]
    assert [e.traits.backend_reduction for e in ALL_ENGINES] == ["seq-mean-token-mean"] * 2 + ["token-sum"] * 2
    # Every engine clips: RayJaxBackend's workers too, with our AdamW installed in each (optimizer.py)
    assert [e.reads("trainer.max_grad_norm") for e in ALL_ENGINES] == [True, True, True, True]


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
    assert rows["skyrl.train.trainer.policy.optimizer_config.max_grad_norm"] == "jax,fsdp,megatron"
    assert "skyrl.train.generator.sampling_params.top_k" in proc.stdout  # a native key the loop reads
    assert "lambda" not in proc.stdout


# ---- refusals --------------------------------------------------------------------------------


def test_a_setting_the_jax_engine_cannot_honour_stops_train_py_before_any_model_or_ray_starts(tmp_path):
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(REPO / "train.py"), ENTROPY], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "skyrl.train.trainer.algorithm.use_entropy_loss=True" in proc.stderr
    assert "skyrl.engine=jax" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []  # no job directory, no checkpoint, no Ray session
    assert time.monotonic() - start < 60


def notes_of(overrides: list[str]) -> list[str]:
    notes: list[str] = []
    load_config(overrides, notify=notes.append)
    return [n for n in notes if "changes nothing" in n]


def test_a_gpu_trainer_setting_on_jax_is_accepted_with_one_note_saying_jax_does_not_start_that_trainer():
    # SkyRL's JAX backend ignores its GPU trainer's worker settings: what runs is the same.
    notes = notes_of(["skyrl.train.trainer.policy.fsdp_config.cpu_offload=true"])
    assert len(notes) == 1 and "skyrl.train.trainer.policy.fsdp_config.cpu_offload=True" in notes[0]
    assert "which skyrl.engine=jax does not start" in notes[0]


def test_a_policy_losss_parameter_is_accepted_with_a_note_when_another_loss_is_selected_even_at_its_default():
    # Named by the user = meant to matter: a note even when it equals SkyRL's default.
    for value in ("2.0", "1.0"):
        notes = notes_of([f"skyrl.train.trainer.algorithm.sapo.tau_pos={value}"])
        assert len(notes) == 1 and "a parameter of the sapo policy loss" in notes[0] and "loss_fn=ppo" in notes[0]


def test_a_key_of_skyrls_own_generator_is_refused_on_every_engine_with_the_reason():
    for engine in (["skyrl.engine=jax"], ["skyrl.engine=fsdp", "resources.gpus_per_node=1"]):
        found = problems([*engine, "skyrl.train.environment.env_class=aime"])
        assert "SkyRL's own generator and PPO loop" in found["skyrl.train.environment.env_class"]
        assert "task.*" in found["skyrl.train.environment.env_class"]
        found = problems([*engine, "skyrl.train.generator.zero_reward_on_non_stop=true"])
        assert "this project's loop replaces" in found["skyrl.train.generator.zero_reward_on_non_stop"]


def test_jax_backend_settings_change_nothing_on_the_gpu_trainer_and_adam_eps_is_refused_there():
    notes = notes_of(
        [
            "skyrl.engine=megatron",
            "resources.gpus_per_node=1",
            "skyrl.jax.loss_chunk_size=7",
            "skyrl.train.trainer.policy.megatron_config.lora_config.merge_lora=false",
        ]
    )
    assert len(notes) == 1 and "skyrl.jax.loss_chunk_size=7" in notes[0] and "does not start" in notes[0]
    found = problems(["skyrl.engine=fsdp", "resources.gpus_per_node=1", "trainer.adam_eps=1e-6"])
    assert "torch's eps" in found["trainer.adam_eps"]


def test_gradient_clipping_is_accepted_on_both_jax_backends_whose_processes_all_train_with_our_adamw():
    # In-process and in each RayJaxBackend worker (optimizer.py; test_job.py's use_ray job a trains so).
    load_config(["trainer.max_grad_norm=0.5"], notify=quiet)
    load_config(["trainer.max_grad_norm=0.5", "skyrl.jax.use_ray=true"], notify=quiet)
    load_config(["trainer.max_grad_norm=0.5", "skyrl.engine=fsdp", "resources.gpus_per_node=1"], notify=quiet)


def test_what_skyrls_tinker_mode_builder_would_override_is_refused_and_what_it_ignores_gets_a_note():
    gpu = ["skyrl.engine=fsdp", "resources.gpus_per_node=1"]
    # The builder pins the warmup to 0, but the loop sets each step's lr from it (tests/test_recipes_as_written.py)
    load_config([*gpu, "skyrl.train.trainer.policy.optimizer_config.num_warmup_steps=10"], notify=quiet)
    # The builder turns SkyRL's KL loss off: the loop adds SkyRL's KL term as a custom loss, against SkyRL's
    # reference worker group on fsdp (engines/skyrl_reference.py) and the reference adapter on megatron.
    megatron = ["skyrl.engine=megatron", "resources.gpus_per_node=1", MERGE_LORA + "=false"]
    for engine in (gpu, megatron):
        cfg = load_config([*engine, "algorithm.use_kl_loss=true", "algorithm.kl_beta=0.01"], notify=quiet)
        assert cfg.algorithm.use_kl_loss is True
    # SkyRL builds no critic for grpo and no reference model without a KL term: the same run.
    notes = notes_of([*gpu, "skyrl.train.trainer.critic.optimizer_config.lr=1e-5"])
    assert len(notes) == 1 and "trains no critic" in notes[0]
    notes = notes_of([*gpu, "skyrl.train.trainer.placement.ref_num_gpus_per_node=2"])
    assert len(notes) == 1 and "no KL term uses a reference model" in notes[0]
    # The policy's lr schedule is the loop's: cosine is honoured, not refused.
    load_config([*gpu, "algorithm.lr_schedule=cosine"], notify=quiet)


def test_a_sweep_dimension_over_a_native_key_the_engine_cannot_honour_fails_the_dry_run():
    from rllm_sweeps.sweep.planner import plan_sweep

    with pytest.raises(SweepError) as info:
        plan_sweep([ENTROPY.replace("=true", "=false,true")])
    message = str(info.value)
    assert "1 of 2 jobs are invalid" in message
    assert "use_entropy_loss=True" in message and "skyrl.engine=jax" in message
    # Every SkyRL policy loss trains on jax (the ones its backend lacks as custom losses): three trainings.
    plan = plan_sweep(["skyrl.train.trainer.algorithm.policy_loss_type=regular,gspo,dual_clip"])
    assert len(plan.jobs) == 3 and len({j.config_hash for j in plan.jobs}) == 3


def test_a_sweep_file_that_fixes_a_setting_that_changes_nothing_plans_with_one_note(tmp_path):
    from rllm_sweeps.sweep.planner import plan_sweep

    path = tmp_path / "native.yaml"
    path.write_text(
        "parameters:\n  trainer.lr: {values: [1.0e-3, 3.0e-3]}\n"
        "  skyrl.train.trainer.algorithm.sapo.tau_pos: {value: 1.0}\n"
    )
    plan = plan_sweep([f"+sweep={path}"])
    assert len(plan.jobs) == 2
    assert sum("sapo.tau_pos=1.0 changes nothing" in n for n in plan.notes) == 1, plan.notes


def test_a_sweep_dimension_over_a_setting_that_changes_nothing_fails_the_dry_run(tmp_path):
    # identical jobs: the critic's lr with an estimator that trains no critic
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "train.py"),
            "-m",
            "skyrl.train.trainer.critic.optimizer_config.lr=1e-5,2e-5",
            "hydra.sweeper.dry_run=true",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "a sweep over skyrl.train.trainer.critic.optimizer_config.lr runs identical jobs" in proc.stderr
    assert "trains no critic" in proc.stderr and "Traceback" not in proc.stderr
    # A dimension that changes what runs in some of its jobs plans: kl_estimator_type with KL in reward on jax.
    from rllm_sweeps.sweep.planner import plan_sweep

    plan = plan_sweep(
        ["skyrl.train.trainer.algorithm.kl_estimator_type=k1,k2", "skyrl.train.trainer.algorithm.use_kl_in_reward=true"]
    )
    assert len(plan.jobs) == 2


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
