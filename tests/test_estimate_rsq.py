"""estimate_rsq: exact on every row, within its standard errors on a sample, its control variate (the
additive part of each row's contributions, computed for every row) and its refusals."""

from __future__ import annotations

import itertools
from functools import partial

import numpy as np
import pandas as pd
import pytest
from conftest import FAMILIES, NO_NAN, deep_data
from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier, RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor

from shap_rsq import MemoryBudgetError, RSquaredExplainer, estimate_rsq
from shap_rsq.explainer._additive_part import additive_part
from shap_rsq.explainer._estimate import _sample_total

_data = partial(deep_data, noise=0.5)


def _inputs(explainer, X, y, w):
    rows, target, weights, sst = explainer._inputs.for_rsq(X, y, w)
    forests, caches = explainer._game_sets.get(None)
    order = np.concatenate([unit.trees for unit in caches[0].units(True)])
    return forests[0], order, rows.array, target, weights, sst


def _leave_one_out(explainer, X, y, w, control_variate: bool, groups=None) -> np.ndarray:
    """``(n, p)`` the estimates of every draw of ``n - 1`` of the ``n`` rows, over the score's
    denominator: equally likely draws, so an unbiased estimate averages to the exact shares."""
    second_order = explainer.model_info.second_order
    inputs = explainer._second_order_inputs if second_order else explainer._squared_error_inputs
    rows, targets, weights, denominator = inputs(X, y, w)
    players = explainer._inputs.players(groups, rows)
    n = len(weights)
    draws = [np.flatnonzero(np.arange(n) != i) for i in range(n)]
    totals = [
        _sample_total(explainer, rows.array, targets, weights, pick, n, control_variate, players)[0] for pick in draws
    ]
    return np.array(totals) / denominator


def test_boosted_stumps_are_estimated_exactly_from_three_rows():
    # a stump's expected prediction is additive in the features, so nothing is left to sample
    xgboost = pytest.importorskip("xgboost")
    X, y, w = _data(400)
    X[np.random.default_rng(1).random(X.shape) < 0.05] = np.nan  # missing values take the default child
    models = [
        (xgboost.XGBRegressor(n_estimators=40, max_depth=1, random_state=0).fit(X, y), X),
        (GradientBoostingRegressor(n_estimators=30, max_depth=1, random_state=0).fit(np.nan_to_num(X), y), None),
    ]
    for model, rows in models:
        rows = np.nan_to_num(X) if rows is None else rows
        explainer = RSquaredExplainer(model)
        exact = explainer.rsq(rows, y, sample_weight=w)
        estimate = estimate_rsq(explainer, rows, y, sample_weight=w, n_sample=3, random_state=0)
        np.testing.assert_allclose(estimate.values, exact, rtol=0, atol=1e-12)
        assert np.all(estimate.standard_error < 1e-12)
        plain = estimate_rsq(explainer, rows, y, sample_weight=w, n_sample=3, random_state=0, control_variate=False)
        assert np.max(np.abs(plain.values - exact)) > 1e-3  # the plain sample mean is not exact


@pytest.mark.parametrize("control_variate", [True, False])
def test_the_samples_of_all_rows_but_one_average_to_the_exact_shares(control_variate):
    # unbiasedness, exactly: a sample without replacement of n - 1 of n rows is one of n equally
    # likely draws, and the estimates of all of them average to the total
    X, y, w = _data(12)
    explainer = RSquaredExplainer(RandomForestRegressor(3, max_depth=4, random_state=0).fit(X, y))
    estimates = _leave_one_out(explainer, X, y, w, control_variate)
    np.testing.assert_allclose(estimates.mean(axis=0), explainer.rsq(X, y, sample_weight=w), rtol=0, atol=1e-12)
    assert estimates.std(axis=0).max() > 1e-8  # the draws differ: the test is not of a constant


@pytest.mark.parametrize(
    ("family", "nan"), [(f, nan) for f in FAMILIES for nan in (False, True) if f not in NO_NAN or not nan]
)
def test_every_family_is_estimated_without_bias(fitted, family, nan):
    # the leave-one-out identity on 14 rows of each family's model (float32 thresholds, NaN
    # routing, symmetric trees): the additive part's total matches the parts it subtracts
    model, X, y, w = fitted(family, nan)
    X, y, w = X[:14], y[:14], w[:14]
    explainer = RSquaredExplainer(model)
    rows, target, weights, sst = explainer._inputs.for_rsq(X, y, w)
    draws = [np.flatnonzero(np.arange(14) != i) for i in range(14)]
    totals = [_sample_total(explainer, rows.array, target, weights, pick, 14, True)[0] for pick in draws]
    np.testing.assert_allclose(np.mean(totals, axis=0) / sst, explainer.rsq(X, y, sample_weight=w), rtol=0, atol=1e-12)


