"""SkyRL's trainer settings change what the loop runs, on the JAX engine (real SkyRL JaxBackend, CPU).

Each setting is compared with a run that differs from it only by that setting: one real backend on the
built-in tiny model is shared, each run has its own LoRA adapter from the same seed, so two runs
sample the same first batch and differ only by what the setting does. Beside them, the arithmetic
that SkyRL's own functions do not cover (the DAPO overlong penalty, batch normalization, the custom
loss route's gradient) is checked on numbers.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from jax_runs import settings, tiny_backend

from rllm_sweeps.engines import JaxEngine
from rllm_sweeps.training.loop import RLTrainer

ALGORITHM = "skyrl.train.trainer.algorithm."
_ids = itertools.count()


@pytest.fixture(scope="module")
def backend_and_tokenizer():
    return tiny_backend(max_lora_adapters=32)


@pytest.fixture(scope="module")
def make_trainer(backend_and_tokenizer, tmp_path_factory):
    """A trainer on the shared backend with its own adapter (same seed: same first samples)."""
    from rllm_sweeps.tasks import load_task

    backend, tokenizer = backend_and_tokenizer
    tmp = tmp_path_factory.mktemp("runs")

    def make(*overrides: str, engine=None) -> RLTrainer:
        s, cfg = settings(*overrides)
        name = f"run{next(_ids)}"
        return RLTrainer(
            s, backend, load_task(cfg.task), tokenizer, tmp / name, model_id=name, engine=engine or JaxEngine().traits
        )

    return make


def record_samples(t: RLTrainer) -> list:
    """What each of ``t``'s steps samples and keeps (its SampledBatch), appended as the step runs."""
    seen: list = []
    original = t._sample

    def recording(step, timer):
        seen.append(original(step, timer))
        return seen[-1]

    t._sample = recording
    return seen


@pytest.fixture(scope="module")
def plain(make_trainer) -> dict:
    """Step 1 of the run without any of the settings: what each setting's run is compared with."""
    return make_trainer().train_step()


@pytest.mark.slow
def test_update_epochs_per_batch_2_makes_two_optimizer_passes_over_each_batch(make_trainer, plain):
    m1, m2 = plain, make_trainer("skyrl.train.trainer.update_epochs_per_batch=2").train_step()
    assert m2["optimizer_steps"] == 2 and "optimizer_steps" not in m1
    assert m2["reward_mean"] == m1["reward_mean"]  # the same batch
    assert m2["tokens_trained"] == 2 * m1["tokens_trained"]
    # The second pass sees the policy the first moved: its ratios are no longer 1.
    assert m1["logprob_diff_abs_mean"] < 1e-6 < m2["logprob_diff_abs_mean"]


@pytest.mark.slow
def test_dynamic_sampling_filter_drops_groups_whose_rewards_are_all_equal_and_refills_the_batch(make_trainer, plain):
    dapo = make_trainer(ALGORITHM + "dynamic_sampling.type=filter")
    kept = record_samples(dapo)
    p, d = plain, dapo.train_step()
    assert p["frac_groups_all_equal"] > 0  # the first batch has prompts without a signal
    assert d["dynamic_sampling_batches"] >= 2 and d["dynamic_sampling_dropped_groups"] >= 1
    assert dapo.state.extra_batches == d["dynamic_sampling_batches"] - 1  # the data position moved on
    groups = kept[0].groups
    assert len(groups) == 4 == d["dynamic_sampling_kept_groups"]  # refilled to data.train_batch_size prompts
    assert all(len({t.reward for t in g}) > 1 for g in groups.values())
    assert d["frac_groups_all_equal"] == 0.0
    # The next step starts after the batches this one drew.
    d2 = dapo.train_step()
    assert dapo.state.extra_batches == d["dynamic_sampling_batches"] + d2["dynamic_sampling_batches"] - 2


