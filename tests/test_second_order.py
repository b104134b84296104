"""Boosters of log-loss, Poisson, Gamma and Tweedie deviance: their second-order games, checked against
subset enumeration, and the score their shares add up to beside the exact one."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import shap
from conftest import NO_NAN_OBJECTIVES, OBJECTIVES, make_data, objective_target
from oracle import rsq_oracle, second_order_oracle
from sklearn.metrics import d2_log_loss_score, d2_tweedie_score, log_loss, mean_tweedie_deviance

from shap_rsq import RSquaredExplainer
from shap_rsq.engine.labels import one_hot
from shap_rsq.engine.losses import Loss, TreeLosses
from shap_rsq.engine.run import UnitCache, decompose
from shap_rsq.exceptions import SecondOrderGapWarning
from shap_rsq.models.inspect import UnsupportedModelError

CASES = [(name, nan) for name in OBJECTIVES for nan in (False, True) if not (nan and name in NO_NAN_OBJECTIVES)]


def _oracle(explainer, X, y, w, players=None):
    info = explainer.model_info
    if info.n_outputs > 1:
        target, forests = one_hot(y, info.classes, len(y)), explainer.forests
    else:
        target, forests = np.asarray(y, dtype=float), explainer.forests[0]
        if info.classes is not None:
            target = one_hot(y, info.classes, len(y))[:, -1]
    return second_order_oracle(forests, X, target, w, info.loss, info.loss_power, players)


def _null_deviance(explainer, y, w) -> float:
    """D²'s denominator, from scikit-learn's deviances of the weighted mean of y."""
    info = explainer.model_info
    if info.classes is not None:
        labels = one_hot(y, info.classes, len(y))
        null = np.tile(np.average(labels, axis=0, weights=w), (len(y), 1))
        return log_loss(labels, null, sample_weight=w, normalize=False)
    if info.loss == "log_loss":  # cross-entropy on probabilities: the deviance, 0 at p = y
        mean = np.average(y, weights=w)
        cross = -(y * np.log(mean) + (1 - y) * np.log(1 - mean))
        own = -(np.where(y > 0, y * np.log(np.where(y > 0, y, 1)), 0) + np.where(y < 1, (1 - y) * np.log1p(-y), 0))
        return float(np.sum(w * (cross - own)))
    power = {"poisson": 1.0, "gamma": 2.0}.get(info.loss, info.loss_power)
    mean = np.full(len(y), np.average(y, weights=w))
    return mean_tweedie_deviance(y, mean, sample_weight=w, power=power) * np.sum(w)


@pytest.mark.parametrize(("name", "nan"), CASES)
def test_shares_of_each_objective_match_subset_enumeration(fitted_objective, name, nan):
    model, X, y, w = fitted_objective(name, nan)
    explainer = RSquaredExplainer(model)
    assert explainer.model_info.second_order
    expected, expected_local, totals = _oracle(explainer, X, y, w)
    null = _null_deviance(explainer, y, w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecondOrderGapWarning)
        shares = explainer.rsq(X, y, sample_weight=w)
        explanation = explainer(X, y, sample_weight=w)
    np.testing.assert_allclose(shares, expected / null, rtol=0, atol=1e-9)
    np.testing.assert_allclose(explanation.values, expected_local / null, rtol=0, atol=1e-9)
    np.testing.assert_allclose(explanation.values.sum(axis=1), totals / null, rtol=0, atol=1e-9)
    assert np.abs(expected).max() > 1e-3 * null  # the oracle itself is not trivially zero
    # the trees never split on the pure-noise column of most models; where none does, its share is 0
    unused = np.setdiff1d(
        np.arange(X.shape[1]), np.concatenate([f.nodes.feature[f.nodes.left >= 0] for f in explainer.forests])
    )
    assert np.all(shares[unused] == 0.0)


@pytest.mark.parametrize(
    "name", ["XGB:binary:logistic", "LGBM:multiclass", "CatBoost:Poisson", "HistGradientBoostingRegressor:gamma"]
)
def test_grouped_players_and_per_row_values_match_subset_enumeration(fitted_objective, name):
    model, X, y, w = fitted_objective(name, True)
    explainer = RSquaredExplainer(model)
    players = [[0, 3], [1, 2], [4], [5]]
    expected, expected_local, _ = _oracle(explainer, X, y, w, players)
    null = _null_deviance(explainer, y, w)
    groups = {"a": [0, 3], "b": [1, 2]}
    shares = explainer.rsq(X, y, sample_weight=w, groups=groups)
    np.testing.assert_allclose(shares, expected / null, rtol=0, atol=1e-9)
    values = explainer.loss_reduction(X, y, sample_weight=w, local=True, groups=groups)
    np.testing.assert_allclose(values, expected_local, rtol=0, atol=1e-9 * null)


@pytest.mark.parametrize(("name", "nan"), CASES)
def test_the_scores_are_scikit_learns_and_the_gap_is_the_remainder(fitted_objective, name, nan):
    model, X, y, w = fitted_objective(name, nan)
    explainer = RSquaredExplainer(model)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shares = explainer.rsq(frame, y, sample_weight=w)
    info = explainer.model_info
    if info.classes is not None:
        d2 = d2_log_loss_score(y, model.predict_proba(frame), sample_weight=w, labels=info.classes)
        assert shares.name == "D² (log-loss)"
    elif info.loss == "log_loss":
        d2 = None  # cross-entropy on probabilities: scikit-learn's D² wants labels
    else:
        power = {"poisson": 1.0, "gamma": 2.0}.get(info.loss, info.loss_power)
        d2 = d2_tweedie_score(y, model.predict(frame), sample_weight=w, power=power)
        assert shares.name.startswith("D² (")
    attrs = shares.attrs
    if d2 is not None:  # the model's own probabilities come in float32 from some libraries
        assert attrs["model_score"] == pytest.approx(d2, abs=2e-6)
    assert attrs["shares_sum"] == pytest.approx(shares.sum(), abs=1e-12)
    assert attrs["exact_change"] == pytest.approx(attrs["model_score"] - attrs["mean_score"], abs=1e-12)
    assert attrs["gap"] == pytest.approx(attrs["exact_change"] - attrs["shares_sum"], abs=1e-12)
    assert attrs["mean_score"] <= 1e-12  # E f is a constant: no better than the mean of y
    # five small steps: the expansion is close
    assert abs(attrs["gap"]) < 0.1 * abs(attrs["exact_change"])


def test_squared_error_through_the_loss_path_is_the_r2_game():
    # the general row weights -w h/2 and w (h c - g), with g = -2 (y - F) and h = 2, are today's games
    xgboost = pytest.importorskip("xgboost")
    X, y, w = make_data(seed=3, nan=True)
    model = xgboost.XGBRegressor(n_estimators=6, max_depth=3, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    game = explainer._games[0]
    units = UnitCache(game).units()
    rows = game.cast(X).astype(np.float64)
    squared = decompose(game, units, rows, y, w).values
    general = decompose(game, units, rows, y, w, loss=TreeLosses(Loss("squared_error"))).values
    np.testing.assert_allclose(general, squared, rtol=1e-13, atol=1e-12)
    expected, _ = rsq_oracle(explainer.forest, X, y, w)
    sst = np.sum(w * (y - np.average(y, weights=w)) ** 2)
    np.testing.assert_allclose(general / sst, expected, atol=1e-9)


@pytest.mark.parametrize("loss", [Loss("log_loss"), Loss("poisson"), Loss("gamma"), Loss("tweedie", 1.4)])
def test_derivatives_are_those_of_the_deviance(loss):
    rng = np.random.default_rng(0)
    margin = rng.normal(size=50)
    y = rng.uniform(0.05, 0.95, size=50) if loss.name == "log_loss" else rng.gamma(2.0, 1.0, size=50)
    g, h = loss.derivatives(y, margin)
    step = 1e-5
    up, down, mid = loss.deviance(y, margin + step), loss.deviance(y, margin - step), loss.deviance(y, margin)
    np.testing.assert_allclose(g, (up - down) / (2 * step), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(h, (up - 2 * mid + down) / step**2, rtol=1e-4, atol=1e-5)
    assert np.all(h > 0)
    assert np.all(loss.deviance(y, margin) >= 0)


def test_deviances_are_scikit_learns():
    rng = np.random.default_rng(1)
    margin = rng.normal(size=40)
    counts = rng.poisson(2.0, size=40).astype(float)
    positive = rng.gamma(2.0, 1.0, size=40)
    labels = rng.integers(0, 2, size=40).astype(float)
    for loss, y, power in [
        (Loss("poisson"), counts, 1),
        (Loss("gamma"), positive, 2),
        (Loss("tweedie", 1.3), counts, 1.3),
    ]:
        assert loss.deviance(y, margin).mean() == pytest.approx(mean_tweedie_deviance(y, np.exp(margin), power=power))
    p = 1 / (1 + np.exp(-margin))
    assert Loss("log_loss").deviance(labels, margin).mean() == pytest.approx(log_loss(labels, p))


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda xgb, lgb: xgb.XGBRegressor(objective="reg:absoluteerror", n_estimators=2), "second derivative"),
        (
            lambda xgb, lgb: xgb.XGBRegressor(objective="reg:quantileerror", quantile_alpha=0.3, n_estimators=2),
            "second derivative",
        ),
        (lambda xgb, lgb: lgb.LGBMRegressor(objective="quantile", n_estimators=2, verbose=-1), "second derivative"),
        (lambda xgb, lgb: lgb.LGBMRegressor(objective="l1", n_estimators=2, verbose=-1), "second derivative"),
    ],
)
def test_losses_without_a_second_derivative_are_refused_with_the_reason(make, says):
    xgboost, lightgbm = pytest.importorskip("xgboost"), pytest.importorskip("lightgbm")
    X, y, _ = make_data(seed=2)
    explainer = RSquaredExplainer(make(xgboost, lightgbm).fit(X, y))
    with pytest.raises(UnsupportedModelError, match=says):
        explainer.rsq(X, y)
    assert np.asarray(explainer.shap_values(X)).shape[-1] == X.shape[1]  # shap's calls still work


def test_ranking_is_refused_with_the_reason():
    xgboost = pytest.importorskip("xgboost")
    X, y, _ = make_data(seed=2)
    model = xgboost.XGBRanker(n_estimators=2).fit(X, (y > 3).astype(int), qid=np.repeat(np.arange(12), 10))
    with pytest.raises(UnsupportedModelError, match="second derivative"):
        RSquaredExplainer(model).rsq(X, y)


@pytest.mark.parametrize(
    "name",
    [
        "XGB:multi:softprob",
        "LGBM:binary",
        "HistGradientBoostingClassifier:three",
        "CatBoost:Poisson",
        "CatBoost:MultiClass",
    ],
)
def test_shap_calls_without_y_are_shaps(fitted_objective, name):
    model, X, _, _ = fitted_objective(name, False)
    ours, theirs = RSquaredExplainer(model), shap.TreeExplainer(model)
    np.testing.assert_array_equal(ours(X).values, theirs(X).values)
    np.testing.assert_array_equal(np.asarray(ours.shap_values(X)), np.asarray(theirs.shap_values(X)))


def test_catboost_softmax_with_a_scale_and_biases_matches_subset_enumeration(fitted_objective):
    """CatBoost keeps a scale of every leaf and a bias per class apart from the trees: the trees read
    one per class must carry both, the margins they add up to must be the model's, and shap's own
    SHAP values (CatBoost's, which refuse a scale) come from those trees."""
    import copy

    model, X, y, w = fitted_objective("CatBoost:MultiClass", True)
    scaled = copy.deepcopy(model)
    scaled.set_scale_and_bias(1.7, [0.3, -0.2, 0.5])
    explainer = RSquaredExplainer(scaled)
    expected, expected_local, _ = _oracle(explainer, X, y, w)
    null = _null_deviance(explainer, y, w)
    shares = explainer.rsq(pd.DataFrame(X), y, sample_weight=w)
    np.testing.assert_allclose(shares, expected / null, rtol=0, atol=1e-9)
    np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, expected_local / null, rtol=0, atol=1e-9)
    d2 = d2_log_loss_score(y, scaled.predict_proba(X), sample_weight=w, labels=explainer.model_info.classes)
    assert shares.attrs["model_score"] == pytest.approx(d2, abs=2e-6)
    margins = scaled.predict(X, prediction_type="RawFormulaVal")
    values = explainer.shap_values(X)
    np.testing.assert_allclose(values.sum(axis=1) + explainer.expected_value, margins, atol=1e-5)
    assert model.get_scale_and_bias()[0] == 1.0  # the caller's model is untouched


