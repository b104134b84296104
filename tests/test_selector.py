"""RSquaredSelector as a scikit-learn selector: SelectFromModel semantics, pipelines, names, prefit, errors."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.ensemble import AdaBoostClassifier, RandomForestRegressor
from sklearn.exceptions import NotFittedError
from sklearn.feature_selection import SelectFromModel
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils._param_validation import InvalidParameterError

from shap_rsq import RSquaredExplainer, RSquaredSelector, UnsupportedModelError
from shap_rsq.selector._selection_rule import support_mask, threshold_rule


def linear_data(n: int = 200, p: int = 8, n_signal: int = 3, seed: int = 0):
    """``y`` depends on the first ``n_signal`` columns with decreasing weights; the others are noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X[:, :n_signal] @ np.linspace(2.0, 1.0, n_signal) + rng.normal(scale=0.3, size=n)
    return X, y


def tree(depth: int = 5) -> DecisionTreeRegressor:
    return DecisionTreeRegressor(max_depth=depth, random_state=0)


@pytest.fixture(scope="module")
def data():
    return linear_data()


def test_shares_are_the_explainers_and_fit_clones(data):
    X, y = data
    estimator = tree()
    selector = RSquaredSelector(estimator).fit(X, y)
    assert selector.estimator_ is not estimator
    assert not hasattr(estimator, "tree_"), "the caller's estimator must not be fitted"
    np.testing.assert_allclose(selector.feature_rsq_, RSquaredExplainer(selector.estimator_).rsq(X, y), atol=1e-12)
    assert selector.n_features_in_ == X.shape[1]


@pytest.mark.parametrize(
    "threshold", [None, "mean", "median", "1.5*mean", "0.5 * median", "inf*mean", "1e-1*median", 0.01, -np.inf]
)
@pytest.mark.parametrize("max_features", [None, 2, 5])
def test_support_matches_select_from_model(data, threshold, max_features):
    """Same importances, same rule: the masks of SelectFromModel and RSquaredSelector agree."""
    X, y = data
    selector = RSquaredSelector(tree(), threshold=threshold, max_features=max_features).fit(X, y)
    assert np.all(selector.feature_rsq_ >= 0)  # SelectFromModel ranks |importance|; equal for these shares
    reference = SelectFromModel(
        selector.estimator_,
        threshold=threshold,
        max_features=max_features,
        prefit=True,
        importance_getter=lambda _: selector.feature_rsq_,
    ).fit(X, y)
    np.testing.assert_array_equal(selector.get_support(), reference.get_support())
    assert selector.threshold_ == pytest.approx(reference.threshold_)


def test_threshold_forms_on_known_shares():
    shares = np.array([0.1, 0.4, -0.05, 0.0, 0.2, 0.3])
    assert threshold_rule("mean")(shares) == pytest.approx(shares.mean())
    assert threshold_rule("2*median")(shares) == pytest.approx(2 * np.median(shares))
    assert threshold_rule(" 1.5 * mean ")(shares) == pytest.approx(1.5 * shares.mean())
    assert threshold_rule(0.25)(shares) == 0.25
    # positive sum 1.0: 0.4 + 0.3 = 0.7 reaches 0.7 exactly; 0.71 needs the 0.2 too; 1.0 needs all positives
    assert list(np.flatnonzero(support_mask(shares, threshold_rule("cumulative:0.7"), None))) == [1, 5]
    assert list(np.flatnonzero(support_mask(shares, threshold_rule("cumulative:0.71"), None))) == [1, 4, 5]
    assert list(np.flatnonzero(support_mask(shares, threshold_rule("cumulative:1"), None))) == [0, 1, 4, 5]
    assert not support_mask(-np.abs(shares), threshold_rule("cumulative:0.5"), None).any()


