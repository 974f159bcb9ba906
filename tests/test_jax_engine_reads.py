"""The native keys the JAX engine reads change what the loop does, and the KL penalty trains.

One real SkyRL JaxBackend on the built-in tiny model (CPU) is shared by the tests; each training
has its own LoRA adapter in it, from the same seed, so runs differ only by the setting. The
trainings that several tests compare (the ``jax_trainings`` fixture) run once for all of them.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from jax_runs import settings, tiny_backend

from rllm_sweeps.config.engine_settings import jax_losses
from rllm_sweeps.engines import JaxEngine
from rllm_sweeps.training.loop import RLTrainer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def backend_and_tokenizer():
    return tiny_backend(max_lora_adapters=14)


def trainer(backend_and_tokenizer, tmp_path, model_id: str, *overrides: str, engine=None) -> RLTrainer:
    from rllm_sweeps.tasks import load_task

    backend, tokenizer = backend_and_tokenizer
    s, cfg = settings(*overrides)
    return RLTrainer(
        s,
        backend,
        load_task(cfg.task),
        tokenizer,
        tmp_path / model_id,
        model_id=model_id,
        engine=engine or JaxEngine().traits,
    )


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


@pytest.fixture(scope="module")
def jax_trainings(backend_and_tokenizer, tmp_path_factory) -> SimpleNamespace:
    """The trainings several tests assert on, each run once: PPO (SkyRL's "regular", lr 0.01, 3 steps
    sampling from the live adapter), the same with a sampler checkpoint round trip per step, CISPO
    (1 step) and PPO with a KL penalty (2 steps). All from one seed: the step-1 loss does not depend
    on the lr, so PPO's first step is the reference for CISPO's and the KL run's first step."""
    import dataclasses

    tmp = tmp_path_factory.mktemp("runs")
    ppo = ["skyrl.train.trainer.algorithm.policy_loss_type=regular", "trainer.lr=0.01"]
    live_engine = JaxEngine().traits
    round_trip = dataclasses.replace(live_engine, sampler_shares_trained_weights=False)  # a save + reload per step
    out = SimpleNamespace(live_engine=live_engine, steps={}, before={}, after={}, trainers={})
    for name, engine in (("live", live_engine), ("roundtrip", round_trip)):
        t = trainer(backend_and_tokenizer, tmp, name, *ppo, "trainer.total_batches=3", engine=engine)
        seen: list[dict] = []
        t.hooks.on_step_end = seen.append
        examples = t.task.val[:4]
        t.setup()
        out.before[name] = sample(t, examples, 4, -1)
        t.fit()
        out.steps[name], out.trainers[name] = seen, t
        out.after[name] = sample(t, examples, 4, -1)  # after 3 updates, at temperature 1
    cispo = trainer(
        backend_and_tokenizer, tmp, "cispo", "trainer.lr=0.01", "skyrl.train.trainer.algorithm.policy_loss_type=cispo"
    )
    out.trainers["cispo"], out.steps["cispo"] = cispo, [cispo.train_step()]
    kl = trainer(backend_and_tokenizer, tmp, "kl", *ppo, "algorithm.use_kl_loss=true", "algorithm.kl_beta=1.0")
    out.trainers["kl"], out.steps["kl"] = kl, [kl.train_step(), kl.train_step()]
    return out


def test_skyrls_policy_loss_type_selects_the_jax_loss(jax_trainings):
    assert set(jax_losses()) == {"importance_sampling", "ppo", "cispo"}
    ppo, cispo = jax_trainings.trainers["live"], jax_trainings.trainers["cispo"]
    assert (ppo.settings.loss_fn, cispo.settings.loss_fn) == ("ppo", "cispo")
    # CISPO's clip range is SkyRL's (cispo.cispo_eps_clip_low/high), not PPO's.
    assert (cispo.settings.clip_low_threshold, cispo.settings.clip_high_threshold) == (0.0, 5.0)
    first, second = jax_trainings.steps["live"][0], jax_trainings.steps["cispo"][0]
    # Same seed, same samples and rewards; a different objective.
    assert first["reward_mean"] == second["reward_mean"] and first["tokens_sampled"] == second["tokens_sampled"]
    assert math.isfinite(second["loss"]) and not np.isclose(first["loss"], second["loss"])


