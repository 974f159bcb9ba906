"""rLLM's and SkyRL's value conventions, and the tree defects users hit: each accepted with its
meaning here or refused with what to write (issue: what users already type works)."""

from __future__ import annotations

import pytest
from config_problems import problems, quiet
from omegaconf import OmegaConf

from rllm_sweeps.config.load import load_config
from rllm_sweeps.training.settings import LoopSettings

GPU = ["skyrl.engine=fsdp", "resources.gpus_per_node=1"]


def settings(overrides: list[str]) -> LoopSettings:
    return LoopSettings.from_config(load_config(overrides, notify=quiet))


# ---- rLLM's conventions ----------------------------------------------------------------------


def test_rllms_minus_one_and_null_conventions_compose_with_rllms_meaning():
    s = settings(
        [
            "rllm.trainer.save_freq=-1",
            "rllm.trainer.total_batches=-1",
            "rllm.trainer.test_freq=0",
            "rllm.algorithm.eps_clip_high=null",
            "rllm.algorithm.lr_schedule=linear",
            "rllm.algorithm.loss_agg_mode=seq-mean-token-sum",
        ]
    )
    assert s.total_steps(train_size=64) == 64 // s.train_batch_size  # -1: off, the whole dataset
    assert s.clip_high_threshold == 1 + s.eps_clip  # null: symmetric
    assert s.save_freq == -1 and s.test_freq == 0


def test_linear_schedule_decays_to_zero_after_the_warmup():
    s = settings(["algorithm.lr_schedule=linear", "algorithm.warmup_steps_ratio=0.2", "trainer.lr=1.0"])
    lrs = [s.lr_at(step, 10) for step in range(10)]
    assert lrs[:2] == [0.5, 1.0]  # warmup over 2 steps
    assert lrs[2] == 1.0 and lrs[-1] == pytest.approx(1 / 8)
    assert all(a > b for a, b in zip(lrs[2:-1], lrs[3:], strict=True))


def test_kl_defaults_to_rllms_zero_and_to_skyrls_coefficient_once_the_kl_loss_is_on():
    assert load_config([], notify=quiet).algorithm.kl_beta == 0.0
    assert load_config(["algorithm.use_kl_loss=true"], notify=quiet).algorithm.kl_beta == 0.001
    cfg = load_config(["trainer.algorithm.use_kl_loss=true"], notify=quiet)  # SkyRL's spelling
    assert cfg.skyrl.train.trainer.algorithm.kl_loss_coef == 0.001


def test_a_kl_beta_without_the_kl_loss_says_to_turn_it_on():
    message = problems(["rllm.algorithm.kl_beta=0.01"])["algorithm.kl_beta"]
    assert "algorithm.use_kl_loss=true" in message


def test_a_minus_one_elsewhere_is_still_refused_with_the_range():
    message = problems(["trainer.save_freq=-2"])["trainer.save_freq"]
    assert "-2" in message and "-1 (off)" in message


# ---- SkyRL's values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("native", "common"),
    [
        ("token_mean_legacy", "token_mean_legacy"),  # SkyRL's DAPO example
        ("prompt_mean", "prompt_mean"),
        ("seq_mean_token_sum_norm", "seq-mean-token-sum-norm"),
        ("sequence_mean", "seq-mean-token-mean"),
    ],
)
def test_every_loss_reduction_skyrl_accepts_is_honoured_under_its_common_name(native, common):
    cfg = load_config([*GPU, f"trainer.algorithm.loss_reduction={native}"], notify=quiet)
    assert cfg.algorithm.loss_agg_mode == common
    assert cfg.skyrl.train.trainer.algorithm.loss_reduction == native


def test_rllm_only_values_pass_skyrls_own_checks_on_the_gpu_trainer():
    # The loop implements them; SkyRL's validate_cfg judges only what SkyRL's workers run.
    for override in ("algorithm.loss_agg_mode=seq-mean-token-sum", "algorithm.adv_estimator=reinforce"):
        cfg = load_config([*GPU, override], notify=quiet)
        assert OmegaConf.select(cfg, override.split("=")[0]) == override.split("=")[1]