def test_cumulative_threshold_is_the_smallest_set(data):
    X, y = data
    X = np.hstack([X, np.random.default_rng(1).normal(size=(len(y), 8))])
    for fraction in (0.5, 0.8, 0.95, 0.99, 1.0):
        selector = RSquaredSelector(tree(8), threshold=f"cumulative:{fraction}").fit(X, y)
        shares = selector.feature_rsq_
        kept = selector.get_support()
        positive = shares[shares > 0].sum()
        assert shares[kept].sum() >= fraction * positive * (1 - 1e-12)
        ranked = np.sort(shares)[::-1]
        smallest = int(np.argmax(np.cumsum(ranked) >= fraction * positive * (1 - 1e-12))) + 1
        assert kept.sum() == smallest, fraction  # no smaller set of features reaches the fraction
        assert np.all(shares[kept] >= shares[~kept].max(initial=-np.inf))


def test_max_features_callable(data):
    X, y = data
    selector = RSquaredSelector(tree(), max_features=lambda X: X.shape[1] // 4, threshold=-np.inf).fit(X, y)
    assert selector.max_features_ == 2
    assert selector.transform(X).shape == (len(y), 2)
    np.testing.assert_array_equal(selector.get_support(indices=True), [0, 1])


def test_set_params_after_fit_applies_without_refit(data):
    X, y = data
    selector = RSquaredSelector(tree(), threshold=-np.inf).fit(X, y)
    estimator = selector.estimator_
    assert selector.get_support().sum() == X.shape[1]
    selector.set_params(threshold="cumulative:0.9")
    assert selector.get_support().sum() < X.shape[1]
    assert selector.estimator_ is estimator


def test_max_features_set_after_fit_applies_like_select_from_model(data):
    X, y = data
    selector = RSquaredSelector(tree(), threshold=-np.inf).fit(X, y)
    reference = SelectFromModel(
        selector.estimator_, threshold=-np.inf, prefit=True, importance_getter=lambda _: selector.feature_rsq_
    ).fit(X, y)
    for limit in (2, None, 5, 0):  # SelectFromModel reads these too, after a fit without max_features
        selector.set_params(max_features=limit)
        reference.set_params(max_features=limit)
        np.testing.assert_array_equal(selector.get_support(), reference.get_support())
        assert selector.get_support().sum() == (X.shape[1] if limit is None else limit)
    fitted_with_three = RSquaredSelector(tree(), threshold=-np.inf, max_features=3).fit(X, y)
    assert fitted_with_three.set_params(max_features=5).get_support().sum() == 5  # not the 3 of the fit
    with pytest.raises(NotFittedError, match="call fit"):
        selector.set_params(max_features=lambda X: 2).transform(X)


def test_pipeline_and_grid_search_over_max_features():
    X, y = linear_data(n=150, p=30, n_signal=3, seed=2)
    pipeline = Pipeline([("select", RSquaredSelector(tree(), threshold=-np.inf)), ("ols", LinearRegression())])
    pipeline.fit(X, y)
    assert pipeline.score(X, y) > 0.5
    search = GridSearchCV(
        pipeline, {"select__max_features": [1, 3, 25]}, cv=KFold(3, shuffle=True, random_state=0)
    ).fit(X, y)
    results = search.cv_results_
    scores = dict(zip(results["param_select__max_features"], results["mean_test_score"], strict=True))
    assert search.best_params_ == {"select__max_features": 3}, scores
    assert scores[3] > scores[1] + 0.1 and scores[3] > scores[25]
    best_selector = search.best_estimator_.named_steps["select"]
    np.testing.assert_array_equal(best_selector.get_support(indices=True), [0, 1, 2])


def test_pandas_output_keeps_names(data):
    X, y = data
    names = [f"gene_{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    selector = RSquaredSelector(tree(), max_features=3, threshold=-np.inf).set_output(transform="pandas")
    out = selector.fit_transform(frame, y)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["gene_0", "gene_1", "gene_2"]
    assert list(selector.get_feature_names_out()) == list(out.columns)
    assert list(selector.feature_names_in_) == names
    assert list(selector.estimator_.feature_names_in_) == names  # the estimator saw the DataFrame
    pd.testing.assert_frame_equal(out, frame[["gene_0", "gene_1", "gene_2"]])
    back = selector.inverse_transform(out.to_numpy())
    assert back.shape == X.shape and np.all(back[:, 3:] == 0)
    table = selector.summary()
    assert list(table.index[:3]) == ["gene_0", "gene_1", "gene_2"] and table["selected"].sum() == 3
    with pytest.raises(ValueError, match="feature names"):
        selector.transform(frame.rename(columns={"gene_0": "other"}))


def test_a_wide_dataframe_is_not_held_twice():
    """A DataFrame of several blocks is copied to be validated; that copy is gone before the model is fitted."""
    rng = np.random.default_rng(0)
    halves = [pd.DataFrame(rng.normal(size=(200, 1500)).astype(np.float32)).add_prefix(side) for side in "ab"]
    frame = pd.concat(halves, axis=1)  # two blocks: np.asarray(frame) is a copy
    y = frame["a0"].to_numpy() + rng.normal(size=200)
    tracemalloc.start()
    try:
        RSquaredSelector(tree(2)).fit(frame, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the tree's and the explainer's own conversions of the frame (each about 1.2x at their peak) are
    # unavoidable, and come one after the other: 1.9x; with the validated copy held through them, 2.9x
    assert peak < 2.3 * frame.size * 4, peak / (frame.size * 4)


def test_prefit_uses_the_fitted_model_as_is(data):
    X, y = data
    model = tree().fit(X[:100], y[:100])
    before = model.tree_.value.copy()
    selector = RSquaredSelector(model, prefit=True).fit(X[100:], y[100:])
    # not refitted: the copy predicts like the model fitted on the first half, and is decomposed on the second
    np.testing.assert_array_equal(selector.estimator_.predict(X), model.predict(X))
    np.testing.assert_allclose(selector.feature_rsq_, RSquaredExplainer(model).rsq(X[100:], y[100:]), atol=1e-12)
    refitted = clone(model).fit(X[100:], y[100:])
    assert not np.allclose(selector.estimator_.predict(X), refitted.predict(X))
    np.testing.assert_array_equal(model.tree_.value, before)


def test_a_prefit_selector_says_it_needs_fit_with_y_before_transform(data):
    # SelectFromModel(prefit=True) transforms at once from feature_importances_; the shares need y
    X, y = data
    selector = RSquaredSelector(tree().fit(X, y), prefit=True)
    for call in (lambda: selector.transform(X), selector.get_support):
        with pytest.raises(NotFittedError, match=r"prefit=True\) has no shares yet: call fit\(X, y\) first"):
            call()


def test_prefit_model_names_the_columns_of_an_array(data):
    X, y = data
    names = [f"g{j}" for j in range(X.shape[1])]
    model = tree().fit(pd.DataFrame(X, columns=names), y)
    selector = RSquaredSelector(model, prefit=True, max_features=2, threshold=-np.inf).fit(X, y)
    reference = SelectFromModel(
        model, prefit=True, max_features=2, threshold=-np.inf, importance_getter=lambda _: selector.feature_rsq_
    ).fit(X, y)
    assert list(selector.feature_names_in_) == names == list(reference.feature_names_in_)
    assert list(selector.get_feature_names_out()) == list(reference.get_feature_names_out()) == ["g0", "g1"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the frame's names are the ones the selector knows
        out = selector.set_output(transform="pandas").transform(pd.DataFrame(X, columns=names))
    assert list(out.columns) == ["g0", "g1"]


def test_sample_weight_weights_fit_and_rsq(data):
    X, y = data
    w = np.random.default_rng(3).uniform(0.1, 3.0, size=len(y))
    selector = RSquaredSelector(tree()).fit(X, y, sample_weight=w)
    reference = tree().fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(selector.estimator_.predict(X), reference.predict(X))
    np.testing.assert_allclose(selector.feature_rsq_, RSquaredExplainer(reference).rsq(X, y, w), atol=1e-12)
    # for a fixed model, integer weights are repeated rows (refits may break split ties differently)
    counts = np.random.default_rng(4).integers(0, 4, size=len(y))
    repeated = np.repeat(np.arange(len(y)), counts)
    weighted = RSquaredSelector(reference, prefit=True).fit(X, y, sample_weight=counts).feature_rsq_
    expected = RSquaredSelector(reference, prefit=True).fit(X[repeated], y[repeated]).feature_rsq_
    np.testing.assert_allclose(weighted, expected, atol=1e-12)


def test_inputs_are_not_mutated(data):
    X, y = data
    X_copy, y_copy = X.copy(), y.copy()
    estimator = tree()
    params = estimator.get_params()
    RSquaredSelector(estimator, cv=3, screen=4, uncertainty="se").fit(X, y)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(y, y_copy)
    assert estimator.get_params() == params and not hasattr(estimator, "tree_")


def test_refit_forgets_previous_options(data):
    X, y = data
    selector = RSquaredSelector(tree(), screen=3, uncertainty="se", max_features=2).fit(X, y)
    selector.set_params(screen=None, uncertainty=None, max_features=None).fit(X, y)
    for name in ("screen_rsq_", "screen_support_", "feature_rsq_se_", "max_features_"):
        assert not hasattr(selector, name), name


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"threshold": "mode"}, ValueError, "cumulative:<fraction>"),
        ({"threshold": "2*max"}, ValueError, "'1.5\\*mean'"),
        ({"threshold": "cumulative:1.5"}, ValueError, r"must be in \(0, 1\]"),
        ({"threshold": "cumulative:x"}, ValueError, "threshold must be"),
        ({"threshold": "nan*mean"}, ValueError, "holds NaN"),  # kept nothing, silently
        ({"threshold": float("nan")}, InvalidParameterError, "threshold"),
        ({"max_features": -1}, InvalidParameterError, "max_features"),
        ({"max_features": lambda X: -1}, ValueError, "non-negative integer"),
        ({"max_features": lambda X: 1.5}, ValueError, "non-negative integer"),
        ({"screen": 0}, InvalidParameterError, "screen"),
        ({"screen": True}, ValueError, "screen must be a number of columns"),  # was read as 1 column
        ({"uncertainty": "jackknife"}, InvalidParameterError, "uncertainty"),
        ({"n_bootstrap": 1}, InvalidParameterError, "n_bootstrap"),
        ({"cv": "five"}, InvalidParameterError, "cv"),
    ],
)
def test_bad_parameters_fail_in_fit_with_clear_messages(data, params, error, message):
    X, y = data
    with pytest.raises(error, match=message):
        RSquaredSelector(tree(), **params).fit(X, y)