@pytest.mark.slow
def test_zero_variance_filter_masks_groups_whose_rewards_are_all_equal(make_trainer, plain):
    p, f = plain, make_trainer(ALGORITHM + "zero_variance_filter=true").train_step()
    equal_groups = round(p["frac_groups_all_equal"] * 4)
    assert equal_groups >= 1
    assert f["num_zero_variance_filtered"] == equal_groups
    assert f["reward_mean"] == p["reward_mean"]
    assert f["tokens_trained"] < p["tokens_trained"]  # their trajectories carry no loss


@pytest.mark.slow
def test_overlong_penalty_lowers_the_reward_of_over_long_responses_by_the_configured_amount(make_trainer, plain):
    dapo = make_trainer(
        "data.max_response_length=8",
        f"+{ALGORITHM}overlong_buffer_len=4",
        f"+{ALGORITHM}overlong_buffer_penalty_factor=0.5",
    )
    p, d = plain, dapo.train_step()
    # The default task's responses run to the limit (8 tokens): 4 past 8 - 4, the whole buffer, so
    # each loses the full factor.
    assert p["response_length_mean"] == 8.0
    assert d["overlong_penalized"] == 16
    assert d["reward_mean"] == pytest.approx(p["reward_mean"] - 0.5)


def test_overlong_penalty_grows_linearly_over_the_buffer_up_to_the_factor():
    from rllm_sweeps.training.reward_shaping import overlong_penalty

    # max 10, buffer 4: no penalty up to 6 tokens, then factor x excess / 4, capped at the factor
    assert [overlong_penalty(n, 10, 4, 1.0) for n in (5, 6, 7, 8, 10, 12)] == [0.0, 0.0, -0.25, -0.5, -1.0, -1.0]
    assert overlong_penalty(8, 10, 4, 0.5) == -0.25


@pytest.mark.slow
def test_overlong_filtering_masks_the_responses_cut_at_the_length_limit(make_trainer, plain):
    p, m = plain, make_trainer("rllm.mask_truncated_samples=true").train_step()
    assert p["frac_stopped"] == 0.0  # every response was cut at data.max_response_length
    assert m["overlong_filtered"] == 16 and m["tokens_trained"] == 0 < p["tokens_trained"]
    # Nothing left to train on: the step says so and why (not a silent no-op).
    assert m["skipped"].startswith("every reply's loss is masked (16 cut at data.max_response_length=8")


GREEDY = "skyrl.train.generator.sampling_params.top_k=1"  # every prompt's responses alike: no reward signal


@pytest.mark.slow
def test_dynamic_sampling_filter_with_no_signal_in_any_batch_skips_the_step_after_its_sample_batches(make_trainer):
    """SkyRL 0.4.0's filter fails on a batch that keeps no prompt ("indices must be non-empty"); a
    batch like that counts toward max_sample_batches, and when none had a signal the step is skipped."""
    dapo = make_trainer(
        GREEDY, ALGORITHM + "dynamic_sampling.type=filter", ALGORITHM + "dynamic_sampling.max_sample_batches=2"
    )
    m = dapo.train_step()
    assert (m["dynamic_sampling_batches"], m["dynamic_sampling_kept_groups"]) == (2, 0)
    assert m["dynamic_sampling_dropped_groups"] == 8 and m["tokens_trained"] == 0
    assert m["skipped"].startswith(
        "no prompt with a reward signal (responses of differing rewards) in 2 sample batches"
    )
    assert dapo.state.step == 1 and dapo.state.extra_batches == 1
    assert dapo.train_step()["step"] == 2  # and the run goes on


@pytest.mark.slow
def test_dynamic_sampling_filter_at_its_limit_trains_on_the_prompts_it_kept(make_trainer, plain):
    kept_some = make_trainer(
        ALGORITHM + "dynamic_sampling.type=filter", ALGORITHM + "dynamic_sampling.max_sample_batches=1"
    )
    kept = record_samples(kept_some)
    m = kept_some.train_step()
    with_signal = 4 - round(plain["frac_groups_all_equal"] * 4)  # the first batch, as the plain run drew it
    assert 0 < with_signal < 4 and m["dynamic_sampling_batches"] == 1
    assert m["dynamic_sampling_kept_groups"] == with_signal == len(kept[0].groups)
    assert all(len({t.reward for t in g}) > 1 for g in kept[0].groups.values())
    assert m["tokens_trained"] > 0 and "skipped" not in m


