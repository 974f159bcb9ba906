"""The rule of config/setting_effect.py, one condition per test (pure: a plain config in, an effect out)."""

from __future__ import annotations

from rllm_sweeps.config.setting_effect import Kind, setting_effect

T = "skyrl.train."


def plain(engine="fsdp", loss="ppo", estimator="grpo", use_kl_loss=False, agg="token-mean", **algorithm):
    return {
        "skyrl": {"engine": engine, "train": {"trainer": {"algorithm": algorithm}}},
        "algorithm": {"loss_fn": loss, "adv_estimator": estimator, "use_kl_loss": use_kl_loss, "loss_agg_mode": agg},
        "model": {"path": "builtin:tiny-qwen3"},
        "data": {"train_files": None},
    }


def kind(key, value, cfg):
    return setting_effect(key, value, cfg).kind


def test_critic_settings_change_nothing_when_the_estimator_trains_no_critic():
    for key in (
        "trainer.critic.optimizer_config.lr",
        "trainer.placement.critic_num_gpus_per_node",
        "trainer.algorithm.value_clip",
    ):
        effect = setting_effect(T + key, 1, plain())
        assert effect.kind is Kind.UNUSED and "trains no critic" in effect.why


def test_reference_settings_change_nothing_without_a_kl_term():
    effect = setting_effect(T + "trainer.placement.ref_num_gpus_per_node", 4, plain())
    assert effect.kind is Kind.UNUSED and "no KL term uses a reference model" in effect.why
    assert kind(T + "trainer.placement.colocate_policy_ref", False, plain()) is Kind.UNUSED


def test_kl_in_reward_is_read_on_every_engine():
    for engine in ("jax", "fsdp", "megatron"):
        assert kind(T + "trainer.algorithm.use_kl_in_reward", True, plain(engine=engine)) is Kind.READ


def test_reference_settings_are_read_on_fsdp_with_a_kl_term_where_skyrls_reference_worker_reads_them():
    for key, value in (
        ("trainer.placement.ref_num_gpus_per_node", 4),
        ("trainer.ref.fsdp_config.cpu_offload", True),
        ("trainer.ref.sequence_parallel_size", 2),
    ):
        assert kind(T + key, value, plain(engine="fsdp", use_kl_loss=True)) is Kind.READ
        assert kind(T + key, value, plain(engine="fsdp", use_kl_in_reward=True)) is Kind.READ
        # jax and megatron: the reference is an untrained adapter in the policy's own workers
        effect = setting_effect(T + key, value, plain(engine="megatron", use_kl_loss=True))
        assert effect.kind is Kind.UNUSED and "untrained second LoRA adapter" in effect.why


def test_colocate_policy_ref_changes_nothing_on_fsdp_while_everything_is_colocated():
    effect = setting_effect(T + "trainer.placement.colocate_policy_ref", False, plain(use_kl_loss=True))
    assert effect.kind is Kind.UNUSED and "only with trainer.placement.colocate_all=false" in effect.why


def test_updating_the_reference_every_epoch_is_refused_with_a_kl_term_the_loops_reference_stays_the_base():
    for engine in ("jax", "fsdp", "megatron"):
        effect = setting_effect(T + "trainer.update_ref_every_epoch", True, plain(engine=engine, use_kl_loss=True))
        assert effect.kind is Kind.REFUSED and "stays the base model" in effect.why
    assert kind(T + "trainer.update_ref_every_epoch", True, plain()) is Kind.UNUSED  # no KL term


def test_kl_estimator_and_controller_change_nothing_without_kl():
    assert kind(T + "trainer.algorithm.kl_estimator_type", "k2", plain()) is Kind.UNUSED
    assert kind(T + "trainer.algorithm.kl_ctrl.type", "adaptive", plain()) is Kind.UNUSED
    on = plain(engine="jax", use_kl_in_reward=True)
    assert kind(T + "trainer.algorithm.kl_estimator_type", "k2", on) is Kind.READ
    assert kind(T + "trainer.algorithm.kl_ctrl.type", "adaptive", on) is Kind.READ


def test_the_parameters_of_a_policy_loss_that_is_not_selected_change_nothing():
    for key, loss in (
        ("sapo.tau_pos", "sapo"),
        ("clip_cov.clip_ratio", "clip_cov"),
        ("kl_cov.kl_cov_frac", "kl_cov"),
        ("cispo.cispo_eps_clip_low", "cispo"),
        ("dppo.delta_low", "dppo"),
        ("clip_ratio_c", "dual_clip"),
    ):
        full = T + "trainer.algorithm." + key
        effect = setting_effect(full, 0.5, plain(loss="ppo"))
        assert effect.kind is Kind.UNUSED and loss in effect.why, key
        assert kind(full, 0.5, plain(loss=loss)) is Kind.READ, key
        assert kind(full, 0.5, plain(engine="jax", loss=loss)) is Kind.READ, key  # the custom-loss route


