"""skyrl.engine=fsdp|megatron builds SkyRL's real GPU trainer backend from the composed tree.

On a machine without CUDA the constructor still runs (it loads the tokenizer only), and
SkyRL's own builder turns the backend's overrides into the SkyRLTrainConfig the workers would
get: it must be the job's composed native tree, leaf by leaf, but for the leaves named below.
"""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf
from test_config import shipped_configs

from rllm_sweeps.config.engine_settings import BUILDER_FORCED
from rllm_sweeps.config.load import load_config
from rllm_sweeps.config.native import quiet_skyrl, skyrl_own
from rllm_sweeps.engines.skyrl_train import JOB_OWNED_PATHS, built_config, job_owned_paths, make_skyrl_train_backend
from rllm_sweeps.keymap import KEY_MAPPINGS
from rllm_sweeps.plain_tree import leaves

pytestmark = pytest.mark.slow  # builds SkyRL's GPU trainer config through SkyRL's own builders

# Leaves of the composed tree that the backend's config may hold differently, and why:
# - the model paths hold `model.path` as written (builtin:tiny-qwen3); the backend gets the
#   resolved model directory;
# - the critic's model path, which SkyRL's Tinker-mode builder sets to the policy's (the loop
#   trains no critic: validation refuses trainer.critic.*); what else that builder sets regardless
#   (engine_settings.BUILDER_FORCED) equals the tree, since validation refuses any other value there;
# - SkyRL's working paths, which the job places in its own directory (JOB_OWNED_PATHS);
# - generator.max_input_length left null, which SkyRLTrainConfig.__post_init__ fills with
#   trainer.max_prompt_length (asserted below).
# The policy's (the key map's twin of model.path) and the reference's (a derived default that follows it)
MODEL_PATHS = {m.native.removeprefix("skyrl.train.") for m in KEY_MAPPINGS if m.common == "model.path"} | {
    "trainer.ref.model.path"
}
DERIVED_BY_SKYRL = {"generator.max_input_length": "trainer.max_prompt_length"}
EXPECTED_DIFFERENCES = MODEL_PATHS | {"trainer.critic.model.path"} | set(JOB_OWNED_PATHS) | set(DERIVED_BY_SKYRL)


@pytest.mark.parametrize("engine", ["fsdp", "megatron"])
@pytest.mark.parametrize("overrides", [[], *shipped_configs()], ids=lambda o: o[0] if o else "default")
def test_gpu_engine_builds_skyrl_train_backend_whose_config_is_the_composed_tree(engine, overrides, tmp_path):
    from skyrl.backends.skyrl_train_backend import SkyRLTrainBackend
    from skyrl.train.config import get_config_as_yaml_str

    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path

    gpus = (
        [] if load_config(overrides, notify=lambda _: None).resources.gpus_per_node else ["resources.gpus_per_node=1"]
    )
    # Megatron samples the loop's LoRA adapter by name only without merging (config/gpu_trainer_rules.py).
    merge = ["skyrl.train.trainer.policy.megatron_config.lora_config.merge_lora=false"] if engine == "megatron" else []
    cfg = load_config([*overrides, f"skyrl.engine={engine}", *gpus, *merge], notify=lambda _: None)
    # The shipped GPU cluster profile names no model a test machine has: the tiny one stands in.
    model_dir = resolve_model_path("builtin:tiny-qwen3", cache_dir())
    tree = OmegaConf.to_container(cfg.skyrl.train, resolve=True)
    with quiet_skyrl():
        backend = make_skyrl_train_backend(engine, tree, model_dir, tmp_path)
        built = built_config(backend, int(cfg.model.lora.rank), float(cfg.model.lora.alpha))
    assert isinstance(backend, SkyRLTrainBackend)
    assert built.trainer.strategy == engine

    got = dict(leaves(OmegaConf.to_container(OmegaConf.create(get_config_as_yaml_str(built)))))
    want = dict(leaves(skyrl_own(tree)))  # without the settings only this project's loop reads
    assert set(got) == set(want)
    differing = {k for k in want if got[k] != want[k]}
    assert differing <= EXPECTED_DIFFERENCES, {k: (want[k], got[k]) for k in differing - EXPECTED_DIFFERENCES}
    for path in MODEL_PATHS:
        assert got[path] == str(model_dir)
    for path, source in DERIVED_BY_SKYRL.items():
        assert got[path] == (want[source] if want[path] is None else want[path]), path
    for path, where in job_owned_paths(tmp_path).items():
        assert got[path] == where
    for path, (forced, _why) in BUILDER_FORCED.items():
        if path not in EXPECTED_DIFFERENCES:
            assert got[path] == want[path] == forced, path


def test_a_nondefault_lr_schedule_reaches_the_loop_not_skyrls_scheduler():
    """The builder pins SkyRL's scheduler; the loop computes the lr per step and the backend applies it."""
    from rllm_sweeps.training.settings import LoopSettings

    cfg = load_config(
        ["skyrl.engine=fsdp", "resources.gpus_per_node=1", "algorithm.lr_schedule=cosine"], notify=lambda _: None
    )
    settings = LoopSettings.from_config(cfg)
    assert settings.lr_schedule == "cosine"
    assert settings.lr_at(0, 10) > settings.lr_at(5, 10) > settings.lr_at(9, 10)
