"""Per-row values of depth-4 trees through the side tables of ``kernels.recursion.pattern_rows``."""

from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np
import pytest
from conftest import make_data
from oracle import rsq_oracle

from shap_rsq import RSquaredExplainer
from shap_rsq.kernels.enumeration.small_trees import HeapUnit
from shap_rsq.kernels.enumeration.split_patterns import pattern_bits
from shap_rsq.kernels.recursion import pattern_recursion, pattern_rows
from shap_rsq.tuning import DEFAULT_TUNING


@pytest.fixture(scope="module")
def boosters():
    import xgboost
    from sklearn.ensemble import RandomForestRegressor

    X, y, w = make_data(seed=12, nan=True, n=160, p=8)
    xgb = xgboost.XGBRegressor(n_estimators=12, max_depth=4, learning_rate=0.3, random_state=0).fit(X, y)
    X_forest = np.nan_to_num(X)
    forest = RandomForestRegressor(12, max_depth=4, max_features=0.5, random_state=0).fit(X_forest, y)
    return {"xgboost": (xgb, X, y, w), "forest": (forest, X_forest, y, w)}


def _observed(explainer) -> list[HeapUnit]:
    units = explainer._units.units(local=True)
    return [unit for unit in units if isinstance(unit, HeapUnit) and unit.batch.depth == 4]


@pytest.mark.parametrize("name", ["xgboost", "forest"])
def test_per_row_values_of_depth_four_trees_match_subset_enumeration(boosters, name):
    model, X, y, w = boosters[name]
    explainer = RSquaredExplainer(model)
    observed = _observed(explainer)
    assert sum(len(unit.trees) for unit in observed) >= 4
    # batches mix trees with 0 to 3 repeated features: one table group per count
    assert len({k for unit in observed for k in _repeated_counts(unit)}) >= 2
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
    values = explainer(X, y, sample_weight=w).values
    np.testing.assert_allclose(values, expected_local, rtol=0, atol=1e-9)
    np.testing.assert_allclose(values.sum(axis=0), explainer.rsq(X, y, sample_weight=w), rtol=0, atol=1e-12)
    np.testing.assert_allclose(values.sum(axis=0), expected_global, rtol=0, atol=1e-9)
    assert np.abs(expected_local).max() > 1e-3


def _repeated_counts(unit: HeapUnit) -> set[int]:
    return set(pattern_recursion.repeated_players(unit.batch).sum(axis=1).tolist())


def test_pattern_gradients_equal_the_recursions_reverse_pass_on_any_pattern(boosters):
    # every pattern of the 2^15 cube, not only those the rows reach: the chain rule at the root
    # against the two-particle recursion's reverse pass on the same patterns, per tree
    rng = np.random.default_rng(0)
    explainer = RSquaredExplainer(boosters["xgboost"][0])
    for unit in _observed(explainer):
        for _, k, group in unit.method_groups():
            batch = unit.batch.select(group, k)
            patterns = rng.integers(0, 1 << 15, size=(batch.n_trees, 40))
            left = (patterns[:, :, None] >> pattern_bits(4)) & 1 == 1
            ones, zeros = np.ones(patterns.shape), np.zeros(patterns.shape)
            quad, lin = pattern_rows.pattern_unit_gradients(batch, pattern_rows.side_tables(batch), patterns)
            expected_quad = pattern_recursion.recursion_gradients(batch, left, ones, zeros)
            expected_lin = pattern_recursion.recursion_gradients(batch, left, zeros, ones)
            np.testing.assert_allclose(quad, expected_quad, rtol=0, atol=1e-14)
            np.testing.assert_allclose(lin, expected_lin, rtol=0, atol=1e-14)
            assert np.abs(expected_quad).max() > 1e-3