def test_large_steps_warn_and_name_the_cause():
    xgboost = pytest.importorskip("xgboost")
    X, y, w = make_data(seed=4)
    labels = (y > np.median(y)).astype(int)
    model = xgboost.XGBClassifier(n_estimators=30, max_depth=6, learning_rate=1.0, random_state=0).fit(X, labels)
    with pytest.warns(SecondOrderGapWarning, match="large steps"):
        shares = RSquaredExplainer(model).rsq(pd.DataFrame(X), labels, sample_weight=w)
    assert abs(shares.attrs["gap"]) > 0.05 * abs(shares.attrs["exact_change"])


def test_small_steps_do_not_warn(fitted_objective):
    model, X, y, w = fitted_objective("LGBM:binary", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SecondOrderGapWarning)
        RSquaredExplainer(model).rsq(X, y, sample_weight=w)


@pytest.mark.parametrize("name", ["XGB:binary:logistic", "XGB:multi:softprob", "CatBoost:MultiClass"])
def test_interaction_shares_match_subset_enumeration(fitted_objective, name):
    """The interaction indices of the second-order games, a softmax's classes played one by one as
    for its shares, against the oracle's; rows of the matrix sum to the shares."""
    model, X, y, w = fitted_objective(name, name.startswith("XGB"))
    explainer = RSquaredExplainer(model)
    info = explainer.model_info
    target = one_hot(y, info.classes, len(y))
    if info.n_outputs == 1:
        target, forests = target[:, -1], explainer.forests[0]
    else:
        forests = explainer.forests
    null = _null_deviance(explainer, y, w)
    expected = second_order_oracle(forests, X, target, w, info.loss, info.loss_power, interactions=True) / null
    matrix = explainer.rsq_interactions(X, y, sample_weight=w)
    off = ~np.eye(X.shape[1], dtype=bool)
    np.testing.assert_allclose(2 * matrix[off], expected[off], rtol=0, atol=1e-9)
    assert np.abs(expected[off]).max() > 1e-4  # some pair interacts
    np.testing.assert_allclose(matrix.sum(axis=1), explainer.rsq(X, y, sample_weight=w), atol=1e-12)
    explanation = explainer(X, y, interactions=True, sample_weight=w)
    np.testing.assert_allclose(explanation.values.sum(axis=0), matrix, atol=1e-12)
    np.testing.assert_allclose(explanation.values.sum(axis=2), explainer(X, y, sample_weight=w).values, atol=1e-12)
    assert explanation.output_names == "D² (log-loss)"


