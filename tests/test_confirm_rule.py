"""The confirmation stage's rule (sweep/confirm_rule.py), pure: which points, which winner."""

from __future__ import annotations

from rllm_sweeps.sweep.confirm_rule import confirmed_best, top_points


def test_top_points_ranks_by_mean_and_keeps_plan_order_on_ties():
    means = {3: 0.5, 0: 0.7, 1: 0.5, 2: 0.9}
    assert top_points(means, 2) == [2, 0]
    assert top_points(means, 4) == [2, 0, 3, 1]  # 3 before 1: the mapping's (plan) order
    assert top_points(means, 2, maximize=False) == [3, 1]
    assert top_points({}, 3) == []


def test_confirmed_best_is_the_best_fresh_seed_mean():
    assert confirmed_best({"a": [0.2, 0.4], "b": [0.5, 0.1], "c": [0.35, 0.3]}) == "c"
    assert confirmed_best({"a": [0.25, 0.25], "b": [0.5, 0.25]}, maximize=False) == "a"
    assert confirmed_best({}) is None
