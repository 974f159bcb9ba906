"""SkyRL's own example scripts (tests/data/skyrl_examples: the overrides each script passes, taken
from NovaSky-AI/SkyRL) compose and validate verbatim, no prefix, with only `skyrl.engine=fsdp` and
`trainer.logger=console` added (the scripts log to wandb, "change to console to print to stdout").

The rule (config/setting_effect.py): a setting is refused only when what runs would differ from what
SkyRL does with it; what SkyRL itself ignores in that configuration is accepted with one note saying
why. No script has a refused setting, and each accepted setting that changes nothing is asserted with its
note. (bench/skyrl_examples_all.py composes them with local model and data paths too: docs/BENCHMARKS.md.)

Left out, and only these: the scripts' data lines and the environment that goes with them
(`data.train_data`, `data.val_data`, `environment.env_class`). Their files are not on this machine,
and a dataset by path is checked with the model's tokenizer (prompt lengths), which needs the scripts'
hub model (Qwen2.5-1.5B), not downloadable here either; data by path is tests/test_data_jobs.py's.
Without a dataset, environment.env_class is refused (the task's reward decides): left out with them.

The four scripts with a KL term (gsm8k, gspo: the KL loss; rloo, reinforce++: the KL in the reward)
compose whole on fsdp with their KL on: the KL's reference there is SkyRL's own FSDP reference worker group
(engines/skyrl_reference.py), placed by the scripts' own trainer.placement.ref_* settings, which are read; on
skyrl.engine=megatron (their strategy line says megatron there, and vLLM takes Megatron's LoRA unmerged:
merge_lora=false) it is an untrained second LoRA adapter. 7 of 7 compose on fsdp, none refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from rllm_sweeps.config.load import load_config

pytestmark = pytest.mark.slow  # composes SkyRL's example command lines through Hydra and SkyRL

EXAMPLES = Path(__file__).parent / "data" / "skyrl_examples"
CONSOLE = "trainer.logger=console"

# script -> what the common keys say (and the KL term it turns on, checked below)
CASES = {
    "run_gsm8k": {"algorithm.adv_estimator": "grpo", "algorithm.loss_fn": "ppo", "algorithm.use_kl_loss": True},
    "run_rloo": {"algorithm.adv_estimator": "rloo", "skyrl.train.trainer.algorithm.use_kl_in_reward": True},
    "run_dapo_gsm8k": {
        "algorithm.loss_agg_mode": "token_mean_legacy",  # SkyRL's name, honoured as it is
        "algorithm.loss_fn": "dual_clip",
        "algorithm.eps_clip": 0.2,
        "algorithm.eps_clip_high": 0.28,
        "rollout.val.top_p": 0.7,
        "skyrl.train.trainer.algorithm.overlong_buffer_len": 512,  # DAPO's example's own setting
        "skyrl.train.trainer.algorithm.dynamic_sampling.type": "filter",
    },
    "run_drgrpo_gsm8k": {
        "algorithm.loss_agg_mode": "seq-mean-token-sum-norm",
        "algorithm.norm_adv_by_std_in_grpo": False,
    },
    "run_gspo_gsm8k": {
        "algorithm.loss_fn": "gspo",
        "algorithm.loss_agg_mode": "seq-mean-token-mean",
        "algorithm.use_kl_loss": True,
    },
    "run_cispo_gsm8k": {"algorithm.loss_fn": "cispo"},
    "run_reinforce++": {
        "algorithm.adv_estimator": "reinforce++",  # SkyRL's estimator, not rLLM's reinforce
        "skyrl.train.trainer.algorithm.use_kl_in_reward": True,
    },
}

# Settings SkyRL ignores in these configurations -> the words of their note.
BATCHED = "the workflows batch their sampling anyway"
NO_REF = "no KL term uses a reference model"
NO_CRITIC = "trains no critic"
JOB_FILES = "the job keeps SkyRL's own files in JOB_DIR/skyrl/"
NOTES = {
    "run_gsm8k": {
        "generator.batched": BATCHED,
        "trainer.placement.critic_num_gpus_per_node": NO_CRITIC,
        "trainer.log_path": JOB_FILES,
        "trainer.ckpt_path": JOB_FILES,
    },
    "run_rloo": {
        "generator.batched": BATCHED,
        "trainer.ckpt_path": JOB_FILES,
    },
    "run_dapo_gsm8k": {
        "generator.batched": BATCHED,
        "trainer.placement.ref_num_gpus_per_node": NO_REF,
        "trainer.ckpt_path": JOB_FILES,
    },
    "run_drgrpo_gsm8k": {
        "generator.batched": BATCHED,
        "trainer.placement.ref_num_gpus_per_node": NO_REF,
        "trainer.ckpt_path": JOB_FILES,
    },
    "run_gspo_gsm8k": {
        "generator.batched": BATCHED,
        "trainer.placement.critic_num_gpus_per_node": NO_CRITIC,
        "trainer.log_path": JOB_FILES,
        "trainer.ckpt_path": JOB_FILES,
    },
    "run_cispo_gsm8k": {"generator.batched": BATCHED, "trainer.ckpt_path": JOB_FILES},
    "run_reinforce++": {
        "generator.batched": BATCHED,
        "trainer.ckpt_path": JOB_FILES,
    },
}


WITH_THE_DATA = ("data.train_data", "data.val_data", "environment.env_class")


def script_overrides(name: str) -> list[str]:
    """The script's overrides as it passes them, but for its data (WITH_THE_DATA)."""
    lines = [line for line in (EXAMPLES / f"{name}.txt").read_text().splitlines() if line and not line.startswith("#")]
    return [line for line in lines if line.split("=", 1)[0] not in WITH_THE_DATA]