def test_the_additive_part_adds_up_and_does_not_depend_on_the_chunks():
    X, y, w = _data(50)
    explainer = RSquaredExplainer(RandomForestRegressor(4, max_depth=5, random_state=0).fit(X, y))
    forest, order, rows, target, weights, _ = _inputs(explainer, X, y, w)
    every = np.arange(50)
    whole = additive_part(forest, order, rows, target, weights, every, 2 << 30)
    np.testing.assert_allclose(whole.total, whole.sampled.sum(axis=0), rtol=0, atol=1e-12)
    for budget in (8 * 8 * 7, 8 * 8 * 7 * 3):  # chunks of 1 and 3 rows
        chunked = additive_part(forest, order, rows, target, weights, every[::7], budget)
        np.testing.assert_allclose(chunked.total, whole.total, rtol=0, atol=1e-12)
        np.testing.assert_allclose(chunked.sampled, whole.sampled[::7], rtol=0, atol=1e-12)


def test_the_additive_part_of_a_tree_is_its_treeshap_values_times_the_residual():
    # one tree, no rows before it: w (2 (y - E f) - (f - E f)) times shap's own TreeSHAP values
    shap = pytest.importorskip("shap")
    X, y, w = _data(80)
    model = RandomForestRegressor(1, max_depth=4, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    forest, order, rows, target, weights, _ = _inputs(explainer, X, y, w)
    part = additive_part(forest, order, rows, target, weights, np.arange(80), 2 << 30)
    base = shap.TreeExplainer(model)
    shift = model.predict(X) - base.expected_value
    expected = (w * (2 * (y - base.expected_value) - shift))[:, None] * base.shap_values(X)
    np.testing.assert_allclose(part.sampled, expected, rtol=0, atol=1e-10)


def test_the_control_variate_shrinks_a_forests_standard_errors_and_stays_within_them():
    X, y, _ = _data(600)
    explainer = RSquaredExplainer(RandomForestRegressor(20, max_depth=6, random_state=0).fit(X, y))
    exact = explainer.rsq(X, y)
    z = []
    for seed in range(4):
        estimate = estimate_rsq(explainer, X, y, n_sample=30, random_state=seed)
        plain = estimate_rsq(explainer, X, y, n_sample=30, random_state=seed, control_variate=False)
        varies = plain.standard_error > 1e-6
        assert np.all(estimate.standard_error[varies] < plain.standard_error[varies] / 5)
        assert estimate.standard_error.max() < plain.standard_error.max() / 50
        z.append((estimate.values - exact)[varies] / estimate.standard_error[varies])
    assert np.abs(np.concatenate(z)).max() < 5


def test_the_estimate_of_a_reordered_frame_is_labelled_like_rsq():
    X, y, _ = _data(200)
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(6)])
    explainer = RSquaredExplainer(RandomForestRegressor(5, max_depth=5, random_state=0).fit(frame, y))
    reordered = frame[frame.columns[::-1]]
    estimate = estimate_rsq(explainer, reordered, y, n_sample=50, random_state=0)
    exact = explainer.rsq(reordered, y)
    assert list(estimate.values.index) == list(exact.index) == list(estimate.standard_error.index)
    assert np.all(np.abs(estimate.values - exact) <= 5 * estimate.standard_error + 1e-12)


@pytest.mark.parametrize("loose", [1, "yes", None])
def test_control_variate_must_be_a_bool(loose):
    X, y, _ = _data(40)
    explainer = RSquaredExplainer(RandomForestRegressor(2, max_depth=3, random_state=0).fit(X, y))
    with pytest.raises(ValueError, match="control_variate must be True or False"):
        estimate_rsq(explainer, X, y, n_sample=5, control_variate=loose)


