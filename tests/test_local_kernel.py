"""Per-row values of deeper trees (the LCA kernel's local path, ``kernels.lca_local``) against the oracle."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import make_data
from oracle import rsq_oracle

from shap_rsq import RSquaredExplainer
from shap_rsq.kernels.lca_tree import LcaUnit
from shap_rsq.tuning import DEFAULT_TUNING


def _model(name: str, X, y):
    import xgboost
    from sklearn.ensemble import RandomForestRegressor

    if name == "xgboost-depth-4":
        return xgboost.XGBRegressor(n_estimators=8, max_depth=4, learning_rate=0.3, random_state=0).fit(X, y)
    if name == "xgboost-depth-6":
        return xgboost.XGBRegressor(n_estimators=5, max_depth=6, learning_rate=0.3, random_state=0).fit(X, y)
    if name == "forest-depth-4":
        return RandomForestRegressor(6, max_depth=4, random_state=0).fit(X, y)
    return RandomForestRegressor(4, max_depth=6, random_state=0).fit(X, y)


MODELS = ["xgboost-depth-4", "xgboost-depth-6", "forest-depth-4", "forest-depth-6"]


@pytest.fixture(scope="module")
def cases():
    cache = {}

    def get(name: str, nan: bool = False):
        if (name, nan) not in cache:
            X, y, w = make_data(seed=11, nan=nan and name.startswith("xgboost"), n=150, p=7)
            cache[name, nan] = _model(name, X, y), X, y, w
        return cache[name, nan]

    return get


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("name", MODELS)
def test_per_row_values_of_deeper_trees_match_subset_enumeration(cases, name, nan):
    model, X, y, w = cases(name, nan)
    explainer = RSquaredExplainer(model)
    units = explainer._units.units(local=True)
    # every tree of these models goes through the LCA kernel for per-row values
    assert units and all(isinstance(unit, LcaUnit) for unit in units)
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
    values = explainer(X, y, sample_weight=w).values
    np.testing.assert_allclose(values, expected_local, rtol=0, atol=1e-9)
    shares = explainer.rsq(X, y, sample_weight=w)
    np.testing.assert_allclose(shares, expected_global, rtol=0, atol=1e-9)
    np.testing.assert_allclose(values.sum(axis=0), shares, rtol=0, atol=1e-12)
    assert np.abs(expected_local).max() > 1e-3


@pytest.mark.parametrize("name", ["xgboost-depth-6", "forest-depth-6"])
def test_per_row_values_do_not_depend_on_blocks_chunks_or_jobs(cases, name):
    model, X, y, w = cases(name, True)
    reference = RSquaredExplainer(model)(X, y, sample_weight=w).values
    # one pattern per kernel call, groups in parts of a few entries (many parts to a chunk, or one),
    # rows and items in blocks of one or two, and every view tabulated cell by cell (or densely)
    tiny = replace(DEFAULT_TUNING, pattern_elements=1, parallel_work=0.0, chunk_cells=16, block_elements=64)
    # (chunks of mixed widths below mixed_cells entries, classes of one width and kind above; a
    # chunk per number of quadrature nodes, or chunks across them)
    variants = (
        (0.0, 1 << 17, 0, 0.0),
        (np.inf, 1 << 17, 0, np.inf),
        (0.3, 16, 0, 0.0),
        (0.3, 1 << 17, 1 << 14, np.inf),
    )
    for ratio, tabulate, mixed, level in variants:
        tuning = replace(tiny, dense_ratio=ratio, tabulate_cells=tabulate, mixed_cells=mixed, level_work=level)
        small = RSquaredExplainer(model)._set_engine(tuning=tuning)(X, y, sample_weight=w).values
        np.testing.assert_allclose(small, reference, rtol=0, atol=1e-12)
    tuning = replace(DEFAULT_TUNING, pattern_elements=1, parallel_work=0.0)
    parallel = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=tuning)(X, y, sample_weight=w).values
    np.testing.assert_allclose(parallel, reference, rtol=0, atol=1e-12)


def test_slot_gradients_equal_tree_shap_on_the_linear_part(cases):
    # the linear part of each tree's game is its path-dependent SHAP value (shap's TreeSHAP)
    import shap

    from shap_rsq.engine.run import tree_shap_values
    from shap_rsq.kernels.lca_plan import compile_tree

    model, X, _, _ = cases("forest-depth-6")
    explainer = RSquaredExplainer(model)
    ours = sum(
        tree_shap_values(compile_tree(tree), X, X.shape[1], explainer.forest.input_dtype)
        for tree in explainer.forest.trees
    )
    theirs = shap.TreeExplainer(model).shap_values(X)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)