@pytest.mark.parametrize("name", sorted(CASES))
def test_skyrls_example_script_validates_verbatim_on_fsdp_with_nothing_refused(name):
    overrides = ["skyrl.engine=fsdp", *script_overrides(name), CONSOLE]
    notes: list[str] = []
    cfg = load_config(overrides, notify=notes.append)
    assert cfg.model.path == "Qwen/Qwen2.5-1.5B-Instruct" and cfg.rollout.n == 5
    assert cfg.data.train_batch_size == 1024 and cfg.trainer.mini_batch_size == 256
    assert cfg.resources.gpus_per_node == 4
    for key, value in CASES[name].items():
        assert _select(cfg, key) == value, f"{key}={_select(cfg, key)!r}, expected {value!r}"
    unused = {n.split(" ")[1].split("=")[0].removeprefix("skyrl.train."): n for n in notes if "changes nothing" in n}
    assert set(unused) == set(NOTES[name]), "\n".join(notes)
    for key, words in NOTES[name].items():
        assert words in unused[key], unused[key]
        assert sum(key + "=" in n for n in notes) == 1, notes  # one note each


def _select(cfg, key: str):
    from omegaconf import OmegaConf

    return OmegaConf.select(cfg, key)


KL_SCRIPTS = {"run_gsm8k": "loss", "run_gspo_gsm8k": "loss", "run_rloo": "reward", "run_reinforce++": "reward"}
MERGE_LORA = "skyrl.train.trainer.policy.megatron_config.lora_config.merge_lora=false"


@pytest.mark.parametrize("name", sorted(KL_SCRIPTS))
def test_skyrls_kl_example_scripts_compose_whole_on_megatron_with_their_kl_on(name):
    assert set(KL_SCRIPTS) == {n for n, common in CASES.items() if any("use_kl" in k for k in common)}
    script = [o.replace("trainer.strategy=fsdp", "trainer.strategy=megatron") for o in script_overrides(name)]
    notes: list[str] = []
    cfg = load_config(["skyrl.engine=megatron", *script, CONSOLE, MERGE_LORA], notify=notes.append)
    on = {"loss": cfg.algorithm.use_kl_loss, "reward": cfg.skyrl.train.trainer.algorithm.use_kl_in_reward}
    assert on[KL_SCRIPTS[name]] is True
    assert not any("use_kl" in n and "changes nothing" in n for n in notes), notes