def test_kl_penalty_to_the_base_model_changes_training_on_the_jax_engine(jax_trainings):
    plain, kl = jax_trainings.trainers["live"], jax_trainings.trainers["kl"]
    assert kl.settings.kl_active and not plain.settings.kl_active
    plain_steps, kl_steps = jax_trainings.steps["live"][:2], jax_trainings.steps["kl"]
    # Step 1 samples from the base model itself: no divergence yet, the same update.
    assert abs(kl_steps[0]["kl"]) < 1e-3
    assert np.isclose(kl_steps[0]["loss"], plain_steps[0]["loss"], atol=1e-4)
    # Step 2 samples from the trained policy: the penalty is non-zero and changes the update.
    assert abs(kl_steps[1]["kl"]) > 1e-4
    assert "kl" not in plain_steps[1]
    assert kl_steps[1]["reward_mean"] == plain_steps[1]["reward_mean"]  # same policy sampled, same rewards
    assert not np.isclose(kl_steps[1]["loss"], plain_steps[1]["loss"], atol=1e-4)


def test_sampling_from_the_live_adapter_gives_the_tokens_of_the_sampler_checkpoint_round_trip(jax_trainings):
    assert jax_trainings.live_engine.sampler_shares_trained_weights
    for name in ("live", "roundtrip"):
        assert jax_trainings.before[name] != jax_trainings.after[name]  # the sampler does see the updates
    metrics = {
        name: [(m["reward_mean"], m["loss"], m["tokens_sampled"]) for m in jax_trainings.steps[name]]
        for name in jax_trainings.before
    }
    assert len(metrics["live"]) == 3 and metrics["live"] == metrics["roundtrip"]
    assert jax_trainings.after["live"] == jax_trainings.after["roundtrip"]


def test_never_end_only_and_keep_last_k_saves_skyrls_estimator_and_reduction_train_and_resuming_at_end_trains_nothing(
    backend_and_tokenizer, tmp_path
):
    from rllm_sweeps.tasks import load_task

    backend, tokenizer = backend_and_tokenizer
    runs = {
        "never": ["trainer.save_freq=-1", "trainer.test_freq=-1", "trainer.val_before_train=false"],
        "at_end": ["trainer.save_freq=0", "trainer.test_freq=0", "trainer.val_before_train=false"],
        "every": ["trainer.save_freq=1", "trainer.test_freq=-1", "trainer.val_before_train=false"],
        # SkyRL's max_ckpts_to_keep: the newest K stay (the loop applies it on every engine)
        "every_keep_1": [
            "trainer.save_freq=1",
            "skyrl.train.trainer.max_ckpts_to_keep=1",
            "trainer.test_freq=-1",
            "trainer.val_before_train=false",
        ],
    }
    saved, validations = {}, {}
    for name, overrides in runs.items():
        # SkyRL's estimator and loss reduction (no rLLM twin) on the same run: the loop computes both.
        s, cfg = settings(*overrides, "algorithm.adv_estimator=reinforce++", "algorithm.loss_agg_mode=prompt_mean")
        ckpt = tmp_path / name / "checkpoints"
        t = RLTrainer(
            s,
            backend,
            load_task(cfg.task),
            tokenizer,
            tmp_path / name,
            model_id=name,
            checkpoint_dir=ckpt,
            engine=JaxEngine().traits,
        )
        t.fit()
        assert t.state.step == 2
        saved[name] = sorted(p.name for p in ckpt.glob("step_*")) if ckpt.exists() else []
        validations[name] = [v["step"] for v in t.state.val_history]
    # -1: never; 0: after the last step only; 1: every step, all kept unless max_ckpts_to_keep says
    assert saved == {"never": [], "at_end": ["step_2"], "every": ["step_1", "step_2"], "every_keep_1": ["step_2"]}
    assert validations == {"never": [2], "at_end": [2], "every": [2], "every_keep_1": [2]}  # the end validates

    # A run resumed from its last step's checkpoint (same adapter) trains nothing and still validates.
    again = RLTrainer(
        s, backend, load_task(cfg.task), tokenizer, tmp_path / "again", model_id="at_end", engine=JaxEngine().traits
    )
    again.load_checkpoint(tmp_path / "at_end" / "checkpoints" / "step_2")
    seen: list[dict] = []
    again.hooks.on_validation_end = seen.append
    again.hooks.on_step_end = lambda m: pytest.fail(f"trained step {m['step']} again")
    again.fit()
    assert again.state.step == t.state.step == 2
    assert [m["step"] for m in seen] == [2] and 0.0 <= seen[0]["val_reward_mean"] <= 1.0


