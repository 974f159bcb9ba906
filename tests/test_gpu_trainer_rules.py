"""What SkyRL's GPU trainer needs of a config, refused before anything is submitted
(rllm_sweeps/config/gpu_trainer_rules.py): each rule on the real composed tree, and its fix accepted."""

from __future__ import annotations

from config_problems import problems, quiet

from rllm_sweeps.config.gpu_trainer_rules import VLLM_LORA_RANKS, nearest_lora_ranks
from rllm_sweeps.config.load import load_config

FSDP = ["skyrl.engine=fsdp", "resources.gpus_per_node=2", "resources.cpus_per_task=3"]
MERGE_LORA = "skyrl.train.trainer.policy.megatron_config.lora_config.merge_lora"


def test_fsdp_with_fewer_cpus_than_gpus_plus_one_is_refused_naming_the_cpu_setting():
    found = problems(["skyrl.engine=fsdp", "resources.gpus_per_node=2", "resources.cpus_per_task=2"])
    assert list(found) == ["resources.cpus_per_task"]
    assert "set resources.cpus_per_task >= the GPUs per node + 1 (2 GPUs per node)" in found["resources.cpus_per_task"]
    load_config(FSDP, notify=quiet)  # 3 CPUs for 2 GPUs: accepted
    # left to its default, resources.cpus_per_task follows the GPUs on fsdp/megatron
    assert load_config(["skyrl.engine=fsdp", "resources.gpus_per_node=4"], notify=quiet).resources.cpus_per_task == 5
    assert load_config([], notify=quiet).resources.cpus_per_task == 2
    load_config(["resources.gpus_per_node=2", "resources.cpus_per_task=2"], notify=quiet)  # jax: no such rule


def test_a_lora_rank_vllm_refuses_is_refused_on_fsdp_with_the_nearest_ranks():
    found = problems([*FSDP, "model.lora.rank=4"])
    assert list(found) == ["model.lora.rank"]
    assert "the nearest: model.lora.rank=1 or 8" in found["model.lora.rank"]
    assert nearest_lora_ranks(600) == (512,) and nearest_lora_ranks(100) == (64, 128)
    for rank in (8, 32):
        load_config([*FSDP, f"model.lora.rank={rank}"], notify=quiet)
    load_config(["model.lora.rank=4"], notify=quiet)  # the JAX engine takes any rank
    assert set(VLLM_LORA_RANKS) >= {8, 16, 32, 64}


def test_vllm_engines_not_colocated_get_gpus_of_their_own_and_cpus_beside_them():
    """rLLM's SkyRL scripts run training and vLLM apart (colocate_all=false): the job asks for both."""
    from rllm_sweeps.config.gpu_trainer_rules import node_gpus

    apart = ["skyrl.engine=fsdp", "resources.gpus_per_node=1", "skyrl.train.trainer.placement.colocate_all=false"]
    cfg = load_config([*apart, "generator.inference_engine.tensor_parallel_size=2"], notify=quiet)
    assert node_gpus(cfg) == 1 + 2 and cfg.resources.cpus_per_task == 4  # policy 1 + one vLLM engine of TP 2
    assert node_gpus(load_config(FSDP, notify=quiet)) == 2  # colocated: the policy's GPUs are vLLM's too
    found = problems([*apart, "resources.cpus_per_task=2"])
    assert "(2 GPUs per node)" in found["resources.cpus_per_task"]


def test_megatron_needs_merge_lora_false_to_sample_the_loops_adapter():
    megatron = ["skyrl.engine=megatron", "resources.gpus_per_node=2", "resources.cpus_per_task=3"]
    lora = load_config(megatron, notify=quiet).skyrl.train.trainer.policy.megatron_config.lora_config
    assert lora.merge_lora is False  # left out: false on megatron
    found = problems([*megatron, f"{MERGE_LORA}=true"])  # LoRA is on (model.lora.rank=8)
    assert list(found) == [MERGE_LORA]
    assert "or set it false" in found[MERGE_LORA]
    load_config([*megatron, f"{MERGE_LORA}=false"], notify=quiet)
    load_config([*FSDP, f"{MERGE_LORA}=true"], notify=quiet)  # FSDP syncs the adapter itself: no rule


def test_fsdp_trains_on_vllms_processed_logprobs_and_notes_what_top_p_or_top_k_do_to_them():
    mode = "skyrl.train.generator.inference_engine.engine_init_kwargs.logprobs_mode"
    assert load_config(FSDP, notify=quiet).skyrl.train.generator.inference_engine.engine_init_kwargs.logprobs_mode == (
        "processed_logprobs"
    )
    assert mode in problems([*FSDP, f"{mode}=raw_logprobs"])
    top_k = "skyrl.train.generator.sampling_params.top_k"
    for typed in ("rollout.train.top_p=0.9", f"{top_k}=50"):  # SkyRL's trainer runs them: a note
        notes: list[str] = []
        load_config([*FSDP, typed], notify=notes.append)
        assert any("renormalized" in n for n in notes), notes
    # Validation samples are not trained on; the JAX engine computes its own log-probabilities.
    load_config([*FSDP, "rollout.val.top_p=0.9", "rollout.train.temperature=0.7"], notify=quiet)
    load_config(["rollout.train.top_p=0.9", f"{top_k}=50"], notify=quiet)


def test_max_ckpts_to_keep_zero_is_refused_with_what_it_means():
    key = "skyrl.train.trainer.max_ckpts_to_keep"
    found = problems([f"{key}=0"])
    assert key in found and "-1 for all" in found[key]
    load_config([f"{key}=2"], notify=quiet)


def test_a_new_key_of_skyrls_engine_init_kwargs_reaches_the_tree():
    """SkyRL's engine_init_kwargs is a dict handed to vLLM: a user's key (with +, as Hydra asks for a key
    the tree lacks) joins the project's logprobs_mode."""
    key = "skyrl.train.generator.inference_engine.engine_init_kwargs.max_model_len"
    cfg = load_config([*FSDP, f"+{key}=4096"], notify=quiet)
    assert cfg.skyrl.train.generator.inference_engine.engine_init_kwargs == {
        "logprobs_mode": "processed_logprobs",
        "max_model_len": 4096,
    }


def test_a_skyrl_working_path_the_user_sets_is_accepted_with_a_note_that_the_job_keeps_its_own():
    notes: list[str] = []
    key = "skyrl.train.trainer.log_path"
    load_config([*FSDP, f"{key}=/shared/skyrl-logs"], notify=notes.append)
    assert [n for n in notes if key in n] == [
        f"note: {key}='/shared/skyrl-logs' changes nothing here: the job keeps SkyRL's own files in JOB_DIR/skyrl/logs "
        "(on SkyRL's shared defaults two jobs of a node would overwrite each other's)"
    ]
