"""SkyRL's and rLLM's recipes as written (issue 51, points 1 and 4-7), on the real composed config and SkyRL's
real config types: one key-map entry per SkyRL setting, SkyRL's free-form dictionaries open to any key, run
names with '/', SkyRL's defaults for a dataset by path, delta weight sync, Megatron's merge_lora, top-p/top-k
and warmup on the GPU engines, rLLM PR #407's trainer.val_max_samples."""

from __future__ import annotations

from collections import Counter

import pytest
from config_problems import problems, quiet
from omegaconf import OmegaConf

from rllm_sweeps.config.load import load_config
from rllm_sweeps.problems import ConfigError
from rllm_sweeps.training.settings import LoopSettings

FSDP = ["skyrl.engine=fsdp", "resources.gpus_per_node=1"]
MEGATRON = ["skyrl.engine=megatron", "resources.gpus_per_node=1"]
DATA = "tests/data/skyrl_gsm8k_small.jsonl"
BY_PATH = [f"data.train_data=['{DATA}']", f"data.val_data=['{DATA}']", "environment.env_class=gsm8k"]


def skyrl_config(cfg):
    """SkyRL's own typed config built from the composed tree (what fsdp/megatron hand SkyRL)."""
    from skyrl.train.config import SkyRLTrainConfig

    from rllm_sweeps.config.native import skyrl_own

    plain = OmegaConf.to_container(cfg.skyrl.train, resolve=True)
    return SkyRLTrainConfig.from_dict_config(OmegaConf.create(skyrl_own(plain)))


# ---- point 1: the key map -------------------------------------------------------------------


def test_no_two_skyrl_settings_share_one_common_key():
    from rllm_sweeps.keymap import KEY_MAPPINGS

    shared = {common for common, n in Counter(m.common for m in KEY_MAPPINGS).items() if n > 1}
    assert shared == set(), shared


def test_settings_skyrl_keeps_apart_are_set_apart_and_follow_their_default_otherwise():
    cfg = load_config(
        ["generator.eval_sampling_params.max_generate_length=300", "generator.sampling_params.max_generate_length=200"],
        notify=quiet,
    )
    settings = LoopSettings.from_config(cfg)
    assert (settings.max_response_length, settings.val_max_response_length) == (200, 300)
    follow = load_config(["rollout.train.temperature=0.7", "model.lora.rank=16"], notify=quiet)
    assert follow.skyrl.train.trainer.algorithm.temperature == 0.7
    assert follow.skyrl.jax.max_lora_rank == 16
    assert follow.skyrl.train.trainer.ref.model.path == follow.model.path
    assert LoopSettings.from_config(follow).val_max_response_length == follow.data.max_response_length


def test_a_setting_apart_that_the_loop_cannot_honour_is_refused_with_the_reason_not_merged():
    # Before: trainer.ref.model.path=X alone made X the policy; trainer.algorithm.temperature alone the sampler's.
    ref = "skyrl.train.trainer.ref.model.path"
    assert "base model" in problems(["trainer.ref.model.path=/elsewhere", "algorithm.use_kl_loss=true"])[ref]
    cfg = load_config(["trainer.ref.model.path=/elsewhere"], notify=quiet)  # no KL: SkyRL builds no reference
    assert cfg.model.path == "builtin:tiny-qwen3"
    temperature = "skyrl.train.trainer.algorithm.temperature"
    assert "sampler's log-probabilities" in problems(["trainer.algorithm.temperature=0.5"])[temperature]
    assert load_config(["trainer.algorithm.temperature=0.5", "rollout.train.temperature=0.5"], notify=quiet)
    assert "raise it" in problems(["skyrl.jax.max_lora_rank=4"])["model.lora.rank"]
    assert load_config(["skyrl.jax.max_lora_rank=32"], notify=quiet).model.lora.rank == 8


# ---- point 4: SkyRL's free-form dictionaries --------------------------------------------------


def test_skyrls_free_form_dictionaries_are_read_from_its_config_types():
    from skyrl.train.config import SkyRLTrainConfig

    from rllm_sweeps.config.free_form import dict_field_paths
    from rllm_sweeps.config.native import skyrl_free_form

    assert skyrl_free_form() == frozenset(dict_field_paths(SkyRLTrainConfig))
    assert {
        "generator.inference_engine.engine_init_kwargs",
        "generator.chat_template_kwargs",
        "trainer.policy.megatron_config.transformer_config_kwargs",
        "generator.sampling_params.additional_kwargs",
    } <= skyrl_free_form()


