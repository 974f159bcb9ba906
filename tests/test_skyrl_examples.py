"""SkyRL's own example scripts (tests/data/skyrl_examples: the overrides each script passes, taken
from NovaSky-AI/SkyRL) compose verbatim, no prefix, with only `skyrl.engine=fsdp` added.

What this project's engines do not read is refused by name with the reason, all at once (SkyRL's
generator settings belong to SkyRL's own PPO loop, which the loop here replaces; its data files are
read, but the scripts' paths are not on this machine;
no critic or reference model is built in Tinker mode; the DAPO example's own config additions are
not SkyRL's). With those removed, the rest composes, validates, and the common keys report what
the native overrides set."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_problems import quiet

from rllm_sweeps.config.issues import ConfigError
from rllm_sweeps.config.load import load_config

pytestmark = pytest.mark.slow  # composes SkyRL's example command lines through Hydra and SkyRL

EXAMPLES = Path(__file__).parent / "data" / "skyrl_examples"
# The scripts log to wandb ('change to "console" to print to stdout', they say); no wandb here.
CONSOLE = "trainer.logger=console"

# Why a key is refused -> the words its message must hold.
REASONS = {
    "SkyRL's own generator and PPO loop": "belongs to SkyRL's own generator and PPO loop",
    "SkyRL's PPO loop only": "only SkyRL's own PPO loop reads it",
    "no critic": "the loop trains no critic",
    "no reference model": "builds no reference model",
    "Tinker mode's KL": "turns its KL loss off",
    "not SkyRL's": "is not SkyRL's",
    "no such file": "no such file",
}

# script -> (refused key -> reason), and what the common keys say once the rest composes.
CASES = {
    "run_gsm8k": (
        {
            "algorithm.use_kl_loss": "Tinker mode's KL",
            "skyrl.train.trainer.placement.critic_num_gpus_per_node": "no critic",
        },
        {"algorithm.adv_estimator": "grpo", "algorithm.loss_fn": "ppo"},
    ),
    "run_rloo": (
        {"skyrl.train.trainer.algorithm.use_kl_in_reward": "SkyRL's PPO loop only"},
        {"algorithm.adv_estimator": "rloo"},
    ),
    "run_dapo_gsm8k": (
        {
            "trainer.algorithm.overlong_buffer_len": "not SkyRL's",
            "trainer.algorithm.overlong_buffer_penalty_factor": "not SkyRL's",
            "skyrl.train.generator.apply_overlong_filtering": "SkyRL's own generator and PPO loop",
            "skyrl.train.trainer.algorithm.dynamic_sampling.max_sample_batches": "SkyRL's PPO loop only",
        },
        {
            "algorithm.loss_agg_mode": "token_mean_legacy",  # SkyRL's name, honoured as it is
            "algorithm.loss_fn": "dual_clip",
            "algorithm.eps_clip": 0.2,
            "algorithm.eps_clip_high": 0.28,
            "rollout.val.top_p": 0.7,
        },
    ),
    "run_drgrpo_gsm8k": (
        {},
        {"algorithm.loss_agg_mode": "seq-mean-token-sum-norm", "algorithm.norm_adv_by_std_in_grpo": False},
    ),
    "run_gspo_gsm8k": (
        {
            "algorithm.use_kl_loss": "Tinker mode's KL",
            "skyrl.train.trainer.placement.critic_num_gpus_per_node": "no critic",
        },
        {"algorithm.loss_fn": "gspo", "algorithm.loss_agg_mode": "seq-mean-token-mean"},
    ),
    "run_cispo_gsm8k": ({}, {"algorithm.loss_fn": "cispo"}),
    "run_reinforce++": (
        {"skyrl.train.trainer.algorithm.use_kl_in_reward": "SkyRL's PPO loop only"},
        {"algorithm.adv_estimator": "reinforce++"},  # SkyRL's estimator, not rLLM's reinforce
    ),
}
# Refused in every script: its data files (read, but not on this machine), SkyRL's generator loop,
# its PPO epochs.
EVERY_SCRIPT = {
    "data.train_files": "no such file",
    "data.val_files": "no such file",
    "skyrl.train.generator.batched": "SkyRL's own generator and PPO loop",
    "skyrl.train.trainer.update_epochs_per_batch": "SkyRL's PPO loop only",
}
# What goes with the data when it is left out: SkyRL's names of the data files, their environment.
WITH_THE_DATA = {"data.train_data", "data.val_data", "environment.env_class"}
REF_GPUS = {"skyrl.train.trainer.placement.ref_num_gpus_per_node": "no reference model"}  # all but CISPO's


def script_overrides(name: str) -> list[str]:
    lines = (EXAMPLES / f"{name}.txt").read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_skyrls_example_script_composes_verbatim_with_what_no_engine_reads_refused_by_name(name):
    refused, expected = CASES[name]
    refused = {**EVERY_SCRIPT, **({} if name == "run_cispo_gsm8k" else REF_GPUS), **refused}
    overrides = ["skyrl.engine=fsdp", *script_overrides(name), CONSOLE]
    with pytest.raises(ConfigError) as info:
        load_config(overrides, notify=quiet)
    found = {i.key: i.message for i in info.value.issues}
    assert set(found) == set(refused), "\n".join(found.values())
    for key, reason in refused.items():
        assert key in found[key] and REASONS[reason] in found[key], found[key]

    dropped = {k.removeprefix("skyrl.train.") for k in refused} | {"trainer.algorithm.use_kl_loss", *WITH_THE_DATA}
    kept = [o for o in overrides if o.split("=", 1)[0] not in dropped]
    cfg = load_config(kept, notify=quiet)
    assert cfg.model.path == "Qwen/Qwen2.5-1.5B-Instruct" and cfg.rollout.n == 5
    assert cfg.data.train_batch_size == 1024 and cfg.trainer.mini_batch_size == 256
    assert cfg.resources.gpus_per_node == 4
    for key, value in expected.items():
        assert _select(cfg, key) == value, f"{key}={_select(cfg, key)!r}, expected {value!r}"


def _select(cfg, key: str):
    from omegaconf import OmegaConf

    return OmegaConf.select(cfg, key)