@pytest.mark.slow
def test_dynamic_sampling_replace_with_no_signal_at_its_limit_skips_the_step(make_trainer):
    polaris = make_trainer(
        GREEDY, ALGORITHM + "dynamic_sampling.type=replace", ALGORITHM + "dynamic_sampling.max_sample_batches=2"
    )
    m = polaris.train_step()
    assert m["dynamic_sampling_batches"] == 2 and m["tokens_trained"] == 0
    assert m["skipped"].startswith("no prompt with a reward signal")


@pytest.mark.slow
def test_a_zero_variance_filter_that_masks_every_group_skips_the_step_saying_why(make_trainer):
    m = make_trainer(GREEDY, ALGORITHM + "zero_variance_filter=true").train_step()
    assert m["num_zero_variance_filtered"] == 4 and m["tokens_trained"] == 0
    assert m["skipped"] == (
        "every reply's loss is masked (4 groups without a reward signal by trainer.algorithm.zero_variance_filter): "
        "nothing to train on"
    )


@pytest.mark.slow
def test_kl_in_the_reward_changes_the_advantages_by_the_kl_term_and_adapts_its_coefficient(make_trainer, monkeypatch):
    import rllm_sweeps.training.loop as loop
    from rllm_sweeps.training.episodes import assign_advantages

    seen: list[tuple] = []

    def recording(groups, *args, **kwargs):
        scored = assign_advantages(groups, *args, **kwargs)
        seen.append((groups, kwargs.get("penalties"), scored))
        return scored

    monkeypatch.setattr(loop, "assign_advantages", recording)
    kl = make_trainer(
        "trainer.lr=0.05",
        ALGORITHM + "use_kl_in_reward=true",
        ALGORITHM + "kl_estimator_type=k1",
        ALGORITHM + "kl_ctrl.type=adaptive",
        "algorithm.kl_beta=0.5",
    )
    assert kl.settings.use_kl_in_reward and not kl.settings.kl_active  # no KL loss
    k1 = kl.train_step()
    assert abs(k1["avg_kl"]) < 1e-6 and k1["kl_loss_coef"] == 0.5  # step 1 samples from the base model
    k2 = kl.train_step()
    assert abs(k2["avg_kl"]) > 1e-3 and k2["avg_kl_max"] > 0
    # SkyRL's adaptive controller moves the coefficient after each step (after step 1, KL 0 < target:
    # down); the trainer state carries it (checkpoints, resumes).
    assert k2["kl_loss_coef"] < 0.5 and kl.state.kl_coef != k2["kl_loss_coef"]
    groups, penalties, scored = seen[-1]
    assert len(penalties) == 16 and max(abs(p) for p in penalties.values()) > 1e-3
    # The advantages are GRPO's of reward - coef x summed KL; without the term they differ.
    without = assign_advantages(groups, "grpo")
    assert [s.advantage for s in scored] != pytest.approx([s.advantage for s in without], abs=1e-4)
    shifted = {k: [t.reward - penalties[id(t)] for t in g] for k, g in groups.items()}
    assert all(
        np.isclose(s.advantage, (r - np.mean(rs)) / (np.std(rs, ddof=1) + 1e-6))
        for (k, g), rs in zip(groups.items(), shifted.values(), strict=True)
        for s, r in zip([s for s in scored if s.trajectory in g], rs, strict=True)
    )