@pytest.mark.parametrize(
    "override",
    [
        "generator.inference_engine.engine_init_kwargs.max_model_len=4096",
        "+generator.inference_engine.engine_init_kwargs.max_model_len=4096",
        "generator.inference_engine.engine_init_kwargs={max_model_len:4096}",
        'generator.inference_engine.engine_init_kwargs={"max_model_len": 4096}',  # SkyRL's scripts: YAML/JSON
    ],
)
def test_any_key_of_a_free_form_dictionary_reaches_skyrl_unchanged_with_or_without_plus(override):
    cfg = load_config([*FSDP, override, "generator.chat_template_kwargs={reasoning_effort:low}"], notify=quiet)
    built = skyrl_config(cfg)
    kwargs = built.generator.inference_engine.engine_init_kwargs
    assert kwargs["max_model_len"] == 4096 and kwargs["logprobs_mode"] == "processed_logprobs"  # ours kept
    assert built.generator.chat_template_kwargs == {"reasoning_effort": "low"}


def test_nested_free_form_keys_reach_skyrl_on_megatron_and_vllm():
    cfg = load_config(
        [
            *MEGATRON,
            "trainer.policy.megatron_config.transformer_config_kwargs.recompute_granularity=full",
            "generator.inference_engine.engine_init_kwargs.kv_transfer_config.kv_connector=NixlConnector",
            "+generator.inference_engine.engine_init_kwargs.quantization=fp8",
        ],
        notify=quiet,
    )
    built = skyrl_config(cfg)
    assert built.trainer.policy.megatron_config.transformer_config_kwargs["recompute_granularity"] == "full"
    kwargs = built.generator.inference_engine.engine_init_kwargs
    assert kwargs["kv_transfer_config"] == {"kv_connector": "NixlConnector"} and kwargs["quantization"] == "fp8"


def test_chat_template_kwargs_are_read_by_the_loop_on_the_jax_engine():
    notes: list[str] = []
    cfg = load_config(["generator.chat_template_kwargs.reasoning_effort=low"], notify=notes.append)
    assert LoopSettings.from_config(cfg).chat_template_kwargs == {"reasoning_effort": "low"}
    assert not [n for n in notes if "chat_template_kwargs" in n]  # read, not "changes nothing"


def test_chat_template_kwargs_reach_the_tokenizers_template():
    from transformers import AutoTokenizer

    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path
    from rllm_sweeps.workflows.chat import ChatFormat

    tokenizer = AutoTokenizer.from_pretrained(str(resolve_model_path("builtin:tiny-qwen3", cache_dir())))
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}|{{ reasoning_effort }}"
    chat = ChatFormat(tokenizer, True, {"reasoning_effort": "low"})
    assert chat.prompt_text("q") == chat.prompt_texts(["q"])[0] == "q|low"


def test_a_value_a_free_form_dictionary_cannot_take_is_one_line_not_a_traceback():
    for bad in ("generator.inference_engine.engine_init_kwargs=[1,2]", "generator.chat_template_kwargs=5"):
        with pytest.raises(ConfigError) as info:
            load_config([bad], notify=quiet)
        (issue,) = info.value.issues
        assert issue.key.endswith(bad.split("=")[0].rsplit(".", 1)[-1]) and "\n" not in issue.message


# ---- point 5: names and defaults --------------------------------------------------------------


def test_a_run_name_with_a_slash_is_passed_through_and_its_directory_is_one_safe_name():
    from rllm_sweeps.records.layout import dir_name

    name = "gsm8k_megatron_tp2_pp2_cp1_Qwen/Qwen3-0.6B"
    cfg = load_config([f"trainer.run_name={name}"], notify=quiet)
    assert cfg.trainer.experiment_name == name and cfg.skyrl.train.trainer.run_name == name
    assert "/" not in dir_name(name) and dir_name(name) != dir_name(name.replace("/", "_"))
    assert dir_name("default") == "default" and dir_name("..") != ".."
    assert "trainer.experiment_name" in problems(["trainer.experiment_name='a\nb'"])