def _base_model_logprobs(backend, lora, datums) -> list:
    """The base model's log-probs of ``datums``, through the same backend's forward: an adapter slot
    whose LoRA SkyRL's ``clear_lora_adapter`` scales to zero (rank 0, scaling 0, A = B = 0), so the
    layers return their base output plus nothing."""
    from skyrl.tx.layers.lora import clear_lora_adapter

    from rllm_sweeps.training.policy import Policy

    base = Policy(backend, "kl3-base", ".")
    if not backend.has_model(base.model_id):
        backend.create_model(base.model_id, lora)
        clear_lora_adapter(backend.model, backend.models[base.model_id].adapter_index)
    return base.current_logprobs(datums)


def test_kl_through_the_untrained_reference_adapter_equals_the_base_models_to_the_last_bit_for_3_steps(
    backend_and_tokenizer, tmp_path
):
    """The reference route of every engine (policy.py: ``<model_id>-ref``, created with the policy's
    rank and alpha, never stepped) gives the base model's log-probs bit for bit while the policy
    trains, so both KL terms (in the reward, as a loss) are the base model's."""
    import copy

    from skyrl.tinker import types

    from rllm_sweeps.training.datums import apply_kl_penalty
    from rllm_sweeps.training.kl_reward import reward_kl

    kl = ["algorithm.use_kl_loss=true", "algorithm.kl_beta=0.5", "skyrl.train.trainer.algorithm.use_kl_in_reward=true"]
    t = trainer(backend_and_tokenizer, tmp_path, "kl3", "trainer.lr=0.01", "trainer.total_batches=3", *kl)
    backend = backend_and_tokenizer[0]
    s = t.settings
    lora = types.LoraConfig(rank=s.lora_rank, alpha=s.lora_alpha, seed=s.seed)
    passes: list[tuple[list, list]] = []  # (datums, the reference adapter's log-probs) of each forward
    reference = t.policy.reference_logprobs

    def recorded(datums):
        out = reference(datums)
        passes.append((copy.deepcopy(list(datums)), [list(map(float, r)) for r in out]))
        return out

    t.policy.reference_logprobs = recorded
    checked: list[int] = []
    moved: list[bool] = []

    def compare(metrics):
        for datums, ref in passes:
            base = [list(map(float, r)) for r in _base_model_logprobs(backend, lora, datums)]
            assert np.array_equal(np.concatenate(ref), np.concatenate(base)), f"step {metrics['step']}"
            # Hence the KL terms: the reward's (SkyRL's estimator) and the loss's (per-token log-ratio).
            by_ref = reward_kl([0], [datums], [ref], s.kl_estimator_type, 1.0)
            by_base = reward_kl([0], [datums], [base], s.kl_estimator_type, 1.0)
            assert by_ref == by_base
            a, b = copy.deepcopy(datums), copy.deepcopy(datums)
            assert apply_kl_penalty(a, ref, s.kl_beta) == apply_kl_penalty(b, base, s.kl_beta)
            assert [d.advantages for d in a] == [d.advantages for d in b]
        # The comparison can tell adapters apart: by now the policy's own log-probs are not the base's.
        datums, _ = passes[-1]
        moved.append(not np.array_equal(np.concatenate(t.policy.current_logprobs(datums)), np.concatenate(base)))
        checked.append(len(passes))
        passes.clear()

    t.hooks.on_step_end = compare
    t.fit()
    # Each step: one reference forward for the reward's KL, one per mini batch for the loss's.
    assert checked == [2, 2, 2]
    assert moved == [True, True, True]