def test_prefit_errors(data):
    X, y = data
    with pytest.raises(NotFittedError, match="prefit=True"):
        RSquaredSelector(tree(), prefit=True).fit(X, y)
    model = tree().fit(X, y)
    with pytest.raises(ValueError, match="cv, screen needs to refit"):
        RSquaredSelector(model, prefit=True, cv=3, screen=2).fit(X, y)
    with pytest.raises(ValueError, match="uncertainty='bootstrap'"):
        RSquaredSelector(model, prefit=True, uncertainty="bootstrap").fit(X, y)
    with pytest.raises(ValueError, match="fitted with 8 features"):
        RSquaredSelector(model, prefit=True).fit(X[:, :5], y)


def test_unsupported_models_and_targets(data):
    X, y = data
    with pytest.raises(UnsupportedModelError):
        RSquaredSelector(LinearRegression()).fit(X, y)
    with pytest.raises(UnsupportedModelError, match="weighted vote"):
        RSquaredSelector(AdaBoostClassifier(n_estimators=3)).fit(X, (y > 0).astype(int))
    # a forest classifier is decomposed (its Brier skill score)
    assert RSquaredSelector(DecisionTreeClassifier(max_depth=3)).fit(X, (y > 0).astype(int)).feature_rsq_.sum() > 0
    with pytest.raises(ValueError, match="constant"):
        RSquaredSelector(tree()).fit(X, np.full(len(y), 2.0))
    with pytest.raises(ValueError, match="every held-out fold"):
        RSquaredSelector(tree(), cv=2).fit(X, np.full(len(y), 2.0))
    # a y whose squares underflow still varies: the selector called it constant, the explainer did not
    for cv in (None, 2):
        with pytest.raises(ValueError, match=r"y varies too little for float64.*smaller unit"):
            RSquaredSelector(tree(), cv=cv).fit(X, y * 1e-300)
    with pytest.raises(NotFittedError):
        RSquaredSelector(tree()).transform(X)
    failed = RSquaredSelector(LinearRegression())
    with pytest.raises(UnsupportedModelError):
        failed.fit(X, y)
    with pytest.raises(NotFittedError):  # a failed fit leaves nothing to transform with
        failed.transform(X)