def test_kl_penalties_are_subtracted_from_the_rewards_the_estimator_sees():
    from rllm_sweeps.advantages import compute_group_advantages
    from rllm_sweeps.training.episodes import assign_advantages
    from rllm_sweeps.workflows.episode import Trajectory

    group = [Trajectory("policy", reward=r) for r in (1.0, 0.0, 1.0, 0.0)]
    penalties = {id(group[0]): 0.4, id(group[1]): 0.1}
    scored = assign_advantages({(0, "policy"): group}, "grpo", penalties=penalties)
    expected = compute_group_advantages([[0.6, -0.1, 1.0, 0.0]], "grpo")[0]
    assert [s.advantage for s in scored] == pytest.approx(list(expected))
    assert [t.reward for t in group] == [1.0, 0.0, 1.0, 0.0]  # the trajectories' own rewards stay


@pytest.mark.slow
def test_advantage_batch_normalize_z_scores_the_advantages_over_the_batch(make_trainer, plain):
    p, n = plain, make_trainer(ALGORITHM + "advantage_batch_normalize=true").train_step()
    assert n["reward_mean"] == p["reward_mean"]
    assert n["advantage_abs_mean"] != pytest.approx(p["advantage_abs_mean"])


def test_batch_normalize_weighs_each_advantage_by_its_tokens():
    from rllm_sweeps.advantages import batch_normalize

    out = batch_normalize([1.0, -1.0, 3.0], [2, 2, 4])
    tokens = np.repeat(out, [2, 2, 4])
    assert tokens.mean() == pytest.approx(0.0) and tokens.std() == pytest.approx(1.0)


@pytest.mark.slow
def test_the_custom_loss_route_updates_the_parameters_as_the_engines_own_ppo(make_trainer):
    """PPO through the custom route (forward, SkyRL's loss and gradient here, forward_backward with the
    gradient as weights) trains as the JAX backend's own PPO: two passes, so the second one's ratios
    differ from 1 and the clip acts."""
    own = JaxEngine().traits
    custom = dataclasses.replace(own, losses=("importance_sampling",))  # ppo is then a custom loss
    assert own.computes("ppo") and not custom.computes("ppo")
    common = ("trainer.lr=0.05", "skyrl.train.trainer.update_epochs_per_batch=2", "algorithm.eps_clip=0.05")
    a, b = make_trainer(*common), make_trainer(*common, engine=custom)
    ma, mb = a.train_step(), b.train_step()
    assert ma["reward_mean"] == mb["reward_mean"]
    assert mb["grad_norm"] == pytest.approx(ma["grad_norm"], rel=2e-3)
    assert mb["logprob_diff_abs_mean"] == pytest.approx(ma["logprob_diff_abs_mean"], rel=2e-2)
    # The same parameters after the step: the next step samples the same and trains the same.
    na, nb = a.train_step(), b.train_step()
    assert na["reward_mean"] == nb["reward_mean"] and na["tokens_sampled"] == nb["tokens_sampled"]
    assert nb["grad_norm"] == pytest.approx(na["grad_norm"], rel=1e-2)


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["dual_clip", "gspo", "sapo", "clip_cov", "kl_cov"])
def test_a_skyrl_policy_loss_the_jax_backend_lacks_trains_as_a_custom_loss(make_trainer, loss):
    t = make_trainer(f"algorithm.loss_fn={loss}", "trainer.lr=0.02", "skyrl.train.trainer.update_epochs_per_batch=2")
    assert not t.engine.computes(loss)
    m = t.train_step()
    # Two optimizer steps, each with a gradient; the second one's ratios moved off 1.
    assert m["optimizer_steps"] == 2 and np.isfinite(m["loss"]) and m["grad_norm"] > 0
    assert m["logprob_diff_abs_mean"] > 1e-4


