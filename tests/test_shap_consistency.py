"""The linear term of every tree game is shap's TreeSHAP, and the explainer stays a working TreeExplainer."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
import shap
from conftest import FAMILIES, make_data, predict
from oracle import tree_shap_oracle

from shap_rsq import RSquaredExplainer
from shap_rsq.engine.run import tree_shap_values
from shap_rsq.kernels.lca.plan import compile_tree

matplotlib.use("Agg")


def _single_tree_model(tree) -> dict:
    return {
        "trees": [
            {
                "children_left": tree.left,
                "children_right": tree.right,
                "children_default": tree.default,
                "features": np.where(tree.is_leaf, -2, tree.feature),
                "thresholds": tree.threshold,
                "values": tree.value.reshape(-1, 1),
                "node_sample_weight": tree.cover,
            }
        ]
    }


@pytest.mark.parametrize("family", FAMILIES)
def test_linear_term_equals_shap_tree_shap_per_tree(fitted, family):
    model, X, _, _ = fitted(family)
    explainer = RSquaredExplainer(model)
    rows = explainer.forest.cast(X)
    compared = 0
    for t in range(0, len(explainer.forest.trees), 3):
        tree = explainer.forest.trees[t]
        if np.any(tree.cover <= 0):
            continue  # shap's TreeSHAP divides by zero cover; those trees are checked against enumeration
        ours = tree_shap_values(compile_tree(explainer.forest.trees[t]), X, X.shape[1], explainer.forest.input_dtype)
        reference = shap.TreeExplainer(_single_tree_model(tree)).shap_values(rows)
        np.testing.assert_allclose(ours, reference, atol=1e-9, rtol=0)
        compared += 1
    assert compared > 0 or family.startswith("CatBoost")


def test_linear_term_with_zero_cover_nodes_matches_enumeration(fitted):
    model, X, _, _ = fitted("CatBoost-SymmetricTree")
    explainer = RSquaredExplainer(model)
    rows = explainer.forest.cast(X)
    empty = [t for t, tree in enumerate(explainer.forest.trees) if np.any(tree.cover <= 0)]
    assert empty, "expected CatBoost to leave some leaves empty"
    for t in empty[:3]:
        ours = tree_shap_values(compile_tree(explainer.forest.trees[t]), X, X.shape[1], explainer.forest.input_dtype)
        np.testing.assert_allclose(ours, tree_shap_oracle(explainer.forest.trees[t], rows), atol=1e-12)


def test_linear_term_equals_tree_shap_through_the_users_model(fitted):
    # per-tree SHAP values as differences of shap's cumulative values over the real model
    model, X, _, _ = fitted("GradientBoostingRegressor")
    explainer = RSquaredExplainer(model)
    reference = shap.TreeExplainer(model)
    previous = np.zeros_like(X)
    for t in range(4):
        cumulative = reference.shap_values(X, tree_limit=t + 1, check_additivity=False)
        ours = tree_shap_values(compile_tree(explainer.forest.trees[t]), X, X.shape[1], explainer.forest.input_dtype)
        np.testing.assert_allclose(ours, cumulative - previous, atol=1e-9, rtol=0)
        previous = cumulative


def test_linear_term_matches_enumeration_with_missing_values(fitted):
    model, X, _, _ = fitted("HistGradientBoostingRegressor", True)
    explainer = RSquaredExplainer(model)
    tree = explainer.forest.trees[2]
    ours = tree_shap_values(compile_tree(explainer.forest.trees[2]), X, X.shape[1], explainer.forest.input_dtype)
    np.testing.assert_allclose(ours, tree_shap_oracle(tree, explainer.forest.cast(X)), atol=1e-12)


@pytest.mark.parametrize(
    "family", ["XGBRegressor", "LGBMRegressor", "HistGradientBoostingRegressor", "CatBoost-SymmetricTree"]
)
def test_inherited_shap_values_stay_additive(fitted, family):
    model, X, _, _ = fitted(family)
    explainer = RSquaredExplainer(model)
    assert isinstance(explainer, shap.TreeExplainer)
    values = explainer.shap_values(X)
    np.testing.assert_allclose(values.sum(axis=1) + explainer.expected_value, predict(model, X), atol=1e-5)


def test_explanation_feeds_shap_plots(fitted):
    model, X, y, _ = fitted("XGBRegressor")
    explanation = RSquaredExplainer(model, feature_names=[f"x{j}" for j in range(X.shape[1])])(X, y)
    assert explanation.feature_names == [f"x{j}" for j in range(X.shape[1])]
    shap.plots.bar(explanation.sum(0), show=False)
    shap.plots.bar(explanation, show=False)
    shap.plots.beeswarm(explanation, show=False)
    matplotlib.pyplot.close("all")
    np.testing.assert_allclose(explanation.sum(0).values, explanation.values.sum(0))


def test_unused_trees_and_stumps_are_harmless():
    lightgbm = pytest.importorskip("lightgbm")
    X, y, _ = make_data(seed=3)
    # min_child_samples larger than n makes every tree a single leaf
    model = lightgbm.LGBMRegressor(n_estimators=3, min_child_samples=500, verbose=-1).fit(X, y)
    shares = RSquaredExplainer(model).rsq(X, y)
    np.testing.assert_array_equal(shares, np.zeros(X.shape[1]))
