"""The confirmation stage's statistics (rllm_sweeps/report/confirm_stats.py)."""

from __future__ import annotations

import pytest

from rllm_sweeps.report.confirm_stats import confirm, confirmed


def test_configs_are_ranked_by_mean_in_the_metrics_direction() -> None:
    replicates = {"a": [0.4, 0.5, 0.6], "b": [0.7, 0.8, 0.9], "c": [0.1, 0.2, 0.3]}
    assert [r.name for r in confirm(replicates).ranking] == ["b", "a", "c"]
    assert [r.name for r in confirm(replicates, maximize=False).ranking] == ["c", "a", "b"]


def test_the_confidence_interval_is_students_t_around_the_mean() -> None:
    row = confirmed("a", [1.0, 2.0, 3.0])
    # mean 2, sem 1/sqrt(3), t(0.975, df=2) = 4.3027
    half = 4.302652729911275 / 3**0.5
    assert row.mean == 2.0
    assert row.ci == pytest.approx((2.0 - half, 2.0 + half))
    assert confirmed("one", [0.5]).ci is None


def test_a_lead_far_beyond_the_seed_noise_is_significant() -> None:
    result = confirm({"a": [0.50, 0.51, 0.49, 0.50], "b": [0.80, 0.81, 0.79, 0.80]})
    assert result.winner is not None and result.winner.name == "b"
    assert result.p_value is not None and result.p_value < 1e-4
    assert result.significant


def test_a_lead_within_the_seed_noise_is_not_significant() -> None:
    result = confirm({"lucky": [0.9, 0.2, 0.6], "steady": [0.5, 0.55, 0.45]})
    assert result.winner is not None and result.winner.name == "lucky"
    assert result.p_value is not None and result.p_value > 0.5
    assert not result.significant


def test_without_two_seeds_per_config_there_is_no_test() -> None:
    assert confirm({"a": [0.5], "b": [0.4, 0.6]}).p_value is None
    assert not confirm({"a": [0.5], "b": [0.4, 0.6]}).significant
    assert confirm({"a": [0.5, 0.6]}).p_value is None


def test_equal_constant_replicates_are_not_a_significant_lead() -> None:
    result = confirm({"a": [0.5, 0.5], "b": [0.5, 0.5]})
    assert result.p_value == 1.0 and not result.significant
    assert [r.name for r in result.ranking] == ["a", "b"]  # a tie keeps the search's order


def test_different_constant_replicates_are_a_certain_lead() -> None:
    result = confirm({"a": [0.5, 0.5], "b": [0.6, 0.6]})
    assert result.winner is not None and result.winner.name == "b"
    assert result.p_value == 0.0 and result.significant
