"""The native keys the JAX engine reads change what the loop does, and the KL penalty trains.

One real SkyRL JaxBackend on the built-in tiny model (CPU) is shared by the tests; each test
trains its own LoRA adapters in it, from the same seed, so runs differ only by the setting.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rllm_sweeps.config.load import load_config
from rllm_sweeps.engines import jax_losses
from rllm_sweeps.training.loop import RLTrainer
from rllm_sweeps.training.settings import LoopSettings

pytestmark = pytest.mark.slow

# Small shapes, the same for every run (one compilation per kind of call).
SMALL = [
    "data.train_batch_size=4",
    "trainer.mini_batch_size=4",
    "rollout.n=4",
    "data.val_batch_size=4",
    "task.dataset.val_size=4",
    "trainer.total_batches=2",
]


def settings(*overrides: str) -> tuple[LoopSettings, object]:
    cfg = load_config([*SMALL, *overrides], notify=lambda _: None)
    return LoopSettings.from_config(cfg), cfg


@pytest.fixture(scope="module")
def backend_and_tokenizer():
    from transformers import AutoTokenizer

    from rllm_sweeps.job import cache_dir
    from rllm_sweeps.models import resolve_model_path
    from rllm_sweeps.training.jax_backend import make_jax_backend

    base, _ = settings()
    model_dir = resolve_model_path("builtin:tiny-qwen3", cache_dir())
    backend = make_jax_backend(model_dir, base, max_lora_adapters=14)
    return backend, AutoTokenizer.from_pretrained(str(model_dir))


def trainer(backend_and_tokenizer, tmp_path, model_id: str, *overrides: str, engine=None) -> RLTrainer:
    from rllm_sweeps.tasks import load_task

    backend, tokenizer = backend_and_tokenizer
    s, cfg = settings(*overrides)
    return RLTrainer(s, backend, load_task(cfg.task), tokenizer, tmp_path / model_id, model_id=model_id, engine=engine)


def sample(t: RLTrainer, examples: list[dict], n: int, top_k: int) -> list[list[int]]:
    """``n`` responses per example at temperature 1 (single-turn episodes), in (example, sample) order."""
    from rllm_sweeps.training.prompts import PromptBatch
    from rllm_sweeps.workflows.client import Sampling, SeedPlan

    sampling = Sampling(1.0, 1.0, top_k, t.settings.max_response_length)
    episodes, _ = t._run_episodes(PromptBatch(examples, n, sampling, SeedPlan(0, 0, 0, len(examples) * n)))
    return [e.trajectories[0].steps[0].response_ids for e in episodes]


def group_responses(t: RLTrainer, top_k: int) -> list[set[tuple[int, ...]]]:
    """The distinct responses of each prompt of the first training batch, at temperature 1."""
    from rllm_sweeps.training.prompts import train_batch

    examples = list(train_batch(t.task.train, t.settings, 0).examples)
    responses = sample(t, examples, 4, top_k)
    return [{tuple(r) for r in responses[i * 4 : (i + 1) * 4]} for i in range(len(examples))]


def test_skyrls_top_k_drives_the_sampler_top_k_1_makes_every_group_one_response(backend_and_tokenizer, tmp_path):
    t = trainer(backend_and_tokenizer, tmp_path, "topk", "skyrl.train.generator.sampling_params.top_k=1")
    assert t.settings.top_k == 1
    t.setup()
    assert all(len(g) == 1 for g in group_responses(t, t.settings.top_k))
    assert any(len(g) > 1 for g in group_responses(t, -1))  # no limit: a random model varies


def test_skyrls_policy_loss_type_selects_the_jax_loss(backend_and_tokenizer, tmp_path):
    assert set(jax_losses()) == {"importance_sampling", "ppo", "cispo"}
    ppo = trainer(backend_and_tokenizer, tmp_path, "ppo", "skyrl.train.trainer.algorithm.policy_loss_type=regular")
    cispo = trainer(backend_and_tokenizer, tmp_path, "cispo", "skyrl.train.trainer.algorithm.policy_loss_type=cispo")
    assert (ppo.settings.loss_fn, cispo.settings.loss_fn) == ("ppo", "cispo")
    # CISPO's clip range is SkyRL's (cispo.cispo_eps_clip_low/high), not PPO's.
    assert (cispo.settings.clip_low_threshold, cispo.settings.clip_high_threshold) == (0.0, 5.0)
    first, second = ppo.train_step(), cispo.train_step()
    # Same seed, same samples and rewards; a different objective.
    assert first["reward_mean"] == second["reward_mean"] and first["tokens_sampled"] == second["tokens_sampled"]
    assert math.isfinite(second["loss"]) and not np.isclose(first["loss"], second["loss"])


def test_kl_penalty_to_the_base_model_changes_training_on_the_jax_engine(backend_and_tokenizer, tmp_path):
    plain = trainer(backend_and_tokenizer, tmp_path, "nokl", "trainer.lr=0.01")
    kl = trainer(
        backend_and_tokenizer, tmp_path, "kl", "trainer.lr=0.01", "algorithm.use_kl_loss=true", "algorithm.kl_beta=1.0"
    )
    assert kl.settings.kl_active and not plain.settings.kl_active
    plain_steps = [plain.train_step(), plain.train_step()]
    kl_steps = [kl.train_step(), kl.train_step()]
    # Step 1 samples from the base model itself: no divergence yet, the same update.
    assert abs(kl_steps[0]["kl"]) < 1e-3
    assert np.isclose(kl_steps[0]["loss"], plain_steps[0]["loss"], atol=1e-4)
    # Step 2 samples from the trained policy: the penalty is non-zero and changes the update.
    assert abs(kl_steps[1]["kl"]) > 1e-4
    assert "kl" not in plain_steps[1]
    assert kl_steps[1]["reward_mean"] == plain_steps[1]["reward_mean"]  # same policy sampled, same rewards
    assert not np.isclose(kl_steps[1]["loss"], plain_steps[1]["loss"], atol=1e-4)


def test_rllms_never_save_and_end_only_validation_and_skyrls_estimator_and_reduction_train(
    backend_and_tokenizer, tmp_path
):
    from rllm_sweeps.tasks import load_task

    backend, tokenizer = backend_and_tokenizer
    runs = {
        "never": ["trainer.save_freq=-1", "trainer.test_freq=-1", "trainer.val_before_train=false"],
        "at_end": ["trainer.save_freq=0", "trainer.test_freq=0", "trainer.val_before_train=false"],
    }
    saved, validations = {}, {}
    for name, overrides in runs.items():
        # SkyRL's estimator and loss reduction (no rLLM twin) on the same run: the loop computes both.
        s, cfg = settings(*overrides, "algorithm.adv_estimator=reinforce++", "algorithm.loss_agg_mode=prompt_mean")
        ckpt = tmp_path / name / "checkpoints"
        t = RLTrainer(s, backend, load_task(cfg.task), tokenizer, tmp_path / name, model_id=name, checkpoint_dir=ckpt)
        t.fit()
        assert t.state.step == 2
        saved[name] = sorted(p.name for p in ckpt.glob("step_*")) if ckpt.exists() else []
        validations[name] = [v["step"] for v in t.state.val_history]
    assert saved == {"never": [], "at_end": ["step_2"]}  # -1: never; 0: after the last step only
    assert validations == {"never": [2], "at_end": [2]}  # the sweep's metric still comes from the end


def test_sampling_from_the_live_adapter_gives_the_tokens_of_the_sampler_checkpoint_round_trip(
    backend_and_tokenizer, tmp_path
):
    import dataclasses

    from rllm_sweeps.engines import traits

    live_engine = traits("jax")
    assert live_engine.sampler_shares_trained_weights
    round_trip = dataclasses.replace(live_engine, sampler_shares_trained_weights=False)  # a save + reload per step
    steps, tokens = {}, {}
    for name, engine in (("live", live_engine), ("roundtrip", round_trip)):
        t = trainer(backend_and_tokenizer, tmp_path, name, "trainer.lr=0.01", "trainer.total_batches=3", engine=engine)
        seen = []
        t.hooks.on_step_end = seen.append
        examples = t.task.val[:4]
        t.setup()
        before = sample(t, examples, 4, -1)
        t.fit()
        steps[name] = [(m["reward_mean"], m["loss"], m["tokens_sampled"]) for m in seen]
        tokens[name] = sample(t, examples, 4, -1)  # after 3 updates, at temperature 1
        assert before != tokens[name]  # the sampler does see the updates
    assert steps["live"] == steps["roundtrip"]
    assert tokens["live"] == tokens["roundtrip"]


def test_a_run_resumed_from_its_last_steps_checkpoint_trains_nothing_and_still_reports_a_validation(
    backend_and_tokenizer, tmp_path
):
    first = trainer(backend_and_tokenizer, tmp_path, "last", "trainer.val_before_train=false")
    first.fit()
    ckpt = first.save_checkpoint(tmp_path / "last-ckpt" / f"step_{first.state.step}")
    again = trainer(backend_and_tokenizer, tmp_path, "last", "trainer.val_before_train=false")  # same adapter
    again.load_checkpoint(ckpt)
    seen: list[dict] = []
    again.hooks.on_validation_end = seen.append
    again.hooks.on_step_end = lambda m: pytest.fail(f"trained step {m['step']} again")
    again.fit()
    assert again.state.step == first.state.step == 2
    assert [m["step"] for m in seen] == [2] and 0.0 <= seen[0]["val_reward_mean"] <= 1.0
