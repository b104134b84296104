"""RSquaredSelector with scikit-learn's metadata routing: weights for the R², the estimator and the splitter."""

from __future__ import annotations

import numpy as np
import pytest
import sklearn
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.linear_model import LinearRegression
from sklearn.metrics import make_scorer, r2_score
from sklearn.model_selection import GroupKFold, KFold, cross_validate
from sklearn.pipeline import Pipeline
from sklearn.tree import DecisionTreeRegressor

from shap_rsq import RSquaredExplainer, RSquaredSelector


@pytest.fixture(autouse=True)
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    y = 2 * X[:, 0] + X[:, 1] + rng.normal(scale=0.5, size=120)
    w = rng.uniform(0.1, 3.0, size=120)
    return X, y, w


def tree(request: bool | None = None) -> DecisionTreeRegressor:
    model = DecisionTreeRegressor(max_depth=4, random_state=0)
    return model if request is None else model.set_fit_request(sample_weight=request)


@pytest.mark.parametrize(("selector_wants", "estimator_wants"), [(True, True), (True, False), (False, True)])
def test_sample_weight_goes_where_it_is_requested(data, selector_wants, estimator_wants):
    """The selector's request decides the weighted R², the estimator's request its weighted fit."""
    X, y, w = data
    selector = RSquaredSelector(tree(estimator_wants)).set_fit_request(sample_weight=selector_wants)
    pipeline = Pipeline([("select", selector), ("ols", LinearRegression().set_fit_request(sample_weight=True))])
    fitted = pipeline.fit(X, y, sample_weight=w).named_steps["select"]
    reference = tree().fit(X, y, sample_weight=w if estimator_wants else None)
    np.testing.assert_array_equal(fitted.estimator_.predict(X), reference.predict(X))
    expected = RSquaredExplainer(reference).rsq(X, y, w if selector_wants else None)
    np.testing.assert_allclose(fitted.feature_rsq_, expected, atol=1e-12)


def test_a_prefit_estimator_is_asked_for_no_request(data):
    # nothing is refitted, so the estimator's request does not matter, as in SelectFromModel; the
    # selector asked process_routing anyway and raised UnsetMetadataPassedError for the estimator
    X, y, w = data
    model = tree().fit(X, y)
    selector = RSquaredSelector(model, prefit=True).set_fit_request(sample_weight=True)
    shares = selector.fit(X, y, sample_weight=w).feature_rsq_
    np.testing.assert_allclose(shares, RSquaredExplainer(model).rsq(X, y, w), atol=1e-12)
    pipeline = Pipeline([("select", selector), ("ols", LinearRegression().set_fit_request(sample_weight=True))])
    fitted = pipeline.fit(X, y, sample_weight=w).named_steps["select"]
    np.testing.assert_allclose(fitted.feature_rsq_, shares, atol=1e-12)


def test_routed_weights_are_subset_with_the_folds(data):
    X, y, w = data
    folds = list(KFold(3, shuffle=True, random_state=0).split(X))
    selector = RSquaredSelector(tree(True), cv=folds).set_fit_request(sample_weight=False)
    shares = selector.fit(X, y, sample_weight=w).feature_rsq_
    numerator = np.zeros(X.shape[1])
    for train, test in folds:  # weighted fits, unweighted held-out R²
        model = tree().fit(X[train], y[train], sample_weight=w[train])
        sst = np.sum((y[test] - y[test].mean()) ** 2)
        numerator += RSquaredExplainer(model).rsq(X[test], y[test]) * sst
    total = np.sum((y - y.mean()) ** 2)  # the pooled held-out rows' sum of squares, unweighted
    np.testing.assert_allclose(shares, numerator / total, atol=1e-12)


def test_an_aliased_request_reaches_the_folds(data):
    # with cv=, the routed sample_weight went to cross_validate, which routed it again against the
    # estimator's request for "my_w": TypeError "cross_validate.fit got unexpected argument(s)"
    X, y, w = data
    folds = list(KFold(3, shuffle=True, random_state=0).split(X))
    aliased = DecisionTreeRegressor(max_depth=4, random_state=0).set_fit_request(sample_weight="my_w")
    shares = RSquaredSelector(aliased, cv=folds).fit(X, y, my_w=w).feature_rsq_
    plain = RSquaredSelector(tree(True), cv=folds).set_fit_request(sample_weight=False)
    np.testing.assert_allclose(shares, plain.fit(X, y, sample_weight=w).feature_rsq_, atol=1e-12)


def test_groups_are_routed_to_the_splitter(data):
    X, y, w = data
    groups = np.repeat(np.arange(12), 10)
    routed = RSquaredSelector(tree(), cv=GroupKFold(3)).fit(X, y, groups=groups).feature_rsq_
    given = RSquaredSelector(tree(), cv=list(GroupKFold(3).split(X, y, groups))).fit(X, y).feature_rsq_
    np.testing.assert_allclose(routed, given, atol=1e-12)
    with pytest.raises(ValueError, match="groups"):
        RSquaredSelector(tree(), cv=GroupKFold(3)).fit(X, y)
    # and through a cross-validated pipeline, groups and weights together
    selector = RSquaredSelector(tree(True), cv=GroupKFold(3)).set_fit_request(sample_weight=True)
    pipeline = Pipeline([("select", selector), ("ols", LinearRegression().set_fit_request(sample_weight=True))])
    scorer = make_scorer(r2_score).set_score_request(sample_weight=True)
    scores = cross_validate(
        pipeline, X, y, params={"sample_weight": w, "groups": groups}, cv=GroupKFold(4), scoring=scorer
    )["test_score"]
    assert np.all(scores > 0.5), scores


def test_unrequested_metadata_is_refused_by_name(data):
    X, y, w = data
    with pytest.raises(UnsetMetadataPassedError, match=r"DecisionTreeRegressor\.set_fit_request"):
        RSquaredSelector(tree()).fit(X, y, sample_weight=w)
    pipeline = Pipeline([("select", RSquaredSelector(tree(True))), ("ols", LinearRegression())])
    with pytest.raises(UnsetMetadataPassedError, match="RSquaredSelector"):
        pipeline.fit(X, y, sample_weight=w)


def test_weights_kept_from_the_selector_and_its_estimator_reach_what_requests_them(data):
    # with the selector and its tree opted out (weights meant for a later step), fit failed with
    # "sample_weight ... not routed to any object" even without weights, and fit(X, y) with no
    # metadata at all hung inside scikit-learn's empty routing request
    X, y, w = data
    opted_out = RSquaredSelector(tree(False)).set_fit_request(sample_weight=False)
    plain = RSquaredSelector(tree(False)).fit(X, y)
    np.testing.assert_array_equal(opted_out.fit(X, y).feature_rsq_, plain.feature_rsq_)
    pipe = Pipeline([("select", opted_out), ("model", LinearRegression().set_fit_request(sample_weight=True))])
    pipe.fit(X, y, sample_weight=w)
    weighted = LinearRegression().fit(X[:, pipe[0].get_support()], y, sample_weight=w)
    np.testing.assert_allclose(pipe[-1].coef_, weighted.coef_)
    aliased = DecisionTreeRegressor(max_depth=4, random_state=0).set_fit_request(sample_weight="tree_w")
    selector = RSquaredSelector(aliased).set_fit_request(sample_weight=False).fit(X, y, tree_w=w)
    expected = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(selector.estimator_.tree_.value, expected.tree_.value)
    np.testing.assert_allclose(selector.feature_rsq_, RSquaredExplainer(expected).rsq(X, y), rtol=0, atol=1e-12)