def _boosters():
    xgboost = pytest.importorskip("xgboost")
    lightgbm = pytest.importorskip("lightgbm")
    catboost = pytest.importorskip("catboost")
    return {
        "xgboost": xgboost.XGBRegressor(n_estimators=20, max_depth=3, n_jobs=1, random_state=0),
        "lightgbm": lightgbm.LGBMRegressor(n_estimators=20, num_leaves=8, verbose=-1, n_jobs=1, random_state=0),
        "catboost": catboost.CatBoostRegressor(
            iterations=20, depth=3, verbose=0, allow_writing_files=False, thread_count=1, random_seed=0
        ),
    }


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "catboost"])
def test_other_libraries_with_dataframes_and_missing_values(library):
    X, y = linear_data(n=150, p=6, seed=5)
    X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    frame = pd.DataFrame(X, columns=list("abcdef"))
    selector = RSquaredSelector(_boosters()[library], cv=3, uncertainty="se", max_features=3, threshold=-np.inf)
    out = selector.set_output(transform="pandas").fit(frame, y).transform(frame)
    assert list(out.columns) == ["a", "b", "c"]
    assert np.all(np.isfinite(selector.feature_rsq_se_)) and np.all(selector.feature_rsq_se_[:3] > 0)


def test_a_boosted_classifier_is_refused_before_it_is_fitted(data, monkeypatch):
    # it was fitted first (minutes on real data, once per fold with cv=) and refused after
    X, y = data
    fits = []
    monkeypatch.setattr(AdaBoostClassifier, "fit", lambda self, *args, **kwargs: fits.append(1) or self)
    for cv in (None, 3):
        with pytest.raises(UnsupportedModelError, match="AdaBoostClassifier is a boosted classifier"):
            RSquaredSelector(AdaBoostClassifier(n_estimators=3), cv=cv).fit(X, (y > 0).astype(int))
    assert not fits


