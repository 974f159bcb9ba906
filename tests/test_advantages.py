"""Hand-computed checks of the advantage estimators."""

import math

import numpy as np
import pytest

from rllm_sweeps.advantages import (
    compute_advantages,
    grpo,
    reinforce,
    reinforce_plus_plus_baseline,
    rloo,
)


def test_grpo_normalised_by_std():
    # group [1, 0, 0, 0]: mean 0.25, unbiased std sqrt(0.25) = 0.5
    adv = grpo([[1.0, 0.0, 0.0, 0.0]])
    expected = np.array([[0.75, -0.25, -0.25, -0.25]]) / (0.5 + 1e-6)
    np.testing.assert_allclose(adv, expected, rtol=1e-12)
    np.testing.assert_allclose(adv[0, 0], 1.4999970000059998, rtol=1e-12)


def test_grpo_without_std():
    adv = grpo([[1.0, 2.0, 3.0], [0.0, 0.0, 3.0]], norm_by_std=False)
    np.testing.assert_allclose(adv, [[-1.0, 0.0, 1.0], [-1.0, -1.0, 2.0]])


def test_grpo_two_groups_std():
    # group [2, 4]: mean 3, unbiased std sqrt(2)
    adv = grpo([[2.0, 4.0]])
    s = math.sqrt(2.0) + 1e-6
    np.testing.assert_allclose(adv, [[-1.0 / s, 1.0 / s]], rtol=1e-12)


def test_rloo_leave_one_out():
    # [1, 0, 0, 0]: baselines 0, 1/3, 1/3, 1/3
    adv = rloo([[1.0, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(adv, [[1.0, -1 / 3, -1 / 3, -1 / 3]], rtol=1e-12)
    # [1, 2, 6]: baselines 4, 3.5, 1.5
    np.testing.assert_allclose(rloo([[1.0, 2.0, 6.0]]), [[-3.0, -1.5, 4.5]], rtol=1e-12)


def test_reinforce_is_the_return():
    r = [[0.5, 0.0], [1.0, 1.0]]
    np.testing.assert_array_equal(reinforce(r), r)


def test_reinforce_plus_plus_baseline():
    # centred: [[0.5, -0.5], [0, 0]] (second group constant) -> batch std (ddof 1)
    # of [0.5, -0.5, 0, 0] = sqrt(0.5 / 3)
    adv = reinforce_plus_plus_baseline([[1.0, 0.0], [3.0, 3.0]])
    std = math.sqrt(0.5 / 3)
    expected = np.array([[0.5, -0.5], [0.0, 0.0]]) / math.sqrt(std**2 + 1e-8)
    np.testing.assert_allclose(adv, expected, rtol=1e-12)


@pytest.mark.parametrize("estimator", ["grpo", "rloo", "reinforce_plus_plus_baseline"])
def test_equal_groups_give_zero_not_nan(estimator):
    # 0.1 * 3 is not exactly representable: mean - r would be ~1e-17, not 0
    r = [[0.1, 0.1, 0.1], [0.0, 0.0, 0.0], [1.0, 0.0, 0.5]]
    adv = compute_advantages(r, estimator)
    assert np.all(np.isfinite(adv))
    np.testing.assert_array_equal(adv[:2], 0.0)
    assert np.any(adv[2] != 0.0)


@pytest.mark.parametrize("estimator", ["grpo", "rloo", "reinforce_plus_plus_baseline"])
def test_all_equal_batch_is_zero(estimator):
    adv = compute_advantages(np.full((4, 4), 0.3), estimator)
    np.testing.assert_array_equal(adv, 0.0)


def test_group_of_one_is_reinforce():
    # verl convention: no baseline for a single sample (mean 0, std 1)
    np.testing.assert_array_equal(grpo([[0.7], [0.0]]), [[0.7], [0.0]])
    np.testing.assert_array_equal(rloo([[0.7], [0.0]]), [[0.7], [0.0]])


def test_grpo_dispatch_flag_and_errors():
    r = [[1.0, 3.0]]
    np.testing.assert_allclose(compute_advantages(r, "grpo", norm_adv_by_std_in_grpo=False), [[-1.0, 1.0]])
    with pytest.raises(ValueError, match="unknown adv_estimator"):
        compute_advantages(r, "gae")
    with pytest.raises(ValueError, match="shape"):
        compute_advantages([1.0, 2.0], "grpo")
    with pytest.raises(ValueError, match="NaN"):
        compute_advantages([[1.0, float("nan")]], "grpo")


def _skyrl_outcome_advantages(name: str, rewards: np.ndarray) -> np.ndarray:
    """SkyRL's own estimator of that name on outcome rewards (one per response, equal lengths)."""
    import torch
    from skyrl.backends.skyrl_train.utils.ppo_utils import AdvantageEstimatorRegistry

    groups, n = rewards.shape
    length = 3
    token_rewards = torch.zeros(groups * n, length)
    token_rewards[:, -1] = torch.tensor(rewards.reshape(-1))
    mask = torch.ones(groups * n, length)
    index = np.repeat(np.arange(groups), n)
    adv, _ = AdvantageEstimatorRegistry.get(name)(
        token_level_rewards=token_rewards, response_mask=mask, index=index, gamma=1.0, lambd=1.0
    )
    return adv[:, 0].numpy().reshape(groups, n)


@pytest.mark.parametrize("name", ["reinforce++", "maxrl", "grpo", "rloo"])
def test_skyrls_estimators_mean_what_skyrl_computes_under_the_same_name(name):
    rewards = np.array([[1.0, 0.0, 0.5, 0.0], [0.2, 0.9, 0.9, 0.4], [1.0, 1.0, 1.0, 1.0]])
    ours = compute_advantages(rewards, name, lengths=np.full(rewards.shape, 3))
    np.testing.assert_allclose(ours, _skyrl_outcome_advantages(name, rewards), rtol=1e-4, atol=1e-5)


def test_rllms_reinforce_estimators_are_not_skyrls_reinforce_plus_plus():
    rewards = np.array([[1.0, 0.0], [1.0, 1.0]])
    assert not np.allclose(compute_advantages(rewards, "reinforce"), compute_advantages(rewards, "reinforce++"))
    baseline = compute_advantages(rewards, "reinforce_plus_plus_baseline")
    assert baseline[1].tolist() == [0.0, 0.0]  # the group mean is its baseline
    assert compute_advantages(rewards, "reinforce++")[1][0] > 0  # batch whitening only: above the batch mean