def test_the_custom_route_gives_the_backend_the_gradient_of_skyrls_loss():
    """The datums' advantages A' = -dL/dlogp x B x n_i undo the JAX backend's per-sequence mean: its
    importance_sampling loss at ratio 1, -(1/B) sum_i (1/n_i) sum_t A'_it logp_it, has SkyRL's gradient."""
    import torch

    from rllm_sweeps.training.custom_loss import algorithm_config, custom_loss_step, skyrl_loss_function
    from rllm_sweeps.training.datums import Datum

    s, _ = settings("algorithm.loss_fn=gspo")
    rng = np.random.default_rng(0)
    datums = [
        Datum(
            inputs=[1] * n,
            targets=[2] * n,
            weights=[0.0] + [1.0] * (n - 1),
            logprobs=list(rng.normal(-2, 0.3, n)),
            advantages=[0.0] + [a] * (n - 1),
            trained_tokens=n - 1,
            group=0,
        )
        for n, a in ((5, 0.7), (3, -1.2))
    ]
    current = [list(np.asarray(d.logprobs) + rng.normal(0, 0.1, len(d.logprobs))) for d in datums]
    step = custom_loss_step(datums, current, algorithm_config(s), skyrl_loss_function("gspo"))
    # The backend's loss on the returned datums, differentiated at the current log-probs.
    total = 0.0
    grads = []
    for d, cur in zip(step.datums, current, strict=True):
        logp = torch.tensor(cur, dtype=torch.float64, requires_grad=True)
        ratio = torch.exp(logp - torch.tensor(d.logprobs, dtype=torch.float64))
        w = torch.tensor(d.weights, dtype=torch.float64)
        total = total + (-(ratio * torch.tensor(d.advantages, dtype=torch.float64)) * w).sum() / w.sum() / len(datums)
        grads.append(logp)
    total.backward()
    # SkyRL's own gradient.
    ref = torch.zeros(2, 5, dtype=torch.float64)
    for i, cur in enumerate(current):
        ref[i, : len(cur)] = torch.tensor(cur)
    ref.requires_grad_(True)

    def pad(rows):
        out = torch.zeros(2, 5, dtype=torch.float64)
        for i, r in enumerate(rows):
            out[i, : len(r)] = torch.tensor(r, dtype=torch.float64)
        return out

    loss, _ = skyrl_loss_function("gspo")(
        ref,
        pad([d.logprobs for d in datums]),
        pad([d.advantages for d in datums]),
        algorithm_config(s),
        pad([d.weights for d in datums]),
        rollout_logprobs=pad([d.logprobs for d in datums]),
    )
    loss.backward()
    for i, g in enumerate(grads):
        assert g.grad.numpy() == pytest.approx(ref.grad[i, : len(current[i])].numpy(), abs=1e-9)


@pytest.mark.slow
def test_max_grad_norm_clips_the_gradient_before_adamw_on_the_jax_engine(backend_and_tokenizer, make_trainer):
    """The JAX engine's optimizer clips to trainer.max_grad_norm (optax's clip, then AdamW): with a
    clip far below the gradient's norm, AdamW's eps dominates and the policy barely moves."""
    from rllm_sweeps.training.datums import mini_batch_datums
    from rllm_sweeps.training.episodes import assign_advantages

    backend, _ = backend_and_tokenizer
    wide, narrow = make_trainer("trainer.lr=0.01"), make_trainer("trainer.lr=0.01")
    assert wide.settings.max_grad_norm == 1.0
    for t in (wide, narrow):
        t.setup()
        assert float(backend.optimizers[t.policy.model_id].opt_state.hyperparams["max_norm"][...]) == 1.0
    backend.optimizers[narrow.policy.model_id].opt_state.hyperparams["max_norm"][...] = 1e-10
    moved = {}
    for name, t in (("wide", wide), ("narrow", narrow)):
        sampled = record_samples(t)
        assert t.train_step()["grad_norm"] > 1e-3  # reported before the clip
        datums = mini_batch_datums(assign_advantages(sampled[0].groups, "grpo"))
        after = t.policy.current_logprobs(datums)
        moved[name] = np.mean(
            [
                abs(a - b)
                for d, row in zip(datums, after, strict=True)
                for a, b, w in zip(d.logprobs, row, d.weights, strict=True)
                if w
            ]
        )
    assert moved["narrow"] < 0.1 * moved["wide"]