@pytest.mark.parametrize("uncertainty", [None, "se"])
def test_a_prefit_model_given_its_columns_reordered_selects_by_name(uncertainty):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    y = 3 * X.a + 0.1 * X.b + rng.normal(scale=0.1, size=300)
    model = RandomForestRegressor(20, max_depth=4, random_state=0).fit(X, y)
    reordered = X[["c", "b", "a"]]
    selector = RSquaredSelector(model, prefit=True, max_features=1, threshold=-np.inf, uncertainty=uncertainty)
    selector.fit(reordered, y)
    assert list(selector.get_feature_names_out()) == ["a"]
    in_order = RSquaredSelector(model, prefit=True, uncertainty=uncertainty).fit(X, y)
    np.testing.assert_allclose(selector.feature_rsq_, in_order.feature_rsq_[::-1], atol=1e-12)
    if uncertainty == "se":  # per-row contributions: a path of their own through the columns' order
        np.testing.assert_allclose(selector.feature_rsq_se_, in_order.feature_rsq_se_[::-1], atol=1e-12)
        from sklearn.ensemble import RandomForestClassifier

        labels = (X.a > 0).astype(int) + (X.b > 1)
        forest = RandomForestClassifier(10, max_depth=4, random_state=0).fit(X, labels)
        classes = RSquaredSelector(forest, prefit=True, uncertainty="se").fit(reordered, labels)
        expected = RSquaredSelector(forest, prefit=True, uncertainty="se").fit(X, labels)
        np.testing.assert_allclose(classes.feature_rsq_, expected.feature_rsq_[::-1], atol=1e-12)
        np.testing.assert_allclose(classes.feature_rsq_se_, expected.feature_rsq_se_[::-1], atol=1e-12)