def test_the_additive_part_of_single_features_as_groups_is_shaps():
    # groups take this package's TreeSHAP of the grouped players: on groups of one feature each it
    # is shap's, to rounding
    X, y, w = _data(30)
    explainer = RSquaredExplainer(RandomForestRegressor(2, max_depth=3, random_state=0).fit(X, y))
    forest, order, rows, target, weights, _ = _inputs(explainer, X, y, w)
    grouped = forest.grouped(np.arange(6))
    pick = np.arange(3)
    ours = additive_part(grouped, order, rows, target, weights, pick, 2 << 30)
    shaps = additive_part(forest, order, rows, target, weights, pick, 2 << 30)
    np.testing.assert_allclose(ours.total, shaps.total, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours.sampled, shaps.sampled, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("control_variate", [True, False])
def test_grouped_players_are_estimated_without_bias_and_exactly_from_every_row(control_variate):
    xgboost = pytest.importorskip("xgboost")
    X, y, w = _data(12)
    groups = {"first": [0, 1], "second": [2, 3, 4]}  # feature 5 stays a player of its own
    labels = (y > np.median(y)).astype(int)
    for model, target in [
        (RandomForestRegressor(3, max_depth=4, random_state=0).fit(X, y), y),
        (xgboost.XGBClassifier(n_estimators=4, max_depth=3).fit(X, labels), labels),
    ]:
        explainer = RSquaredExplainer(model)
        exact = np.asarray(explainer.rsq(X, target, sample_weight=w, groups=groups))
        assert exact.shape == (3,)
        estimates = _leave_one_out(explainer, X, target, w, control_variate, groups)
        np.testing.assert_allclose(estimates.mean(axis=0), exact, rtol=0, atol=1e-12)
        every = estimate_rsq(explainer, X, target, w, n_sample=12, groups=groups, control_variate=control_variate)
        np.testing.assert_allclose(every.values, exact, rtol=0, atol=1e-12)
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(6)])
    explainer = RSquaredExplainer(RandomForestRegressor(3, max_depth=4, random_state=0).fit(frame, y))
    named = estimate_rsq(explainer, frame, y, n_sample=8, random_state=0, groups={"pair": ["c0", "c1"]})
    assert list(named.values.index) == list(explainer.rsq(frame, y, groups={"pair": ["c0", "c1"]}).index)