def test_a_dataset_by_path_gets_skyrls_lengths_where_it_leaves_the_toy_tasks():
    notes: list[str] = []
    cfg = load_config(BY_PATH, notify=notes.append)
    assert (cfg.data.max_prompt_length, cfg.data.max_response_length) == (512, 1024)  # SkyRL's defaults
    assert any("SkyRL's default for a job with its data by path" in n for n in notes)
    mine = load_config([*BY_PATH, "trainer.max_prompt_length=100", "data.max_response_length=16"], notify=quiet)
    assert (mine.data.max_prompt_length, mine.data.max_response_length) == (100, 16)
    assert load_config([], notify=quiet).data.max_prompt_length == 32  # the toy task keeps its own


def test_a_skyrl_recipe_gets_skyrls_group_size_and_epochs_where_it_names_neither():
    notes: list[str] = []
    cfg = load_config(BY_PATH, notify=notes.append)  # data by SkyRL's name: a SkyRL script's command line
    assert cfg.rollout.n == cfg.skyrl.train.generator.n_samples_per_prompt == 5  # SkyRL's, not rLLM's 8
    assert (cfg.trainer.total_epochs, cfg.trainer.total_batches) == (1, None)  # SkyRL's 1 epoch, no 30-step cap
    assert sum("SkyRL's default, for a SkyRL recipe" in n for n in notes) == 2
    named = load_config([*BY_PATH, "generator.n_samples_per_prompt=4", "trainer.max_training_steps=3"], notify=quiet)
    assert (named.rollout.n, named.trainer.total_batches) == (4, 3)
    assert load_config([*BY_PATH, "rollout.n=6"], notify=quiet).rollout.n == 6  # either name counts
    # rLLM's name for the data: rLLM's group size (8) and the embedded steps stay
    rllm = load_config([f"data.train_files=['{DATA}']", f"data.val_files=['{DATA}']"], notify=quiet)
    assert (rllm.rollout.n, rllm.trainer.total_batches) == (8, 30)


def test_a_null_run_name_or_switch_is_read_as_skyrls_code_reads_it():
    # SkyRL's turn_level_rewards script passes `trainer.run_name="$ENV_CLASS_test"` (an unset variable),
    # a Megatron one `trainer.remove_microbatch_padding=$UNSET`: SkyRL's command line reads both as null.
    notes: list[str] = []
    cfg = load_config(["trainer.run_name=", "trainer.remove_microbatch_padding="], notify=notes.append)
    assert cfg.trainer.experiment_name == load_config([], notify=quiet).trainer.experiment_name  # no name given
    assert cfg.skyrl.train.trainer.remove_microbatch_padding is False  # SkyRL tests it with `if`
    assert any("null name" in n for n in notes) and any("null switch" in n for n in notes)
    assert "expected a number > 0" in problems(["trainer.policy.optimizer_config.lr="])["trainer.lr"]  # others: judged


def test_delta_weight_sync_is_set_by_its_sync_dir_under_either_name(tmp_path):
    for key in ("generator.delta_weight_sync.sync_dir", "generator.inference_engine.delta_weight_sync.sync_dir"):
        cfg = load_config([f"{key}={tmp_path}", "generator.inference_engine.weight_sync_backend=delta"], notify=quiet)
        assert skyrl_config(cfg).generator.inference_engine.delta_weight_sync.sync_dir == str(tmp_path)
    # On SkyRL's GPU trainer SkyRL itself refuses it for a LoRA policy (every policy here): its message, one line
    delta = [f"generator.delta_weight_sync.sync_dir={tmp_path}", "generator.inference_engine.weight_sync_backend=delta"]
    found = problems([*FSDP, *delta])
    assert "not yet supported for LoRA" in found["skyrl.train"]