def test_invalid_targets_are_refused(fitted_objective):
    model, X, y, _ = fitted_objective("XGB:count:poisson", False)
    with pytest.raises(ValueError, match="non-negative"):
        RSquaredExplainer(model).rsq(X, -y)
    model, X, y, _ = fitted_objective("LGBM:gamma", False)
    with pytest.raises(ValueError, match="positive"):
        RSquaredExplainer(model).rsq(X, y - y.max())
    model, X, y, _ = fitted_objective("XGB:binary:logistic", False)
    with pytest.raises(ValueError, match="constant"):
        RSquaredExplainer(model).rsq(X, np.ones_like(y))


def _forest_classifier(kind: str):
    if kind == "lightgbm rf":
        lightgbm = pytest.importorskip("lightgbm")
        return lightgbm.LGBMClassifier(
            boosting_type="rf",
            n_estimators=6,
            num_leaves=6,
            bagging_fraction=0.6,
            bagging_freq=1,
            feature_fraction_bynode=0.6,
            min_child_samples=5,
            verbose=-1,
            n_jobs=1,
            random_state=0,
        )
    xgboost = pytest.importorskip("xgboost")
    if kind == "XGBRFClassifier":
        return xgboost.XGBRFClassifier(n_estimators=6, max_depth=3, random_state=0, n_jobs=1)
    return xgboost.XGBClassifier(  # boosted forests: four trees a round
        n_estimators=3,
        num_parallel_tree=4,
        max_depth=3,
        learning_rate=0.5,
        subsample=0.7,
        colsample_bynode=0.6,
        random_state=0,
        n_jobs=1,
    )


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("kind", ["lightgbm rf", "XGBRFClassifier", "XGBClassifier num_parallel_tree"])
def test_forests_of_log_loss_match_subset_enumeration(kind, nan):
    # LightGBM's raw score of a random forest is its trees' sum, while it predicts the link of
    # their mean: read as the margin, the sum made every such classifier look misread and refused
    X, y, w = make_data(seed=3, nan=nan)
    target = objective_target("binary", y, X, seed=1)
    model = _forest_classifier(kind).fit(X, target)
    explainer = RSquaredExplainer(model)
    expected, expected_local, _ = _oracle(explainer, X, target, w)
    null = _null_deviance(explainer, target, w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SecondOrderGapWarning)
        shares = explainer.rsq(X, target, sample_weight=w)
        explanation = explainer(X, target, sample_weight=w)
    np.testing.assert_allclose(shares, expected / null, rtol=0, atol=1e-9)
    np.testing.assert_allclose(explanation.values, expected_local / null, rtol=0, atol=1e-9)
    assert shares[0] > 0.2  # the strong feature's share, far from a trivial zero
    # the margin read as the model's is the one its probabilities link
    margin = explainer.model_info.predict(X)
    np.testing.assert_allclose(model.predict_proba(X)[:, 1], 1 / (1 + np.exp(-margin)), rtol=1e-6)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_the_selector_takes_a_boosted_classifier_in_a_pipeline_with_stratified_folds(n_classes):
    xgboost = pytest.importorskip("xgboost")
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline

    from shap_rsq import RSquaredSelector

    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 10))
    signal = 1.5 * X[:, 0] + X[:, 1] + rng.normal(scale=0.5, size=240)
    y = (signal > 0).astype(int) if n_classes == 2 else np.digitize(signal, [-0.8, 0.8])
    booster = xgboost.XGBClassifier(n_estimators=20, max_depth=2, learning_rate=0.3, n_jobs=1, random_state=0)
    selector = RSquaredSelector(booster, cv=StratifiedKFold(3), uncertainty="se", max_features=3, threshold=-np.inf)
    pipeline = make_pipeline(selector, LogisticRegression()).fit(X, y)
    assert set(np.flatnonzero(pipeline[0].get_support())[:2]) == {0, 1}
    assert pipeline.score(X, y) > 0.6
    assert np.all(np.isfinite(selector.feature_rsq_se_))
    grouped = RSquaredSelector(booster, feature_groups={"signal": [0, 1]}, uncertainty="bootstrap", n_bootstrap=4)
    grouped.fit(X, y)
    explained = RSquaredExplainer(grouped.estimator_).rsq(X, y, groups={"signal": [0, 1]})
    assert explained[0] > 0.3  # the signal pair, one player, holds most of the D²
    assert np.all(np.isfinite(grouped.feature_rsq_se_))