def test_every_draw_of_a_small_population_is_within_rounding_of_exact_for_stumps():
    # all 3-row samples of 8 rows (56 draws) of boosted stumps: each one exact, not only their mean
    X, y, w = _data(8)
    model = GradientBoostingRegressor(n_estimators=10, max_depth=1, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    rows, target, weights, sst = explainer._inputs.for_rsq(X, y, w)
    exact = explainer.rsq(X, y, sample_weight=w)
    for pick in itertools.combinations(range(8), 3):
        total, spread = _sample_total(explainer, rows.array, target, weights, np.array(pick), 8, True)
        np.testing.assert_allclose(total / sst, exact, rtol=0, atol=1e-12)
        assert np.all(spread / sst < 1e-12)


def test_a_long_sample_is_announced_with_advice_for_a_sample():
    # the explainer's own warning told the caller of estimate_rsq to use estimate_rsq
    from dataclasses import replace

    from shap_rsq import LongCallWarning
    from shap_rsq.tuning import DEFAULT_TUNING

    X, y, _ = _data(60)
    model = RandomForestRegressor(2, max_depth=4, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)._set_engine(tuning=replace(DEFAULT_TUNING, long_call_seconds=0.0))
    with pytest.warns(LongCallWarning) as record:
        estimate_rsq(explainer, X, y, n_sample=5, random_state=0)
    messages = [str(w.message) for w in record if issubclass(w.category, LongCallWarning)]
    assert len(messages) == 1 and messages[0].startswith("estimate_rsq(n_sample=5): the exact per-row R² shares")
    assert "Fewer rows (n_sample)" in messages[0] and "shap_rsq.estimate_rsq estimates" not in messages[0]
    assert [w.filename for w in record] == [__file__]
    # named for the score the shares are of
    xgboost = pytest.importorskip("xgboost")
    labels = (y > np.median(y)).astype(int)
    booster = xgboost.XGBClassifier(n_estimators=4, max_depth=3).fit(X, labels)
    explainer = RSquaredExplainer(booster)._set_engine(tuning=replace(DEFAULT_TUNING, long_call_seconds=0.0))
    with pytest.warns(LongCallWarning, match=r"n_sample=5\): the exact per-row D² \(log-loss\) shares"):
        estimate_rsq(explainer, X, labels, n_sample=5, random_state=0)


def test_estimate_with_every_row_is_exact():
    X, y, w = deep_data(n=120, p=8)
    explainer = RSquaredExplainer(RandomForestRegressor(3, random_state=0).fit(X, y))
    estimate = estimate_rsq(explainer, X, y, sample_weight=w, n_sample=500)
    np.testing.assert_allclose(estimate.values, explainer.rsq(X, y, sample_weight=w), rtol=0, atol=1e-12)
    assert estimate.n_sampled == estimate.n_rows == 120
    assert np.all(estimate.standard_error == 0.0)


def test_estimate_from_a_sample_is_within_its_standard_error():
    X, y, _ = deep_data(n=400, p=8)
    explainer = RSquaredExplainer(DecisionTreeRegressor(min_samples_leaf=4, random_state=0).fit(X, y))
    exact = explainer.rsq(X, y)
    z = []
    for seed in range(6):
        estimate = estimate_rsq(explainer, X, y, n_sample=100, random_state=seed)
        assert estimate.n_sampled == 100
        strong = estimate.standard_error > 0
        z.append((estimate.values - exact)[strong] / estimate.standard_error[strong])
    z = np.concatenate(z)
    assert np.abs(z).max() < 4.5
    assert 0.4 < np.sqrt(np.mean(z**2)) < 2.0  # the standard errors are of the right size


def test_estimate_refuses_tiny_samples():
    X, y, _ = deep_data(n=60, p=6)
    single = RSquaredExplainer(DecisionTreeRegressor(max_depth=4).fit(X, y))
    with pytest.raises(ValueError, match="n_sample must be at least 2"):
        estimate_rsq(single, X, y, n_sample=1)
    for loose in (2.5, "10", True):  # 2.5 drew 2 rows, "10" ten
        with pytest.raises(ValueError, match="n_sample must be an integer number of rows"):
            estimate_rsq(single, X, y, n_sample=loose)
    # the fourth argument is sample_weight, as in rsq: a number there weighted every row by it (no
    # share changes) and the default 500 rows were drawn, all 60 here: exact, with standard errors 0
    with pytest.raises(ValueError, match=r"sample_weight is one number \(20\), .* pass n_sample=20"):
        estimate_rsq(single, X, y, 20)


def test_estimate_rsq_refuses_a_sample_that_cannot_fit_before_copying_its_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 600))
    model = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, X[:, 0])
    explainer = RSquaredExplainer(model, memory_budget=1 / 64)  # per-row shares: 600 floats x 5 a row
    with pytest.raises(MemoryBudgetError, match=r"estimate_rsq\(n_sample=4000\): .* pass a smaller n_sample"):
        estimate_rsq(explainer, X, X[:, 0], n_sample=4000)
    estimate = estimate_rsq(explainer, X, X[:, 0], n_sample=200, random_state=0)  # 200 rows fit
    exact = explainer.rsq(X, X[:, 0])
    assert np.all(np.abs(estimate.values - exact) <= 5 * estimate.standard_error + 1e-12)


def test_estimate_draws_from_the_rows_with_positive_weight_and_labels_like_rsq():
    # 20 of 300 rows weighted: a quarter of the draws held only zero-weight rows and returned every
    # share 0 with a standard error of 0 (the exact first share was 0.83)
    X, y, _ = deep_data(n=300, p=6)
    w = np.zeros(300)
    w[::15] = 1.0
    explainer = RSquaredExplainer(DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y))
    exact = explainer.rsq(X, y, sample_weight=w)
    estimate = estimate_rsq(explainer, X, y, sample_weight=w, n_sample=20, random_state=0)
    np.testing.assert_allclose(estimate.values, exact, rtol=0, atol=1e-12)  # all 20 weighted rows drawn
    assert np.all(estimate.standard_error == 0.0) and estimate.n_rows == 300
    # a DataFrame's shares come labelled, in the frame's names, as rsq gives them
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(6)])
    explainer = RSquaredExplainer(DecisionTreeRegressor(max_depth=5, random_state=0).fit(frame, y))
    reordered = frame[frame.columns[::-1]]
    estimate = estimate_rsq(explainer, reordered, y, n_sample=300)
    pd.testing.assert_series_equal(estimate.values, explainer.rsq(reordered, y), check_names=False, atol=1e-12)
    assert list(estimate.standard_error.index) == list(estimate.values.index)