def test_delta_weight_syncs_settings_are_read_together_and_an_empty_value_is_null_as_skyrl_reads_it(tmp_path):
    # SkyRL's examples/train/delta_weight_sync scripts: each setting alone lacks the required sync_dir
    prefix = "generator.inference_engine.delta_weight_sync."
    typed = [f"{prefix}sync_dir={tmp_path}", f"{prefix}local_checkpoint_dir={tmp_path}/ckpt"]
    typed += [f"{prefix}publish_staging_dir=", f"{prefix}max_file_size_in_gb=1", f"{prefix}publish_num_workers=8"]
    delta = skyrl_config(load_config(typed, notify=quiet)).generator.inference_engine.delta_weight_sync
    assert (delta.sync_dir, delta.local_checkpoint_dir) == (str(tmp_path), f"{tmp_path}/ckpt")
    assert (delta.max_file_size_in_gb, delta.publish_num_workers) == (1, 8)
    assert delta.publish_staging_dir  # `key=` is null to SkyRL's command line: SkyRL's own staging path


def test_megatrons_merge_lora_is_refused_only_with_lora_on():
    from rllm_sweeps.config.gpu_trainer_rules import GPU_TRAINER_RULES, MERGE_LORA

    cfg = load_config(MEGATRON, notify=quiet)  # nothing set: false on megatron (SkyRL's true elsewhere)
    assert cfg.skyrl.train.trainer.policy.megatron_config.lora_config.merge_lora is False
    assert load_config(FSDP, notify=quiet).skyrl.train.trainer.policy.megatron_config.lora_config.merge_lora is True
    assert "LoRA on" in problems([*MEGATRON, f"{MERGE_LORA}=true"])[MERGE_LORA]
    (rule,) = [r for r in GPU_TRAINER_RULES if r.keys[0] == MERGE_LORA]
    assert rule.holds(True, "megatron", 0) and not rule.holds(True, "megatron", 8)  # rank 0: no adapter


# ---- point 6: the GPU engines ----------------------------------------------------------------


def test_top_p_and_top_k_are_accepted_on_the_gpu_engines_with_a_note_on_the_log_probabilities():
    for typed in ("generator.sampling_params.top_p=0.9", "generator.sampling_params.top_k=20"):
        notes: list[str] = []
        load_config([*FSDP, typed], notify=notes.append)
        assert any("renormalized" in n for n in notes), notes


def test_skyrls_warmup_steps_and_schedule_set_the_loops_lr_on_every_engine():
    for engine in (FSDP, ["skyrl.engine=jax"]):
        cfg = load_config(
            [
                *engine,
                "trainer.policy.optimizer_config.num_warmup_steps=4",
                "trainer.policy.optimizer_config.scheduler=cosine_with_warmup",
                "trainer.lr=1e-4",
            ],
            notify=quiet,
        )
        s = LoopSettings.from_config(cfg)
        assert s.lr_at(0, 20) == pytest.approx(1e-4 / 4) and s.lr_at(3, 20) == pytest.approx(1e-4)
        assert s.lr_at(19, 20) < 1e-4 / 10  # cosine decay after the warmup


# ---- point 7: rLLM PR #407's keys --------------------------------------------------------------


def test_val_max_samples_validates_on_the_first_n_examples():
    from rllm_sweeps.training.prompts import val_batches

    cfg = load_config(["trainer.val_max_samples=3", "data.val_batch_size=2"], notify=quiet)
    s = LoopSettings.from_config(cfg)
    batches = val_batches(list("abcdefgh"), s)
    assert [b.examples for b in batches] == [["a", "b"], ["c"]]
    every = LoopSettings.from_config(load_config(["data.val_batch_size=8"], notify=quiet))
    assert sum(len(b.examples) for b in val_batches(list("abcdefgh"), every)) == 8  # -1: all
    assert "trainer.val_max_samples" in problems(["trainer.val_max_samples=0"])


@pytest.mark.parametrize("engine", ["jax", "fsdp", "megatron"])
def test_no_skyrl_setting_named_at_skyrls_default_is_refused(engine):
    from rllm_sweeps.config.engine_settings import judge
    from rllm_sweeps.config.native import skyrl_train_defaults
    from rllm_sweeps.config.setting_effect import Kind
    from rllm_sweeps.config.settings_table import ENGINE_OVERRIDES
    from rllm_sweeps.plain_tree import leaves

    plain = OmegaConf.to_container(load_config(ENGINE_OVERRIDES[engine], notify=quiet), resolve=True)
    refused = {
        rel: effect.why
        for rel, value in leaves(skyrl_train_defaults())
        if (effect := judge("skyrl.train." + rel, value, plain)).kind is Kind.REFUSED
    }
    assert refused == {}