def test_values_do_not_depend_on_the_jobs_and_survive_pickling(fitted_objective):
    import pickle
    from dataclasses import replace

    from shap_rsq.tuning import DEFAULT_TUNING

    model, X, y, w = fitted_objective("LGBM:multiclass", True)
    one = RSquaredExplainer(model, n_jobs=1)
    two = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=replace(DEFAULT_TUNING, parallel_work=0))
    np.testing.assert_array_equal(one.rsq(X, y, sample_weight=w), two.rsq(X, y, sample_weight=w))
    np.testing.assert_allclose(one(X, y, sample_weight=w).values, two(X, y, sample_weight=w).values, atol=1e-16)
    copy = pickle.loads(pickle.dumps(one))
    np.testing.assert_array_equal(copy.rsq(X, y, sample_weight=w), one.rsq(X, y, sample_weight=w))


def _whole_offset_tables(forests, X: np.ndarray) -> list[np.ndarray]:
    """Each class's ``(n, T_k)`` offsets formed whole, from every class's margin trajectory (``np.cumsum``
    of its trees' shifts, then its start): the definition the streamed offsets must equal to the bit."""
    from scipy.special import logsumexp

    trajectories = []
    for forest in forests:
        rows = forest.routing_rows(X)
        shift = forest.nodes.leaf_values(rows, np.arange(forest.n_trees), forest.input_dtype) - forest.nodes.tree_mean
        start = forest.base_offset + float(forest.nodes.tree_mean.sum())
        trajectory = np.empty((X.shape[0], forest.n_trees + 1))
        trajectory[:, 0] = start
        np.cumsum(shift, axis=1, out=trajectory[:, 1:])
        trajectory[:, 1:] += start
        trajectories.append(trajectory)
    tables = []
    for k, forest in enumerate(forests):
        others = [
            trajectory[:, np.searchsorted(other.steps, forest.steps)]
            for j, (trajectory, other) in enumerate(zip(trajectories, forests, strict=True))
            if j != k
        ]
        tables.append(logsumexp(np.stack(others), axis=0))
    return tables