def test_a_spent_generator_of_splits_is_named_as_the_problem():
    # cross_validate fails on no splits with an IndexError of its own; a generator is spent after one fit
    X, y = linear_data(n=90, p=4)
    selector = RSquaredSelector(DecisionTreeRegressor(max_depth=3, random_state=0), cv=KFold(3).split(X))
    once = selector.fit(X, y).feature_rsq_
    expected = RSquaredSelector(DecisionTreeRegressor(max_depth=3, random_state=0), cv=KFold(3)).fit(X, y)
    np.testing.assert_allclose(once, expected.feature_rsq_, atol=1e-12)
    for spent in (selector, RSquaredSelector(DecisionTreeRegressor(max_depth=3), cv=[])):
        with pytest.raises(ValueError, match="gives no train/test splits; a generator of splits is spent"):
            spent.fit(X, y)


def test_groups_go_to_the_splitter_without_metadata_routing():
    # as cross_validate(groups=) does; they went to the estimator's fit, which has no groups
    from sklearn.model_selection import GroupKFold

    X, y = linear_data(n=90, p=4)
    groups = np.arange(90) // 6
    estimator = DecisionTreeRegressor(max_depth=3, random_state=0)
    fitted = RSquaredSelector(estimator, cv=GroupKFold(3)).fit(X, y, groups=groups)
    splits = list(GroupKFold(3).split(X, y, groups))
    expected = RSquaredSelector(estimator, cv=splits).fit(X, y)
    np.testing.assert_allclose(fitted.feature_rsq_, expected.feature_rsq_, atol=1e-12)


def test_a_polars_frame_fits_the_estimator_under_its_names_as_select_from_model_does():
    polars = pytest.importorskip("polars")
    X, y = linear_data(n=90, p=4)
    frame = polars.DataFrame(X, schema=["age", "bmi", "bp", "s1"])
    ours = RSquaredSelector(DecisionTreeRegressor(max_depth=3, random_state=0)).fit(frame, y)
    theirs = SelectFromModel(DecisionTreeRegressor(max_depth=3, random_state=0)).fit(frame, y)
    assert list(ours.estimator_.feature_names_in_) == list(theirs.estimator_.feature_names_in_)
    tree = DecisionTreeRegressor(max_depth=3, random_state=0)
    by_name = RSquaredSelector(tree, feature_groups={"body": ["age", "bmi"]})
    by_position = clone(by_name).set_params(feature_groups={"body": [0, 1]})
    np.testing.assert_allclose(by_name.fit(frame, y).player_rsq_, by_position.fit(X, y).player_rsq_, atol=1e-12)