def test_estimate_refuses_a_model_or_a_bad_seed_by_name():
    X, y, _ = deep_data(n=60, p=6)
    model = DecisionTreeRegressor(max_depth=4).fit(X, y)
    with pytest.raises(TypeError, match=r"estimate_rsq needs an RSquaredExplainer"):
        estimate_rsq(model, X, y)
    for seed in ("a", 1.5, -1):
        with pytest.raises(ValueError, match="random_state must be None, a non-negative int or a numpy Generator"):
            estimate_rsq(RSquaredExplainer(model), X, y, random_state=seed)


def _labels(y: np.ndarray, n_classes: int) -> np.ndarray:
    """String class labels from a continuous target, as users' classes are."""
    edges = np.quantile(y, np.linspace(0, 1, n_classes + 1)[1:-1])
    return np.array(["low", "mid", "high"][:n_classes] if n_classes == 3 else ["no", "yes"], dtype=object)[
        np.digitize(y, edges)
    ]


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("control_variate", [True, False])
def test_a_forest_classifiers_leave_one_out_estimates_average_to_its_brier_skill_score_shares(
    n_classes, control_variate
):
    # each class's games summed row by row, as rsq sums them: the n draws of n - 1 rows average to
    # the exact shares whatever each class's control variate subtracts
    X, y, w = _data(12)
    labels = _labels(y, n_classes)
    model = RandomForestClassifier(3, max_depth=4, random_state=0).fit(X, labels)
    explainer = RSquaredExplainer(model)
    assert explainer._squared_error_inputs(X, labels, w)[1].shape[1] == n_classes
    estimates = _leave_one_out(explainer, X, labels, w, control_variate)
    np.testing.assert_allclose(estimates.mean(axis=0), explainer.rsq(X, labels, sample_weight=w), rtol=0, atol=1e-12)
    assert estimates.std(axis=0).max() > 1e-8


@pytest.mark.parametrize("family", ["forest", "booster"])
def test_a_classifier_is_estimated_within_its_standard_errors_and_named_for_its_score(family):
    X, y, _ = _data(600)
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(6)])
    labels = _labels(y, 3)
    if family == "forest":
        model, score = RandomForestClassifier(10, max_depth=6, random_state=0), "Brier skill score"
    else:  # a softmax booster: shares of D² through its trees' second-order games
        lightgbm = pytest.importorskip("lightgbm")
        model, score = lightgbm.LGBMClassifier(n_estimators=30, num_leaves=15, verbose=-1), "D² (log-loss)"
    explainer = RSquaredExplainer(model.fit(frame, labels))
    exact = explainer.rsq(frame, labels)
    estimate = estimate_rsq(explainer, frame, labels, n_sample=150, random_state=0)
    assert exact.name == estimate.values.name == score
    assert estimate.standard_error.name == f"standard error of {score}"
    assert np.all(estimate.standard_error > 0)
    assert np.all(np.abs(estimate.values - exact) <= 4 * estimate.standard_error + 1e-12)
    every = estimate_rsq(explainer, frame, labels, n_sample=600, random_state=0)
    np.testing.assert_allclose(every.values, exact, rtol=0, atol=1e-12)
    assert np.all(every.standard_error == 0)
    if family == "booster":  # what the shares stand for: exact, on every row, as rsq's attrs say it
        for key in ("model_score", "mean_score", "exact_change"):
            assert estimate.values.attrs[key] == pytest.approx(exact.attrs[key], abs=1e-12)
        assert estimate.values.attrs["model_score"] > 0.3
    with pytest.raises(ValueError, match="not among the model's classes"):
        estimate_rsq(explainer, frame, np.where(labels == "low", "lo", labels), n_sample=50)