@pytest.mark.parametrize("name", ["XGB:multi:softprob", "LGBM:multiclass", "CatBoost:MultiClass"])
@pytest.mark.parametrize("predicted", [False, True])
def test_streamed_softmax_offsets_equal_the_whole_tables(fitted_objective, name, predicted):
    # asked as the games ask: unit by unit, a block of rows at a time, by slices and by index arrays,
    # and once out of order (the margins start again); predicted as reached, or read from shifts
    from shap_rsq.engine.losses import SoftmaxOffsets

    model, X, _, _ = fitted_objective(name, False)
    explainer = RSquaredExplainer(model)
    forests = explainer._game_sets.get(None)[0]
    rows = [forest.routing_rows(X) for forest in forests]
    shifts = None
    if predicted:
        shifts = [
            f.nodes.leaf_values(r, np.arange(f.n_trees), f.input_dtype) - f.nodes.tree_mean
            for f, r in zip(forests, rows, strict=True)
        ]
    whole = _whole_offset_tables(forests, X)
    n = X.shape[0]
    for k, forest in enumerate(forests):
        offsets = SoftmaxOffsets(forests, rows, k, block_elements=37, shifts=shifts)
        units = np.array_split(np.arange(forest.n_trees), 4)
        for trees in [*units, units[1]]:  # the last one is earlier than the one before it
            for block in (slice(0, n // 3), slice(n // 3, n), np.arange(1, n, 5)):
                np.testing.assert_array_equal(offsets.columns(block, trees), whole[k][block][:, trees])
        sample = np.arange(0, n, 7)
        np.testing.assert_array_equal(offsets.of_rows(sample).columns(slice(None), None), whole[k][sample])


def test_a_softmax_boosters_offsets_stay_within_a_small_memory_budget():
    # the whole offset tables of 30,000 rows of a three-class booster of 60 rounds took 30,000 x 180
    # floats several times over (260 MiB) under a budget of 16 MiB
    import tracemalloc

    xgboost = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30_000, 6))
    labels = np.digitize(X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=30_000), [-1.0, 1.0])
    model = xgboost.XGBClassifier(n_estimators=60, max_depth=3, n_jobs=1).fit(X, labels)
    budget = RSquaredExplainer(model, memory_budget=1 / 64)
    generous = RSquaredExplainer(model)  # the shifts fit its budget: read, not predicted again
    expected = generous.rsq(X, labels)
    budget.rsq(X[:50], labels[:50])  # the trees read and compiled before the measurement
    tracemalloc.start()
    try:
        shares = budget.rsq(X, labels)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20
    np.testing.assert_allclose(shares, expected, rtol=1e-12, atol=1e-16)  # other blocks of rows: rounding


def test_softmax_offsets_on_threads_equal_one_process(fitted_objective):
    # each thread keeps its own running margins: blocks of trees on threads of one process
    from dataclasses import replace

    from joblib import parallel_config

    from shap_rsq.tuning import DEFAULT_TUNING

    model, X, y, w = fitted_objective("XGB:multi:softprob", False)
    one = RSquaredExplainer(model).rsq(X, y, sample_weight=w)
    threads = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=replace(DEFAULT_TUNING, parallel_work=0))
    with parallel_config(backend="threading"):
        np.testing.assert_array_equal(threads.rsq(X, y, sample_weight=w), one)
