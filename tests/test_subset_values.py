"""The R² game's Shapley values of deep trees on few players, from their game on every subset
(``kernels.interactions.subset_values``): exact against subset enumeration, routed by cost."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import xgboost
from conftest import make_data, walked_bytes
from oracle import rsq_oracle, second_order_oracle
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeRegressor

from shap_rsq import RSquaredExplainer
from shap_rsq.engine.worker_plans import keep_within
from shap_rsq.kernels.interactions.subset_values import SubsetUnit
from shap_rsq.kernels.lca.unit import LcaUnit
from shap_rsq.tuning import DEFAULT_TUNING


def _subset_trees(explainer, local: bool = False) -> int:
    return sum(len(u.trees) for u in explainer._units.units(local) if isinstance(u, SubsetUnit))


def _grown_tree(nan: bool):
    X, y, w = make_data(seed=3, nan=nan)
    return DecisionTreeRegressor(random_state=0).fit(X, y, sample_weight=w), X, y, w


@pytest.mark.parametrize("nan", [False, True])
def test_a_fully_grown_tree_takes_the_subsets_and_matches_subset_enumeration(nan):
    model, X, y, w = _grown_tree(nan)
    explainer = RSquaredExplainer(model)
    assert _subset_trees(explainer) == 1 and _subset_trees(explainer, local=True) == 1  # chosen by cost
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
    shares = explainer.rsq(X, y, sample_weight=w)
    explanation = explainer(X, y, sample_weight=w)
    np.testing.assert_allclose(shares, expected_global, rtol=0, atol=1e-9)
    np.testing.assert_allclose(explanation.values, expected_local, rtol=0, atol=1e-9)
    assert np.abs(expected_global).max() > 1e-2
    # efficiency: the shares add up to the model's R² above the constant's, each row to its own share
    f = model.predict(X)
    sst = np.sum(w * (y - np.average(y, weights=w)) ** 2)
    row_share = w * ((y - np.average(y, weights=w)) ** 2 - (y - f) ** 2) / sst
    np.testing.assert_allclose(explanation.values.sum(axis=1) + explanation.base_values, row_share, atol=1e-9)
    assert explanation.values.sum() + explanation.base_values.sum() == pytest.approx(
        r2_score(y, f, sample_weight=w), abs=1e-9
    )


def test_the_lca_kernel_gives_the_same_values():
    model, X, y, w = _grown_tree(True)
    subsets = RSquaredExplainer(model)
    lca = RSquaredExplainer(model)._set_engine(kernel="lca")
    assert isinstance(lca._units.units()[0], LcaUnit) and _subset_trees(lca) == 0
    np.testing.assert_allclose(subsets.rsq(X, y, sample_weight=w), lca.rsq(X, y, sample_weight=w), atol=1e-12)
    np.testing.assert_allclose(subsets(X, y).values, lca(X, y).values, atol=1e-12)


@pytest.mark.parametrize("kernel", ["auto", "enumerate"])
def test_a_forest_with_nan_and_weights_matches_subset_enumeration(kernel):
    X, y, w = make_data(seed=4, nan=True)
    model = RandomForestRegressor(6, max_depth=9, random_state=0).fit(X, y, sample_weight=w)
    explainer = RSquaredExplainer(model)._set_engine(kernel=kernel)
    assert _subset_trees(explainer) >= (6 if kernel == "enumerate" else 1)
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected_global, rtol=0, atol=1e-9)
    np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, expected_local, rtol=0, atol=1e-9)


def test_grouped_players_match_subset_enumeration_over_groups(monkeypatch):
    calls = []
    contribute = SubsetUnit.contribute
    monkeypatch.setattr(SubsetUnit, "contribute", lambda self, *a: calls.append(1) or contribute(self, *a))
    model, X, y, w = _grown_tree(True)
    explainer = RSquaredExplainer(model)
    groups, members = {"ab": [0, 2], "cde": [1, 4, 5]}, [[0, 2], [1, 4, 5], [3]]
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w, players=members)
    shares = explainer.rsq(X, y, sample_weight=w, groups=groups)
    np.testing.assert_allclose(shares, expected_global, rtol=0, atol=1e-9)
    assert len(calls) == 1  # the grouped game's tree took the subsets
    local = explainer(X, y, sample_weight=w, groups=groups)
    np.testing.assert_allclose(local.values, expected_local, rtol=0, atol=1e-9)
    assert len(calls) == 2


def test_second_order_games_of_a_deep_booster_match_subset_enumeration():
    X, y, w = make_data(seed=6, nan=True)
    label = (y > np.median(y)).astype(int)
    model = xgboost.XGBClassifier(n_estimators=4, max_depth=8, learning_rate=0.5, random_state=0).fit(X, label)
    explainer = RSquaredExplainer(model)._set_engine(kernel="enumerate")
    assert _subset_trees(explainer) >= 1
    info = explainer.model_info
    expected, expected_local, _ = second_order_oracle(
        explainer.forests[0], X, label.astype(float), w, info.loss, info.loss_power
    )
    scale = np.abs(expected).sum()  # loss reductions in deviance units: 1e-9 of the total, as R² shares
    np.testing.assert_allclose(explainer.loss_reduction(X, label, sample_weight=w), expected, atol=1e-9 * scale)
    local = explainer.loss_reduction(X, label, sample_weight=w, local=True)
    np.testing.assert_allclose(local, expected_local, rtol=0, atol=1e-9 * scale)


def test_blocks_of_patterns_under_a_small_budget_change_nothing():
    model, X, y, w = _grown_tree(True)
    whole = RSquaredExplainer(model)
    small = RSquaredExplainer(model)._set_engine(tuning=replace(DEFAULT_TUNING, memory_budget=1 << 22))
    unit = small._units.units()[0]
    assert isinstance(unit, SubsetUnit) and unit.pattern_step() < len(X) // 4
    np.testing.assert_allclose(small.rsq(X, y, sample_weight=w), whole.rsq(X, y, sample_weight=w), atol=1e-14)
    np.testing.assert_allclose(small(X, y).values, whole(X, y).values, atol=1e-14)


def test_blocks_of_patterns_in_cache_change_nothing():
    model, X, y, w = _grown_tree(True)
    whole = RSquaredExplainer(model)._set_engine(tuning=replace(DEFAULT_TUNING, subset_block_elements=1 << 40))
    live = whole._units.units()[0].plan.live
    small = replace(DEFAULT_TUNING, subset_block_elements=8 * live)
    blocked = RSquaredExplainer(model)._set_engine(tuning=small)
    assert whole._units.units()[0].pattern_step() >= len(X)
    assert blocked._units.units()[0].pattern_step() == 8  # the live tables of 8 patterns
    np.testing.assert_allclose(blocked.rsq(X, y, sample_weight=w), whole.rsq(X, y, sample_weight=w), atol=1e-14)
    np.testing.assert_allclose(blocked(X, y).values, whole(X, y).values, atol=1e-14)


def test_trees_on_more_players_than_the_limit_keep_the_lca_kernel():
    model = _grown_tree(False)[0]
    few = replace(DEFAULT_TUNING, subset_players=3)
    explainer = RSquaredExplainer(model)._set_engine(kernel="enumerate", tuning=few)
    assert _subset_trees(explainer) == 0
    cheap = replace(DEFAULT_TUNING, subset_element_cost=1e9, subset_local_element_cost=1e9)
    assert _subset_trees(RSquaredExplainer(model)._set_engine(tuning=cheap)) == 0


def test_plans_past_the_room_are_dropped_and_compiled_again_with_the_same_values():
    model, X, y, w = _grown_tree(True)
    explainer = RSquaredExplainer(model)
    first = explainer.rsq(X, y, sample_weight=w)
    unit = explainer._units.units()[0]
    assert unit._plan is not None  # kept: well within the room
    assert keep_within(unit, (True, True), 0) == 0 and unit._plan is None
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), first, atol=1e-15)


def test_a_subset_plan_counts_every_array_it_holds():
    # plan_bytes walked each plan's step records field by field on every call (40 ms a call on
    # 244 LightGBM trees); the plan now counts its arrays once, and must find the same ones
    from shap_rsq.engine.worker_plans import plan_bytes

    model, X, y, _ = _grown_tree(False)
    explainer = RSquaredExplainer(model)
    explainer.rsq(X, y)
    (unit,) = explainer._units.units()
    assert isinstance(unit, SubsetUnit) and len(unit.plan.steps) > 20
    assert plan_bytes(unit.plan) == walked_bytes(unit.plan) > unit.plan.leaf_value.nbytes