@pytest.mark.parametrize("native", ["reinforce++", "maxrl", "rloo", "grpo"])
def test_skyrls_estimators_keep_their_own_names_and_meanings(native):
    cfg = load_config([f"trainer.algorithm.advantage_estimator={native}"], notify=quiet)
    assert cfg.algorithm.adv_estimator == native


def test_the_estimator_that_needs_a_critic_is_refused_with_why():
    assert "critic" in problems(["trainer.algorithm.advantage_estimator=gae"])["algorithm.adv_estimator"]


def test_skyrls_scheduler_names_are_the_loops_schedules():
    for native, common in (
        ("linear", "linear"),
        ("cosine_with_warmup", "cosine"),
        ("constant_with_warmup", "constant"),
    ):
        cfg = load_config([f"trainer.policy.optimizer_config.scheduler={native}"], notify=quiet)
        assert cfg.algorithm.lr_schedule == common
    message = problems(["trainer.policy.optimizer_config.scheduler=polynomial"])["algorithm.lr_schedule"]
    assert "constant, cosine, linear" in message


# ---- defects of the tree ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "mini"),
    [
        (["data.train_batch_size=1"], 1),
        (["data.train_batch_size=6"], 3),
        (
            [
                "skyrl.engine=fsdp",
                "resources.gpus_per_node=8",
                "resources.cpus_per_task=9",
                "data.train_batch_size=8",
                "rollout.n=5",
            ],
            8,
        ),
        (["skyrl.engine=fsdp", "resources.gpus_per_node=8"], 4),
    ],
)
def test_the_default_mini_batch_fits_a_batch_the_user_chose(overrides, mini):
    cfg = load_config(overrides, notify=quiet)  # validates, SkyRL's own checks included
    assert cfg.trainer.mini_batch_size == mini


def test_a_mini_batch_the_user_chose_is_still_checked():
    assert (
        "trainer.mini_batch_size"
        in problems(["data.train_batch_size=6", "trainer.mini_batch_size=4"])["data.train_batch_size"]
    )


def test_fsdp_on_eight_gpus_colocates_as_many_engines():
    cfg = load_config(["skyrl.engine=fsdp", "resources.gpus_per_node=8"], notify=quiet)
    assert cfg.skyrl.train.generator.inference_engine.num_engines == 8


def test_a_native_gpu_count_with_fsdp_is_adopted():
    cfg = load_config(["skyrl.engine=fsdp", "trainer.placement.policy_num_gpus_per_node=1"], notify=quiet)
    assert cfg.resources.gpus_per_node == 1


def test_dr_grpos_loss_aggregation_on_fsdp_gets_its_length_from_the_data():
    cfg = load_config(
        [*GPU, "algorithm.loss_agg_mode=seq-mean-token-sum-norm", "data.max_response_length=64"], notify=quiet
    )
    assert cfg.skyrl.train.trainer.algorithm.max_seq_len == 64


def test_unknown_keys_conflicts_types_ranges_and_cross_key_rules_are_reported_in_one_report():
    found = problems(
        [
            "trainer.lrr=1",  # unknown
            "trainer.seed=1",  # conflict with the native name below
            "skyrl.train.trainer.seed=2",
            "rollout.n=abc",  # type
            "trainer.lr=-1",  # range
            "data.train_batch_size=6",  # cross-key rule
            "trainer.mini_batch_size=4",
        ]
    )
    assert set(found) == {"trainer.lrr", "trainer.seed", "rollout.n", "trainer.lr", "data.train_batch_size"}


@pytest.mark.parametrize(
    "override",
    ["trainer.project_name=/an/absolute/dir", "trainer.project_name=.."],
)
def test_a_name_that_would_put_a_jobs_directory_elsewhere_is_refused(override):
    # trainer.experiment_name is a label (SkyRL's run_name): its directory is derived (tests/test_job_dirs.py)
    key = override.split("=")[0]
    assert "one directory name" in problems([override])[key]


def test_a_sweep_name_that_climbs_out_of_multirun_is_refused():
    from rllm_sweeps.sweep.parse_cli import parse_sweep
    from rllm_sweeps.sweep.spec import SweepError

    with pytest.raises(SweepError) as info:
        parse_sweep(["trainer.lr=1e-3,2e-3", "sweep.name=../../../x"])
    assert "one directory name" in str(info.value)
