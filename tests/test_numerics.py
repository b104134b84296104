"""Shares do not move when y and the predictions shift by a constant (targets in the millions).

R² is invariant to a common shift of y and f; the shares must be too.  The reference is exact
rational arithmetic on the model's stored numbers (``oracle.rsq_rational``).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from oracle import rsq_rational
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeRegressor

from shap_rsq import RSquaredExplainer
from shap_rsq.engine.run import check_row_totals

SHIFTS = [0.0, 1e6, 1e8]


def _data(n=40, p=4, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=n)
    return X, y


def _models():
    yield "tree", DecisionTreeRegressor(max_depth=3, random_state=0)
    yield "forest", RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0)
    yield "boosting", GradientBoostingRegressor(n_estimators=4, max_depth=2, random_state=0)
    lightgbm = pytest.importorskip("lightgbm")
    yield "lightgbm", lightgbm.LGBMRegressor(n_estimators=4, num_leaves=4, min_child_samples=3, verbose=-1)


@pytest.mark.parametrize("shift", SHIFTS)
@pytest.mark.parametrize("name", ["tree", "forest", "boosting", "lightgbm"])
def test_shares_of_a_shifted_target_match_exact_rational_arithmetic(name, shift):
    model = dict(_models())[name]
    X, y = _data()
    y = y + shift
    model.fit(X, y)
    explainer = RSquaredExplainer(model)
    shares = explainer.rsq(X, y)
    exact = np.array([float(v) for v in rsq_rational(explainer.forest, X, y)])
    # y itself is stored to 1 ulp (1.5e-8 at 1e8): residuals carry that much, no more
    np.testing.assert_allclose(shares, exact, rtol=0, atol=1e-9 + 1e-16 * shift)


@pytest.mark.parametrize("shift", [1e6, 1e8])
def test_shares_move_less_than_1e_6_when_target_and_trees_shift(shift):
    X, y = _data(n=200, p=5, seed=1)
    base = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
    # the same tree with every value shifted (scikit-learn's own split search loses its digits at 1e8)
    moved = copy.deepcopy(base)
    moved.tree_.value[:] += shift
    np.testing.assert_allclose(moved.predict(X) - shift, base.predict(X), atol=1e-7)
    before = RSquaredExplainer(base).rsq(X, y)
    after = RSquaredExplainer(moved).rsq(X, y + shift)
    assert np.max(np.abs(after - before)) < 1e-6
    r2 = r2_score(y + shift, moved.predict(X))
    assert abs(after.sum() - r2) < 1e-6  # efficiency: E f equals the mean of y for a tree fitted on these rows


def test_per_row_shares_of_a_target_near_1e12_pass_their_additivity_check():
    # the check's own expected parts round at the scale of y (1e-4 each near 1e12): its tolerance
    # grows with that rounding, where a fixed 1e-6 raised "please report this" on a right answer
    X, y = _data(n=200, p=5, seed=1)
    base = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
    moved = copy.deepcopy(base)
    moved.tree_.value[:] += 1e12
    explanation = RSquaredExplainer(moved)(X, y + 1e12)
    # y + 1e12 is stored to 1.2e-4: each row's part of R² moves by up to 1e-6 of the spread's scale
    np.testing.assert_allclose(explanation.values, RSquaredExplainer(base)(X, y).values, atol=1e-5)
    target = y + 1e12
    with pytest.raises(AssertionError, match="do not add up"):  # the check still sees a wrong total
        check_row_totals(np.full((200, 1), 1e-3), np.zeros(200), target, target, np.ones(200), 1e12, 200.0)


def test_a_target_whose_sum_of_squares_overflows_is_refused_by_name():
    # y near 1e160: the sum of squares overflowed to infinity and every share read NaN (the selector's
    # 0, keeping nothing), with numpy's RuntimeWarnings only
    from shap_rsq import RSquaredSelector

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (2 * X[:, 0] + rng.normal(size=200)) * 1e160
    tree = DecisionTreeRegressor(max_depth=3, random_state=0)
    message = "y spreads too widely for float64"
    with pytest.raises(ValueError, match=message):
        RSquaredExplainer(copy.deepcopy(tree).fit(X, y)).rsq(X, y)
    for options in ({}, {"cv": 3}):
        with pytest.raises(ValueError, match=message):
            RSquaredSelector(tree, **options).fit(X, y)
    # the same spread in a larger unit is fine, and gives the shares of any unit
    scaled = RSquaredExplainer(copy.deepcopy(tree).fit(X, y / 1e150)).rsq(X, y / 1e150)
    unit = RSquaredExplainer(copy.deepcopy(tree).fit(X, y / 1e160)).rsq(X, y / 1e160)
    np.testing.assert_allclose(scaled, unit, atol=1e-9)


@pytest.mark.parametrize("value", [0.1, 1 / 3, 2.5])
@pytest.mark.parametrize("weighted", [False, True])
def test_a_constant_whose_mean_rounds_off_it_is_still_constant(value, weighted):
    # the mean of 100 copies of 0.1 is one rounding off 0.1: the sum of squares came out 1e-33,
    # the target passed for one with variance, and every share was near 1e30
    from sklearn.ensemble import RandomForestClassifier

    from shap_rsq import RSquaredSelector

    rng = np.random.default_rng(2)
    X = rng.normal(size=(100, 4))
    w = rng.uniform(0.2, 2.0, 100) if weighted else None
    explainer = RSquaredExplainer(RandomForestRegressor(4, max_depth=4, random_state=0).fit(X, X[:, 0]))
    y = np.full(100, value)
    for call in (
        lambda: explainer.rsq(X, y, w),
        lambda: explainer(X, y, sample_weight=w),
        lambda: explainer.rsq_interactions(X, y, w),
    ):
        with pytest.raises(ValueError, match="y is constant"):
            call()
    classifier = RSquaredExplainer(RandomForestClassifier(4, max_depth=3, random_state=0).fit(X, X[:, 0] > 0))
    with pytest.raises(ValueError, match="y is constant"):
        classifier.rsq(X, np.full(100, True), sample_weight=w)
    # a second output constant: refused for the averages that need its R², skipped by variance_weighted
    Y = np.column_stack([X[:, 0] + rng.normal(size=100), y])
    two = RSquaredExplainer(RandomForestRegressor(4, max_depth=4, random_state=0).fit(X, Y))
    with pytest.raises(ValueError, match=r"y is constant for output\(s\)"):
        two.rsq(X, Y, w, multioutput="uniform_average")
    single = RSquaredExplainer(RandomForestRegressor(4, max_depth=4, random_state=0).fit(X, Y)).rsq(
        X, Y, w, multioutput="variance_weighted"
    )
    assert np.all(np.abs(single) < 1.5)
    with pytest.raises(ValueError, match="y is constant over every held-out fold"):
        RSquaredSelector(DecisionTreeRegressor(max_depth=3), cv=3).fit(X, y, sample_weight=w)


@pytest.mark.parametrize("scale", [1e307, 5e-324, 1e-200])
def test_the_scale_of_the_weights_does_not_move_the_shares(scale):
    # R² is a ratio of weighted sums: weights of 1e307 were refused as "y spreads too widely", and
    # subnormal ones gave shares summing to 1.035 for an R² of 0.987
    rng = np.random.default_rng(6)
    X = rng.normal(size=(100, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=100)
    model = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    w = rng.uniform(0.5, 2.0, size=100)
    expected = explainer.rsq(X, y, sample_weight=w)
    scaled = np.full(100, scale) if scale < 1e-300 else w * scale  # a subnormal has one digit: all equal
    reference = explainer.rsq(X, y) if scale < 1e-300 else expected
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=scaled), reference, rtol=1e-12, atol=1e-15)
    local = explainer(X, y, sample_weight=scaled)
    np.testing.assert_allclose(local.values.sum(0), reference, rtol=1e-12, atol=1e-15)
    # the loss decomposition keeps the weights' own scale
    loss = explainer.loss_reduction(X, y, sample_weight=w)
    np.testing.assert_allclose(explainer.loss_reduction(X, y, sample_weight=2 * w), 2 * loss, rtol=1e-12)


@pytest.mark.parametrize("scale", [1e-160, 1e-170])
def test_a_target_whose_squares_underflow_is_refused_by_name_not_called_constant(scale):
    # at 1e-160 the shares drifted by 2e-4 and per-row shares failed their check; at 1e-170 y was
    # called constant though it varies
    X, y = _data(n=100, seed=2)
    model = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y * scale)
    with pytest.raises(ValueError, match=r"y varies too little for float64 .* smaller unit"):
        RSquaredExplainer(model).rsq(X, y * scale)
    with pytest.raises(ValueError, match="y is constant"):
        RSquaredExplainer(model).rsq(X, np.full(100, 0.1))