def test_the_checkpoint_keeps_dynamic_samplings_data_position_and_the_kl_coefficient():
    from rllm_sweeps.records.model import dump, load
    from rllm_sweeps.training.checkpoints import TrainerState

    state = TrainerState(step=3, extra_batches=5, kl_coef=0.0009)
    again = load(TrainerState, dump(state), "trainer_state.json")
    assert (again.step, again.extra_batches, again.kl_coef) == (3, 5, 0.0009)
    assert load(TrainerState, {"step": 2}, "old").extra_batches == 0  # a checkpoint written before them


def test_the_kl_loss_term_adds_its_gradient_to_the_custom_loss_as_skyrls_worker_weighs_it():
    """With the k1 estimator SkyRL's KL loss (worker.py: masked_mean per sequence, mean over the B
    sequences, x kl_loss_coef) has the gradient coef / (B n_i) per trained token: the advantages handed
    to a token-sum backend (SkyRL's GPU trainer) move by exactly minus that."""
    from rllm_sweeps.training.custom_loss import algorithm_config, custom_loss_step, skyrl_loss_function
    from rllm_sweeps.training.datums import Datum

    s, _ = settings("algorithm.use_kl_loss=true", "algorithm.kl_beta=0.3", ALGORITHM + "kl_estimator_type=k1")
    rng = np.random.default_rng(1)
    datums = [
        Datum([1] * n, [2] * n, [0.0] + [1.0] * (n - 1), list(rng.normal(-2, 0.3, n)), [0.0] + [a] * (n - 1), n - 1, 0)
        for n, a in ((5, 0.7), (3, -1.2))
    ]
    current = [list(np.asarray(d.logprobs) + rng.normal(0, 0.1, len(d.logprobs))) for d in datums]
    reference = [list(np.asarray(d.logprobs) + rng.normal(0, 0.2, len(d.logprobs))) for d in datums]
    algorithm, loss = algorithm_config(s), skyrl_loss_function("ppo")
    plain = custom_loss_step(datums, current, algorithm, loss, "token-sum")
    with_kl = custom_loss_step(datums, current, algorithm, loss, "token-sum", reference)
    assert algorithm.kl_loss_coef == 0.3 and algorithm.kl_estimator_type == "k1"
    assert with_kl.metrics["kl_loss"] != 0 and "kl_loss" not in plain.metrics
    for d, a, b in zip(datums, plain.datums, with_kl.datums, strict=True):
        n = sum(d.weights)
        expected = [-0.3 / (len(datums) * n) * w for w in d.weights]
        assert np.subtract(b.advantages, a.advantages) == pytest.approx(expected, abs=1e-12)


@pytest.mark.slow
def test_the_gpu_trainers_kl_loss_route_trains_against_the_reference_adapter(make_trainer):
    """SkyRL's GPU trainer has no KL loss in Tinker mode: the loop adds SkyRL's KL term to the policy
    loss as a custom loss (its engine's kl_loss_in_advantages=False), here on the JAX backend. Step 1
    samples the reference itself (k3's gradient is 0 there: the update is the plain one's); step 2
    samples a trained policy and the KL term changes the update."""
    from rllm_sweeps.engines.skyrl_train import SkyRLTrainEngine

    assert not SkyRLTrainEngine("fsdp").traits.kl_loss_in_advantages
    route = dataclasses.replace(JaxEngine().traits, kl_loss_in_advantages=False)
    common = ("trainer.lr=0.05",)
    kl = ("algorithm.use_kl_loss=true", "algorithm.kl_beta=1.0")
    a, b = make_trainer(*common, engine=route), make_trainer(*common, *kl, engine=route)
    (ma1, ma2), (mb1, mb2) = [a.train_step(), a.train_step()], [b.train_step(), b.train_step()]
    assert abs(mb1["kl"]) < 1e-6 and mb1["grad_norm"] == pytest.approx(ma1["grad_norm"], rel=1e-6)
    assert mb2["reward_mean"] == ma2["reward_mean"]  # same policy sampled
    assert abs(mb2["kl"]) > 1e-4 and mb2["grad_norm"] != pytest.approx(ma2["grad_norm"], rel=1e-4)
