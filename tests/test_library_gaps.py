"""Where shap's model loading falls short, and that the thin layer in ``_models`` fixes it."""

from __future__ import annotations

import numpy as np
import pytest
import shap
from conftest import make_data

from shap_rsq import RSquaredExplainer

catboost = pytest.importorskip("catboost")


def _fit(X, y, **kwargs):
    params = {"iterations": 8, "depth": 3, "verbose": 0, "allow_writing_files": False, "random_seed": 0}
    return catboost.CatBoostRegressor(**{**params, **kwargs}).fit(X, y)


def test_shap_drops_the_catboost_bias_and_the_explainer_keeps_it():
    X, y, _ = make_data(seed=21)
    model = _fit(X, y + 40.0)
    bias = model.get_scale_and_bias()[1]
    assert abs(bias) > 1.0

    shap_trees = shap.TreeExplainer(model).model
    np.testing.assert_allclose(model.predict(X) - shap_trees.predict(X), bias, atol=1e-5)  # the gap

    forest = RSquaredExplainer(model).forest
    np.testing.assert_allclose(forest.predict(X), model.predict(X), atol=1e-9)


def test_shap_cannot_read_depthwise_or_lossguide_trees_and_the_explainer_can():
    X, y, _ = make_data(seed=22)
    for policy, kwargs in (("Depthwise", {}), ("Lossguide", {"max_leaves": 6, "depth": 6})):
        model = _fit(X, y, grow_policy=policy, **kwargs)
        assert shap.TreeExplainer(model).model.trees is None  # the gap
        explainer = RSquaredExplainer(model)
        np.testing.assert_allclose(explainer.forest.predict(X), model.predict(X), atol=1e-9)
        assert explainer.rsq(X, y).sum() > 0.3


def test_catboost_nan_mode_max_routes_missing_values_right():
    X, y, _ = make_data(seed=23)
    X[::5, 0] = np.nan
    model = _fit(X, y, nan_mode="Max")
    missing = np.isnan(X[:, 0])

    shap_trees = shap.TreeExplainer(model).model
    shap_gap = model.predict(X) - shap_trees.predict(X)
    assert np.ptp(shap_gap[missing]) > 1e-3  # shap sends NaN left whatever nan_mode says

    np.testing.assert_allclose(RSquaredExplainer(model).forest.predict(X), model.predict(X), atol=1e-9)


def test_catboost_model_scale_is_applied():
    X, y, _ = make_data(seed=24)
    model = _fit(X, y)
    model.set_scale_and_bias(2.5, model.get_scale_and_bias()[1])
    np.testing.assert_allclose(RSquaredExplainer(model).forest.predict(X), model.predict(X), atol=1e-9)