def test_targets_and_rows_it_cannot_select_on_are_refused_by_name(data):
    # scikit-learn's own messages said "y should be a 1d array" and "could not convert string to float"
    X, y = data
    with pytest.raises(ValueError, match=r"1d array.*: RSquaredSelector selects features by their share of one"):
        RSquaredSelector(tree()).fit(X, np.column_stack([y, y]))
    frame = pd.DataFrame(X).set_axis([f"x{j}" for j in range(X.shape[1])], axis=1).assign(color="red")
    with pytest.raises(ValueError, match=r"X holds values that are not numbers .* encode categories as numbers"):
        RSquaredSelector(tree()).fit(frame, y)


def test_a_frozen_estimator_is_used_as_is_like_prefit_and_never_refitted():
    # scikit-learn's way to put a fitted model in a Pipeline (prefit=True does not survive clone):
    # SelectFromModel took it and this selector refused "FrozenEstimator is not a supported tree model"
    from sklearn.frozen import FrozenEstimator
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline

    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 5))
    y = 2 * X[:, 0] + X[:, 1] + rng.normal(size=150)
    model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    frozen = RSquaredSelector(FrozenEstimator(model)).fit(X, y)
    prefit = RSquaredSelector(model, prefit=True).fit(X, y)
    np.testing.assert_array_equal(frozen.feature_rsq_, prefit.feature_rsq_)
    np.testing.assert_array_equal(frozen.get_support(), prefit.get_support())
    np.testing.assert_array_equal(RSquaredExplainer(FrozenEstimator(model)).rsq(X, y), prefit.feature_rsq_)
    pipeline = make_pipeline(RSquaredSelector(FrozenEstimator(model)), LinearRegression())
    assert np.all(np.isfinite(cross_val_score(pipeline, X, y, cv=3)))
    with pytest.raises(ValueError, match="a FrozenEstimator is used as is, but cv needs to refit it"):
        RSquaredSelector(FrozenEstimator(model), cv=3).fit(X, y)


def test_fit_without_y_is_refused_by_name():
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match=r"y is None: the shares are of the R²"):
        RSquaredSelector(DecisionTreeRegressor()).fit(X)


def test_splits_made_for_other_rows_are_refused_by_name():
    # a list of splits of the whole data, inside an outer cross-validation, indexed past the fold's
    # rows: a bare IndexError (scikit-learn's cross_validate raises the same)
    from sklearn.model_selection import GroupKFold

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] + rng.normal(size=300)
    splits = list(GroupKFold(5).split(X, y, np.arange(300) // 10))
    selector = RSquaredSelector(DecisionTreeRegressor(max_depth=3), cv=splits)
    with pytest.raises(ValueError, match=r"cv gives row index 29\d, and fit was given 200 rows"):
        selector.fit(X[:200], y[:200])
    assert selector.fit(X, y).feature_rsq_[0] > 0.3


def test_a_long_fit_warns_in_the_selectors_own_words(monkeypatch):
    # the explainer the selector makes would advise RSquaredExplainer(progress=True) and estimate_rsq,
    # neither of which a selector's user can reach
    from dataclasses import replace

    from shap_rsq import LongCallWarning
    from shap_rsq.tuning import DEFAULT_TUNING

    monkeypatch.setattr("shap_rsq.explainer._explainer.DEFAULT_TUNING", replace(DEFAULT_TUNING, long_call_seconds=0.0))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=200)
    selector = RSquaredSelector(RandomForestRegressor(3, max_depth=4, random_state=0), max_features=2)
    with pytest.warns(LongCallWarning, match="estimated to take about") as record:
        selector.fit(X, y)
    message = str(record[0].message)
    advice = "A progress bar follows.  To take less time: RSquaredSelector(n_jobs=-1) uses every core; smaller"
    assert advice in message
    assert not any(word in message for word in ("RSquaredExplainer", "progress=True", "--progress", "estimate_rsq"))
    # the explainer's own warning is unchanged
    with pytest.warns(LongCallWarning) as record:
        RSquaredExplainer(selector.estimator_).rsq(X, y)
    assert "RSquaredExplainer(progress=True)" in str(record[0].message) and "estimate_rsq" in str(record[0].message)