@pytest.mark.parametrize(
    "change",
    [
        {"root_elements": 1},  # one pattern per block
        {"chunk_elements": 1, "min_chunk_rows": 32},  # rows in chunks of 32, tables per chunk
        {"local_columns_per_player": 0},  # (n, T, K) gathers instead of the sparse product
        {"batch_patterns": 1 << 15},  # one tree per batch
        {"parallel_work": 0.0},  # batches in two worker processes (n_jobs=2)
    ],
)
def test_per_row_values_do_not_depend_on_blocks_chunks_layout_or_jobs(boosters, change):
    model, X, y, w = boosters["xgboost"]
    reference = RSquaredExplainer(model)(X, y, sample_weight=w).values
    explainer = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=replace(DEFAULT_TUNING, **change))
    assert _observed(explainer)
    np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, reference, rtol=0, atol=1e-13)


def test_side_tables_are_kept_for_the_next_call_within_the_room(boosters):
    model, X, y, w = boosters["forest"]
    explainer = RSquaredExplainer(model)
    first = explainer(X, y, sample_weight=w).values
    kept = sum(unit.table_bytes for unit in _observed(explainer))
    assert kept > 0
    np.testing.assert_array_equal(explainer(X, y, sample_weight=w).values, first)  # from the kept tables

    tight = RSquaredExplainer(model)._set_engine(tuning=replace(DEFAULT_TUNING, kept_plan_bytes=kept // 2))
    np.testing.assert_array_equal(tight(X, y, sample_weight=w).values, first)
    # the batches keep what fits in the room, in turn; the others make theirs again next call
    held = sum(unit.table_bytes for unit in _observed(tight))
    assert held <= kept // 2
    np.testing.assert_array_equal(tight(X, y, sample_weight=w).values, first)


def test_workers_keep_side_tables_and_batches_travel_without_them(boosters, monkeypatch):
    # a worker keeps the side tables it made, by unit token: the next call's copies arrive
    # without tables (none pickled) and find them there instead of making them again
    from collections import OrderedDict

    from shap_rsq.engine import run, worker_plans

    monkeypatch.setattr(worker_plans, "_CACHE", OrderedDict())
    model, X, y, w = boosters["forest"]
    explainer = RSquaredExplainer(model)
    explainer(X, y, sample_weight=w)
    units = explainer._units.units(local=True)
    observed = _observed(explainer)
    assert all(unit.table_bytes > 0 for unit in observed)  # made by the call above, in this process
    forest = explainer.forest
    start = np.full(len(y), forest.base_offset + forest.nodes.tree_mean.sum())
    # another process's units
    other = {"present": [(True, True)] * len(units), "keep": 1 << 30, "caller": -1, "heap": 16 << 20}

    made = []
    make = pattern_rows.side_tables
    monkeypatch.setattr(pattern_rows, "side_tables", lambda batch: made.append(batch) or make(batch))
    copies = worker_plans.shipped(units)
    assert all(getattr(c, "table_bytes", 0) == 0 and c.token == u.token for c, u in zip(copies, units, strict=True))
    assert len(pickle.dumps(copies)) < len(pickle.dumps(units)) / 5
    first, _, _, _ = run._run_block(copies, X, y, w, start.copy(), forest, True, False, other)
    assert len(made) >= len(observed)
    made.clear()
    again = worker_plans.shipped(units)
    second, _, _, _ = run._run_block(again, X, y, w, start.copy(), forest, True, False, other)
    assert not made  # every table restored from this "worker's" cache
    tokens = {unit.token for unit in observed}
    assert all(a.table_bytes == c.table_bytes > 0 for a, c in zip(again, copies, strict=True) if a.token in tokens)
    np.testing.assert_array_equal(second, first)
    own, _, _, _ = run._run_block(units, X, y, w, start.copy(), forest, True, False)  # this process's tables
    np.testing.assert_array_equal(first, own)
    # a bound smaller than a batch's tables keeps none of them
    worker_plans._CACHE.clear()
    batches = [unit for unit in again if unit.token in tokens]
    worker_plans.remember(batches, limit=min(unit.table_bytes for unit in batches) - 1)
    assert not worker_plans._CACHE
