"""Per-row values of deeper trees (the LCA kernel's local path, ``kernels.lca.row_values``) against the oracle."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import make_data
from oracle import rsq_oracle

from shap_rsq import RSquaredExplainer
from shap_rsq.kernels.lca.unit import LcaUnit
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
    # depth-4 trees take the side tables of kernels.recursion.pattern_rows by default (tests/test_pattern_rows.py)
    explainer = RSquaredExplainer(model)._set_engine(kernel="lca")
    units = explainer._units.units(local=True)
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
    X, y, w = X[:24], y[:24], w[:24]  # one pattern a call is slow: 2 minutes a model on all 150 rows
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


@pytest.mark.parametrize("name", ["xgboost-depth-6", "forest-depth-6"])
def test_single_items_slopes_per_entry_equal_their_slopes_row_by_row(cases, name, monkeypatch):
    # the single items' per-row slopes are summed over the nodes once per entry of their tables,
    # unless that table would pass block_elements: then each row sums them (the cross items' way)
    from shap_rsq.kernels.lca import row_values

    model, X, y, w = cases(name, True)
    taken = []
    real = row_values._single_slopes
    monkeypatch.setattr(row_values, "_single_slopes", lambda *args: taken.append(1) or real(*args))
    explainer = RSquaredExplainer(model)._set_engine(kernel="lca")
    per_entry = explainer(X, y, sample_weight=w).values
    assert len(taken) == len(explainer.forest.trees)
    small = replace(DEFAULT_TUNING, block_elements=64)
    row_by_row = RSquaredExplainer(model)._set_engine(kernel="lca", tuning=small)(X, y, sample_weight=w).values
    assert len(taken) == len(explainer.forest.trees)  # no entry table at that size
    np.testing.assert_allclose(per_entry, row_by_row, rtol=0, atol=1e-14 * np.abs(row_by_row).max())


def test_slot_gradients_equal_tree_shap_on_the_linear_part(cases):
    # the linear part of each tree's game is its path-dependent SHAP value (shap's TreeSHAP)
    import shap

    from shap_rsq.engine.run import tree_shap_values
    from shap_rsq.kernels.lca.plan import compile_tree

    model, X, _, _ = cases("forest-depth-6")
    explainer = RSquaredExplainer(model)
    ours = sum(
        tree_shap_values(compile_tree(tree), X, X.shape[1], explainer.forest.input_dtype)
        for tree in explainer.forest.trees
    )
    theirs = shap.TreeExplainer(model).shap_values(X)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)


@pytest.mark.parametrize("family", ["RandomForestRegressor", "XGBRegressor", "LGBMRegressor", "CatBoost-SymmetricTree"])
def test_every_factor_with_a_slope_has_one_log_derivative_at_bit_zero(fitted, family):
    # the per-row kernel contracts every factor's bit-0 part with one vector, -1 / (1 - q): that
    # holds because each factor with a slope is q p + (1 - q) R, (a0, b0) = (R, -R); R = 0 (a
    # zero cover, as CatBoost's empty children) gives no bit-0 slope at all
    from shap_rsq.kernels.batching.blocks import plan_blocks
    from shap_rsq.kernels.lca.plan import compile_tree

    model = fitted(family, True)[0]
    plans = [compile_tree(tree) for tree in RSquaredExplainer(model).forest.trees if tree.left[0] >= 0]
    unit = zero = 0
    for plan in plans:
        carried = plan_blocks(plan).carry  # (items, factors): the factors with a slope
        a0, b0 = plan.fac_a0[carried], plan.fac_b0[carried]
        is_unit = (a0 == -b0) & (a0 != 0.0)
        is_zero = (a0 == 0.0) & (b0 == 0.0)
        assert np.all(is_unit | is_zero)
        unit += int(is_unit.sum())
        zero += int(is_zero.sum())
    assert unit > 0
    if family.startswith("CatBoost"):
        assert zero > 0  # the zero-cover factors are there, and slope only where their bit is 1


def test_pass_bit_table_reads_the_leaf_codes(cases):
    # one table row per (leaf, bit of its code), built once per tree, stands for shifting the codes
    from shap_rsq.kernels.lca.global_values import leaf_codes
    from shap_rsq.kernels.lca.plan import compile_tree
    from shap_rsq.kernels.lca.row_values import _PassBits
    from shap_rsq.kernels.row_patterns import split_decisions

    model, X, _, _ = cases("xgboost-depth-6", True)
    explainer = RSquaredExplainer(model)
    plan = compile_tree(explainer.forest.trees[0])
    codes = leaf_codes(plan, split_decisions(plan, X, explainer.forest.input_dtype))
    bits = _PassBits(plan, codes)
    assert plan.code_size.max() > 1 and 0 < bits.table.mean() < 1
    for leaf in range(len(plan.code_size)):
        for bit in range(int(plan.code_size[leaf])):
            row = bits.row(np.array([leaf]), np.array([bit]))[0]
            np.testing.assert_array_equal(bits.table[row], (codes[:, leaf] >> bit) & 1 == 1)