def _two_targets(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Two targets of different scales, so that the mean R² weighs them unlike their summed squares."""
    return np.column_stack([y, 10.0 * X[:, 1] * X[:, 2] + np.sin(X[:, 0])])


@pytest.mark.parametrize("control_variate", [True, False])
def test_a_multi_output_regressors_leave_one_out_estimates_average_to_its_mean_r2_shares(control_variate):
    # each target's games over its own SST, summed row by row as rsq sums them (the mean R²)
    X, y, w = _data(12)
    Y = _two_targets(X, y)
    explainer = RSquaredExplainer(RandomForestRegressor(3, max_depth=4, random_state=0).fit(X, Y))
    estimates = _leave_one_out(explainer, X, Y, w, control_variate)
    np.testing.assert_allclose(estimates.mean(axis=0), explainer.rsq(X, Y, sample_weight=w), rtol=0, atol=1e-12)
    assert estimates.std(axis=0).max() > 1e-8


def test_a_multi_output_regressor_is_estimated_within_its_standard_errors():
    # a fully grown multi-output forest, the model whose exact shares take hours at scale
    X, y, _ = _data(500)
    Y = _two_targets(X, y)
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(6)])
    explainer = RSquaredExplainer(RandomForestRegressor(8, random_state=0).fit(frame, Y))
    exact = explainer.rsq(frame, Y)
    estimate = estimate_rsq(explainer, frame, Y, n_sample=120, random_state=0)
    assert exact.name == estimate.values.name == "R²"
    assert np.all(estimate.standard_error > 0)
    assert np.all(np.abs(estimate.values - exact) <= 4 * estimate.standard_error + 1e-12)
    every = estimate_rsq(explainer, frame, Y, n_sample=500)
    np.testing.assert_allclose(every.values, exact, rtol=0, atol=1e-12)
    assert np.all(every.standard_error == 0)
    with pytest.raises(ValueError, match="2 outputs"):
        estimate_rsq(explainer, frame, y, n_sample=50)


def _boosters():
    """Boosters of other losses: ``(name, model, target of y, frame)``; categorical ones fit a frame."""
    xgboost, lightgbm = pytest.importorskip("xgboost"), pytest.importorskip("lightgbm")
    small = {"n_estimators": 5, "num_leaves": 4, "min_child_samples": 2, "verbose": -1}
    return [
        (
            "xgboost-binary",
            xgboost.XGBClassifier(n_estimators=5, max_depth=3),
            lambda y: (y > np.median(y)).astype(int),
        ),
        (
            "xgboost-softmax",
            xgboost.XGBClassifier(n_estimators=4, max_depth=3),
            lambda y: np.digitize(y, np.quantile(y, [1 / 3, 2 / 3])),
        ),
        (
            "xgboost-poisson",
            xgboost.XGBRegressor(n_estimators=5, max_depth=3, objective="count:poisson"),
            lambda y: np.round(np.exp(y / 3)),
        ),
        ("lightgbm-gamma", lightgbm.LGBMRegressor(objective="gamma", **small), lambda y: np.exp(y / 3)),
        (
            "lightgbm-categorical-binary",
            lightgbm.LGBMClassifier(min_data_per_group=1, cat_smooth=0, **small),
            lambda y: (y > np.median(y)).astype(int),
        ),
    ]


def _booster_rows(name: str, X: np.ndarray):
    """The rows a booster fits: a frame with a categorical column for the categorical one."""
    if "categorical" not in name:
        return X
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])
    return frame.assign(c1=pd.Categorical(np.digitize(X[:, 1], [-0.5, 0.0, 0.5])))


@pytest.mark.parametrize("control_variate", [True, False])
def test_a_boosters_leave_one_out_estimates_average_to_its_d2_shares(control_variate):
    # the second-order games of another loss: each row's contributions, with a softmax's offsets,
    # are its own, so the n draws of n - 1 rows average to the exact shares, and the additive part
    # (w_lin + w_quad (m + c_t) times each tree's TreeSHAP values) leaves them unbiased
    X, y, w = _data(14)
    for name, model, target_of in _boosters():
        rows = _booster_rows(name, X)
        target = target_of(y)
        explainer = RSquaredExplainer(model.fit(rows, target))
        estimates = _leave_one_out(explainer, rows, target, w, control_variate)
        exact = np.asarray(explainer.rsq(rows, target, sample_weight=w))
        np.testing.assert_allclose(estimates.mean(axis=0), exact, rtol=0, atol=1e-12, err_msg=name)
        assert estimates.std(axis=0).max() > 1e-8, name


def test_boosted_stumps_of_log_loss_are_estimated_exactly_from_three_rows():
    # a stump's margin is additive in the features: its second-order game is all additive part
    xgboost = pytest.importorskip("xgboost")
    X, y, w = _data(300)
    labels = (y > np.median(y)).astype(int)
    explainer = RSquaredExplainer(xgboost.XGBClassifier(n_estimators=30, max_depth=1).fit(X, labels))
    exact = explainer.rsq(X, labels, sample_weight=w)
    estimate = estimate_rsq(explainer, X, labels, sample_weight=w, n_sample=3, random_state=0)
    np.testing.assert_allclose(estimate.values, exact, rtol=0, atol=1e-12)
    assert np.all(estimate.standard_error < 1e-12)