def test_off_policy_corrections_change_nothing_since_the_old_logprobs_are_the_samplers():
    for key, value in (
        ("use_tis", True),
        ("off_policy_correction.tis_ratio_type", "token"),
        ("tis_imp_ratio_cap", 2.0),
    ):
        for engine in ("jax", "fsdp"):
            effect = setting_effect(T + "trainer.algorithm." + key, value, plain(engine=engine))
            assert effect.kind is Kind.UNUSED and "exactly 1" in effect.why


def test_a_mask_whose_bounds_exclude_a_ratio_of_one_is_refused():
    opc = {"sequence_mask_metric": "geometric", "geo_mask_low": 1.05, "geo_mask_high": 1.1}
    effect = setting_effect(
        T + "trainer.algorithm.off_policy_correction.geo_mask_low", 1.05, plain(off_policy_correction=opc)
    )
    assert effect.kind is Kind.REFUSED and "mask every sequence" in effect.why


def test_entropy_loss_is_read_by_skyrls_gpu_workers_and_refused_on_jax():
    assert kind(T + "trainer.algorithm.use_entropy_loss", True, plain(engine="fsdp")) is Kind.READ
    assert kind(T + "trainer.algorithm.use_entropy_loss", True, plain(engine="megatron")) is Kind.READ
    effect = setting_effect(T + "trainer.algorithm.use_entropy_loss", True, plain(engine="jax"))
    assert effect.kind is Kind.REFUSED and "only the sampled tokens' log-probabilities" in effect.why
    assert kind(T + "trainer.algorithm.entropy_loss_coef", 0.1, plain()) is Kind.UNUSED  # entropy off
    assert kind(T + "trainer.algorithm.entropy_loss_coef", 0.1, plain(use_entropy_loss=True)) is Kind.READ


def test_generator_batched_and_output_only_paths_change_nothing():
    effect = setting_effect(T + "generator.batched", True, plain())
    assert effect.kind is Kind.UNUSED and "batch their sampling" in effect.why
    effect = setting_effect(T + "trainer.export_path", "/x", plain())
    assert effect.kind is Kind.UNUSED and "JOB_DIR/skyrl/exports" in effect.why
    assert kind(T + "trainer.dump_eval_results", False, plain()) is Kind.UNUSED


def test_dynamic_sampling_parts_change_nothing_without_their_strategy():
    key = T + "trainer.algorithm.dynamic_sampling.max_sample_batches"
    assert kind(key, 10, plain()) is Kind.UNUSED
    assert kind(key, 10, plain(dynamic_sampling={"type": "filter"})) is Kind.READ
    ratio = T + "trainer.algorithm.dynamic_sampling.min_replace_ratio"
    assert kind(ratio, 0.5, plain(dynamic_sampling={"type": "filter"})) is Kind.UNUSED
    assert kind(ratio, 0.5, plain(dynamic_sampling={"type": "replace"})) is Kind.READ


def test_settings_that_only_skyrls_ppo_loop_reads_are_refused_with_the_reason():
    effect = setting_effect(T + "trainer.fully_async.enabled", True, plain())
    assert effect.kind is Kind.REFUSED and "synchronously" in effect.why
    effect = setting_effect(T + "generator.zero_reward_on_non_stop", True, plain())
    assert effect.kind is Kind.REFUSED and "SkyRL's own generator and PPO loop" in effect.why


def test_the_engines_own_settings_change_nothing_on_the_other_engines():
    assert kind(T + "trainer.policy.fsdp_config.cpu_offload", True, plain(engine="fsdp")) is Kind.READ
    assert kind(T + "trainer.policy.fsdp_config.cpu_offload", True, plain(engine="jax")) is Kind.UNUSED
    assert kind(T + "generator.inference_engine.gpu_memory_utilization", 0.5, plain(engine="jax")) is Kind.UNUSED
    assert kind("skyrl.jax.loss_chunk_size", 512, plain(engine="jax")) is Kind.READ
    assert kind("skyrl.jax.loss_chunk_size", 512, plain(engine="fsdp")) is Kind.UNUSED


def test_settings_the_loop_implements_are_read_on_every_engine():
    for engine in ("jax", "fsdp", "megatron"):
        assert kind(T + "trainer.update_epochs_per_batch", 2, plain(engine=engine)) is Kind.READ
        assert kind(T + "generator.apply_overlong_filtering", True, plain(engine=engine)) is Kind.READ
