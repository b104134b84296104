"""RSquaredSelector on forest classifiers: shares of the Brier skill score, stratified folds, pipelines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_wine
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import label_binarize
from sklearn.utils import check_random_state, resample

from shap_rsq import RSquaredExplainer, RSquaredSelector, UnsupportedModelError

FOREST = RandomForestClassifier(n_estimators=20, max_depth=4, random_state=0)


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    labels = np.array(["barolo", "grignolino", "barbera"], dtype=object)[y]  # string labels, as users have
    return X[:, :8], labels


def _brier_reduction(model, X, labels, classes, pooled=None):
    """SSE of the constant E f minus SSE of the model, over ``classes`` (a class the model lacks: p = 0),
    and the sum of squares about the class frequencies of ``pooled`` labels (default: ``labels``)."""
    Y = (labels[:, None] == classes[None, :]).astype(float)
    P = np.zeros_like(Y)
    P[:, np.searchsorted(classes, model.classes_)] = model.predict_proba(X)
    mean_prediction = np.zeros(len(classes))
    explainer = RSquaredExplainer(model)
    mean_prediction[np.searchsorted(classes, model.classes_)] = [f.base_offset for f in explainer._games]
    frequency = Y.mean(axis=0) if pooled is None else (pooled[:, None] == classes[None, :]).mean(axis=0)
    sst = np.sum((Y - frequency) ** 2)
    return np.sum((Y - mean_prediction) ** 2) - np.sum((Y - P) ** 2), sst


def test_prefit_shares_are_the_explainers_brier_skill_score_shares(wine):
    X, labels = wine
    model = FOREST.fit(X, labels)
    selector = RSquaredSelector(model, prefit=True, threshold="median").fit(X, labels)
    np.testing.assert_allclose(selector.feature_rsq_, RSquaredExplainer(model).rsq(X, labels), atol=1e-12)
    assert selector.get_support().sum() == 4


def _three_classes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    return X, (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)  # classes 0, 1, 2


def _brier_skill(labels, probabilities, classes):
    Y = (np.asarray(labels)[:, None] == np.asarray(classes)[None, :]).astype(float)
    return 1 - np.sum((Y - probabilities) ** 2) / np.sum((Y - Y.mean(axis=0)) ** 2)


NAMES = np.array(["x", "y", "z"])
LABEL_KINDS = {  # (labels the model is fitted on, the same labels as y is given to the selector)
    "float labels, int classes": (lambda c: c, lambda c: c.astype(float)),
    "int64 labels, uint8 classes": (lambda c: c.astype(np.uint8), lambda c: c),
    "bool labels, int classes": (lambda c: c, lambda c: c > 0),  # True is 1, False is 0, as in NumPy
    "object Series, <U classes": (lambda c: NAMES[c], lambda c: pd.Series(NAMES[c], dtype=object)),
    "Categorical, <U classes": (lambda c: NAMES[c], lambda c: pd.Series(NAMES[c]).astype("category")),
}


@pytest.mark.parametrize("kinds", list(LABEL_KINDS))
def test_prefit_labels_are_matched_to_the_classes_by_value_whatever_their_dtype(kinds):
    # the sum of squares used to be over the raw labels when y's dtype kind was not that of classes_
    # (float labels gave shares 1.38 times too large, bools twice) or crashed (pandas text)
    X, code = _three_classes()
    fitted_on, given = LABEL_KINDS[kinds]
    model = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X, fitted_on(code))
    y = given(code)
    shares = RSquaredSelector(model, prefit=True, threshold=-np.inf).fit(X, y).feature_rsq_
    # the same labels in the classes' own dtype
    as_classes = model.classes_[np.searchsorted(model.classes_, np.asarray(y).astype(model.classes_.dtype))]
    np.testing.assert_allclose(shares, RSquaredExplainer(model).rsq(X, as_classes), atol=1e-12)
    np.testing.assert_allclose(shares, RSquaredExplainer(model).rsq(X, y), atol=1e-12)
    explainer = RSquaredExplainer(model)
    constant = np.array([forest.base_offset + forest.nodes.tree_mean.sum() for forest in explainer.forests])
    gain = _brier_skill(as_classes, model.predict_proba(X), model.classes_) - _brier_skill(
        as_classes, np.tile(constant, (len(code), 1)), model.classes_
    )
    assert shares.sum() == pytest.approx(gain, abs=1e-10)


def test_prefit_labels_the_model_never_saw_are_refused_by_name():
    X, code = _three_classes()
    model = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X, code + 1)  # classes 1, 2, 3
    message = r"y has labels \[0\] that are not among the model's classes \[1, 2, 3\] \(first at row 1\)"
    with pytest.raises(ValueError, match=message):
        RSquaredExplainer(model).rsq(X, code)
    with pytest.raises(ValueError, match=message):  # was: negative shares, silently
        RSquaredSelector(model, prefit=True, threshold=-np.inf).fit(X, code)
    with pytest.raises(ValueError, match=r"labels \['2', '1', '3'\] that are not among"):  # was a ufunc error
        RSquaredSelector(model, prefit=True, threshold=-np.inf).fit(X, (code + 1).astype(str))


def test_integer_cv_folds_are_stratified_and_pooled_over_every_class(wine):
    X, labels = wine
    selector = RSquaredSelector(FOREST, cv=4, threshold=-np.inf).fit(X, labels)
    reductions, ssts = [], []
    classes = np.unique(labels)
    for train, test in StratifiedKFold(4).split(X, labels):
        model = RandomForestClassifier(n_estimators=20, max_depth=4, random_state=0).fit(X[train], labels[train])
        reduction, sst = _brier_reduction(model, X[test], labels[test], classes, pooled=labels)
        reductions.append(reduction)
        ssts.append(sst)
    # efficiency, fold by fold: the pooled shares add up to the pooled Brier score reduction
    np.testing.assert_allclose(selector.feature_rsq_.sum(), sum(reductions) / sum(ssts), atol=1e-10)


def test_a_held_out_label_the_fold_model_never_saw_still_counts(wine):
    X, labels = wine
    labels = labels.copy()
    rare = np.flatnonzero(labels == "barbera")[:6]
    labels[rare] = "rare"
    train = np.setdiff1d(np.arange(len(labels)), rare[:3])
    test = np.setdiff1d(np.arange(len(labels)), train)
    test = np.concatenate([test, train[:40]])
    selector = RSquaredSelector(FOREST, cv=[(np.setdiff1d(train, train[:40]), test)], threshold=-np.inf)
    selector.fit(X, labels)
    model = RandomForestClassifier(n_estimators=20, max_depth=4, random_state=0)
    model.fit(X[np.setdiff1d(train, train[:40])], labels[np.setdiff1d(train, train[:40])])
    assert "rare" in model.classes_  # three of the six rare rows were trained on
    reduction, sst = _brier_reduction(model, X[test], labels[test], np.unique(labels))
    np.testing.assert_allclose(selector.feature_rsq_.sum(), reduction / sst, atol=1e-10)
    # a fold model that never saw the label: its probability 0 still counts in the score
    only = np.setdiff1d(np.arange(len(labels)), rare)
    unseen = RSquaredSelector(FOREST, cv=[(only[::2], np.concatenate([only[1::2], rare]))], threshold=-np.inf)
    unseen.fit(X, labels)
    model.fit(X[only[::2]], labels[only[::2]])
    assert "rare" not in model.classes_
    held = np.concatenate([only[1::2], rare])
    reduction, sst = _brier_reduction(model, X[held], labels[held], np.unique(labels))
    np.testing.assert_allclose(unseen.feature_rsq_.sum(), reduction / sst, atol=1e-10)


def test_standard_errors_and_bootstrap_run_on_classifiers(wine):
    X, labels = wine
    se = RSquaredSelector(FOREST, uncertainty="se", cv=3).fit(X, labels)
    assert np.all(se.feature_rsq_se_ >= 0) and np.any(se.feature_rsq_se_ > 0)
    boot = RSquaredSelector(FOREST, uncertainty="bootstrap", n_bootstrap=3, random_state=0).fit(X, labels)
    again = RSquaredSelector(FOREST, uncertainty="bootstrap", n_bootstrap=3, random_state=0).fit(X, labels)
    np.testing.assert_array_equal(boot.bootstrap_rsq_, again.bootstrap_rsq_)


def test_bootstrap_replicates_with_one_class_are_nan_and_left_out_of_the_spread():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    labels = np.array(["common"] * 10 + ["rare"] * 2)
    forest = RandomForestClassifier(n_estimators=5, random_state=0)
    said = r"of 20 bootstrap replicates have one target value .* out-of-bag rows"
    with pytest.warns(UserWarning, match=said) as seen:
        fitted = RSquaredSelector(forest, cv=3, uncertainty="bootstrap", n_bootstrap=20, random_state=0).fit(X, labels)
    ours = [w.filename for w in seen if "bootstrap replicates" in str(w.message)]
    assert ours == [__file__]  # the caller's line, whatever the depth of the calls in between
    undefined = np.isnan(fitted.bootstrap_rsq_).all(axis=1)
    assert fitted.bootstrap_rsq_.shape == (20, 3) and 0 < undefined.sum() < 19
    assert not np.isnan(fitted.bootstrap_rsq_[~undefined]).any()
    np.testing.assert_allclose(fitted.feature_rsq_se_, fitted.bootstrap_rsq_[~undefined].std(axis=0, ddof=1))
    assert np.all((fitted.selection_frequency_ >= 0) & (fitted.selection_frequency_ <= 1))
    # a draw of the common class alone gives a one-class forest: in sample its R² is undefined too
    with pytest.raises(ValueError, match="fewer than 2 for a standard error"):
        RSquaredSelector(forest, uncertainty="bootstrap", n_bootstrap=2, random_state=0).fit(
            X, np.array(["common"] * 11 + ["rare"])
        )


def test_screen_keeps_the_strongest_columns_and_a_pipeline_predicts(wine):
    X, labels = wine
    selector = RSquaredSelector(FOREST, screen=4, max_features=2, threshold=-np.inf).fit(X, labels)
    assert selector.screen_support_.sum() == 4
    assert set(selector.get_support(indices=True)) <= set(np.flatnonzero(selector.screen_support_))
    pipe = make_pipeline(RSquaredSelector(FOREST, max_features=3, threshold=-np.inf), LogisticRegression(max_iter=3000))
    search = GridSearchCV(pipe, {"rsquaredselector__max_features": [2, 4]}, cv=3).fit(X, labels)
    assert search.best_score_ > 0.8


def test_indicator_targets_give_the_label_shares_and_bad_ones_are_refused(wine):
    X, labels = wine
    model = FOREST.fit(X, labels)
    explainer = RSquaredExplainer(model)
    indicator = label_binarize(labels, classes=model.classes_)
    np.testing.assert_allclose(explainer.rsq(X, indicator), explainer.rsq(X, labels), atol=1e-14)
    indicator[0] = 1
    with pytest.raises(ValueError, match="0/1 indicator with one column per class"):
        explainer.rsq(X, indicator)


def test_multi_output_regressors_are_refused_by_the_selector_with_what_it_selects_for(wine):
    X, _ = wine
    Y = np.column_stack([X[:, 0], X[:, 1]])
    model = RandomForestRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X[:, 2:], Y)
    with pytest.raises(ValueError, match="1d array"):  # scikit-learn's check of y, before any fit
        RSquaredSelector(model).fit(X[:, 2:], Y)
    with pytest.raises(UnsupportedModelError, match="single-output regressors and for forest classifiers"):
        RSquaredSelector(model, prefit=True).fit(X[:, 2:], Y[:, 0])


def test_a_fold_model_of_one_class_counts_the_held_out_labels_it_never_saw(wine):
    X, labels = wine
    only = np.flatnonzero(labels == "barolo")
    held = np.setdiff1d(np.arange(len(labels)), only[::2])
    rest = np.setdiff1d(np.arange(len(labels)), only)
    # the first fold's model sees one class and its held-out rows hold all three; the second is ordinary
    folds = [(only[::2], held), (np.concatenate([only, rest[::2]]), rest[1::2])]
    selector = RSquaredSelector(FOREST, cv=folds, threshold=-np.inf, uncertainty="se").fit(X, labels)
    reductions, ssts = [], []
    for train, test in folds:
        model = RandomForestClassifier(n_estimators=20, max_depth=4, random_state=0).fit(X[train], labels[train])
        pooled = labels[np.concatenate([test for _, test in folds])]
        reduction, sst = _brier_reduction(model, X[test], labels[test], np.unique(labels), pooled=pooled)
        reductions.append(reduction)
        ssts.append(sst)
    one_class = RandomForestClassifier(n_estimators=20, max_depth=4, random_state=0).fit(
        X[only[::2]], labels[only[::2]]
    )
    assert list(one_class.classes_) == ["barolo"]
    # it predicts probability 1 for its class everywhere, as E f does: it explains nothing, but its
    # held-out rows' sum of squares (over all three classes) still weighs in the pooled shares
    assert reductions[0] == pytest.approx(0.0, abs=1e-12) and ssts[0] > 0
    assert selector.feature_rsq_.sum() == pytest.approx(sum(reductions) / sum(ssts), abs=1e-10)
    assert np.all(selector.feature_rsq_se_ >= 0) and np.any(selector.feature_rsq_se_ > 0)
    message = r"y has labels \['grignolino', 'barbera'\] that are not among the model's classes \['barolo'\]"
    with pytest.raises(ValueError, match=message):  # prefit: the rows are not held out by the selector
        RSquaredSelector(one_class, prefit=True).fit(X[held], labels[held])


def test_bootstrap_with_a_screen_keeps_draws_of_one_class_as_nan_replicates():
    # the screen ranks columns by in-sample shares on the draw: a draw that misses the rare class
    # has none, and used to stop the fit with "y is constant ... (every held-out fold, with cv=)"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 6))
    labels = np.where(X[:, 0] > 2.0, "rare", "common")  # one rare row
    forest = RandomForestClassifier(n_estimators=10, max_depth=3, random_state=0)
    options = {"threshold": -np.inf, "uncertainty": "bootstrap", "n_bootstrap": 12, "random_state": 1}
    with pytest.warns(
        UserWarning, match=r"of 12 bootstrap replicates have one target value \(one class\) on their rows"
    ):
        screened = RSquaredSelector(forest, screen=3, **options).fit(X, labels)
    with pytest.warns(UserWarning, match="bootstrap replicates"):
        unscreened = RSquaredSelector(forest, **options).fit(X, labels)
    undefined = np.isnan(screened.bootstrap_rsq_).all(axis=1)
    state = check_random_state(1)
    draws = [resample(np.arange(100), random_state=state) for _ in range(12)]
    one_class = np.array([len(np.unique(labels[rows])) == 1 for rows in draws])
    assert 0 < one_class.sum() < 11
    np.testing.assert_array_equal(undefined, one_class)
    np.testing.assert_array_equal(np.isnan(unscreened.bootstrap_rsq_).all(axis=1), one_class)
    # a defined replicate is the screened selector fitted on its draw
    first = int(np.flatnonzero(~one_class)[0])
    rows = draws[first]
    again = RSquaredSelector(forest, screen=3, threshold=-np.inf).fit(X[rows], labels[rows])
    np.testing.assert_allclose(screened.bootstrap_rsq_[first], again.feature_rsq_, atol=1e-12)
    np.testing.assert_allclose(screened.feature_rsq_se_, np.std(screened.bootstrap_rsq_[~undefined], axis=0, ddof=1))


def test_a_constant_target_names_the_rows_it_is_constant_on():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, X[:, 0] > 0)
    message = r"^y is constant over the rows the model is evaluated on, so R² is undefined\.$"
    with pytest.raises(ValueError, match=message):  # no cv= is set: the message no longer mentions it
        RSquaredSelector(model, prefit=True).fit(X, np.ones(40, dtype=bool))
    with pytest.raises(ValueError, match=message):
        RSquaredSelector(FOREST, screen=2).fit(X, np.full(40, "one"))
    with pytest.raises(ValueError, match=r"^y is constant over every held-out fold of cv=, so R² is undefined\.$"):
        RSquaredSelector(RandomForestRegressor(5), cv=2).fit(X, np.full(40, 2.0))
    # folds constant each on its own, not together: the sum of squares is about the pooled mean,
    # and each fold's model, fitted on the other value alone, explains nothing
    split = RSquaredSelector(RandomForestRegressor(5), cv=2).fit(X, np.repeat([0.0, 1.0], 20))
    np.testing.assert_array_equal(split.feature_rsq_, 0.0)


def test_a_catboost_model_that_clone_refuses_is_fitted_with_and_without_cv():
    # CatBoost's get_params hands out a new list for cat_features=[...]: scikit-learn's clone, and
    # with it SelectFromModel and cross_validate, refuse the model; the selector copies its parameters
    pytest.importorskip("catboost")
    from categorical_models import objective_model
    from sklearn.base import clone
    from sklearn.feature_selection import SelectFromModel

    model, X, y, _ = objective_model("catboost:Logloss")
    params = model.get_params()
    unfitted = type(model)(**params)
    with pytest.raises(RuntimeError, match="Cannot clone"):
        SelectFromModel(unfitted).fit(X, y)
    clonable = type(model)(**{**params, "cat_features": tuple(params["cat_features"])})
    clone(clonable)  # the same model that clone accepts: the reference
    for cv in (None, StratifiedKFold(3, shuffle=True, random_state=0)):
        selector = RSquaredSelector(unfitted, cv=cv, max_features=2, threshold=-np.inf).fit(X, y)
        reference = RSquaredSelector(clonable, cv=cv, max_features=2, threshold=-np.inf).fit(X, y)
        np.testing.assert_allclose(selector.feature_rsq_, reference.feature_rsq_, rtol=0, atol=1e-12)
        assert np.abs(selector.feature_rsq_).max() > 1e-3
        assert selector.get_support().sum() == 2
    assert selector.estimator_.get_params()["cat_features"] == [0, 2]  # the model as the user gave it
