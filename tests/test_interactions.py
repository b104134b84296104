"""Interaction shares of R²: exact against subset enumeration of the Shapley interaction index."""

from __future__ import annotations

import tracemalloc
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from conftest import FAMILIES, NO_NAN, make_data
from oracle import interaction_oracle
from sklearn.ensemble import RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor

from shap_rsq import RSquaredExplainer
from shap_rsq.engine.budget import MemoryBudgetError, check_interaction_plans
from shap_rsq.engine.routing import takes_subsets
from shap_rsq.kernels.interactions.indices import compile_interactions, pattern_interactions
from shap_rsq.kernels.interactions.subsets import compile_subsets, subset_interactions, subset_plan_bytes, subset_work
from shap_rsq.tuning import DEFAULT_TUNING

MEMBERS = [[0, 2], [1, 4, 5], [3]]
GROUPS = {"ab": [0, 2], "cde": [1, 4, 5]}


def _indices(matrix: np.ndarray) -> np.ndarray:
    """The interaction indices ``I_jk`` in shap's layout: twice the off-diagonal part."""
    return 2.0 * (matrix - np.diag(np.diag(matrix)))


@pytest.mark.parametrize("kernel", ["auto", "pairs"])
@pytest.mark.parametrize("family", FAMILIES)
def test_interactions_match_subset_enumeration(fitted, family, kernel):
    # "auto" takes these trees (at most 6 players) on every subset, "pairs" leaf pair by leaf pair
    model, X, y, w = fitted(family, family not in NO_NAN)
    explainer = RSquaredExplainer(model)._set_engine(kernel=kernel)
    expected, expected_local = interaction_oracle(explainer.forest, X, y, w)
    matrix = explainer.rsq_interactions(X, y, sample_weight=w)
    np.testing.assert_allclose(_indices(matrix), expected, atol=1e-9, rtol=0)
    # shap's convention: symmetric, each row sums to the feature's share, the whole to the total
    shares = explainer.rsq(X, y, sample_weight=w)
    np.testing.assert_allclose(matrix, matrix.T, atol=0)
    np.testing.assert_allclose(matrix.sum(axis=1), shares, atol=1e-12)
    explanation = explainer(X, y, sample_weight=w, interactions=True)
    per_row = explanation.values
    np.testing.assert_allclose(2.0 * per_row * (1 - np.eye(X.shape[1])), expected_local, atol=1e-9, rtol=0)
    np.testing.assert_allclose(per_row.sum(axis=0), matrix, atol=1e-12)
    part = w * ((y - np.average(y, weights=w)) ** 2 - (y - model_prediction(explainer, X)) ** 2) / _sst(y, w)
    np.testing.assert_allclose(per_row.sum(axis=(1, 2)) + explanation.base_values, part, atol=1e-9)


def model_prediction(explainer, X):
    return explainer.forest.predict(X)


def _sst(y, w):
    return np.sum(w * (y - np.average(y, weights=w)) ** 2)


def test_a_fully_grown_tree_matches_subset_enumeration():
    X, y, w = make_data(seed=5, n=80)
    model = DecisionTreeRegressor(random_state=0).fit(X, y)  # fully grown: 80 leaves, features reused
    assert model.get_depth() >= 8
    explainer = RSquaredExplainer(model)
    expected, _ = interaction_oracle(explainer.forest, X, y, w)
    np.testing.assert_allclose(_indices(explainer.rsq_interactions(X, y, sample_weight=w)), expected, atol=1e-9)


def test_small_trees_take_subsets_and_give_the_leaf_pairs_values():
    # a deep forest on 10 features takes every tree on subsets (its leaf pairs cost 3-20x shap's
    # interaction values); a tree on more players than interaction_subset_players keeps the pairs
    X, y, _ = make_data(seed=3, n=300, p=10)
    model = RandomForestRegressor(n_estimators=3, max_depth=10, random_state=0).fit(X, y)
    forest = RSquaredExplainer(model).forest
    assert all(takes_subsets(tree) for tree in forest.trees)
    few = replace(DEFAULT_TUNING, interaction_subset_players=9)
    assert not any(takes_subsets(tree, few) for tree in forest.trees)
    assert not takes_subsets(forest.trees[0], kernel="pairs")
    # a subset plan over a quarter of the budget (its weights alone: 8 x 2^10 x 55 bytes) keeps the pairs
    tiny = replace(DEFAULT_TUNING, memory_budget=1 << 20)
    assert subset_plan_bytes(subset_work(forest.trees[0]), 10) > tiny.memory_budget // 4
    assert not takes_subsets(forest.trees[0], tiny, kernel="enumerate")
    # both kernels on the same tree and rows, with weights far from 0 (the subsets centre m_S first)
    rng = np.random.default_rng(0)
    w_quad, w_lin = rng.normal(size=300), 1e4 + rng.normal(size=300)
    for tree in forest.trees:
        pairs, subsets = compile_interactions(tree), compile_subsets(tree)
        expected = pattern_interactions(pairs, X, w_quad, w_lin)
        indices, shapley = subset_interactions(subsets, X, w_quad, w_lin)
        np.testing.assert_allclose(indices, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
        rows = np.arange(0, 300, 7)
        expected_m2, expected_m = pattern_interactions(pairs, X, None, None, rows=rows)
        on_m2, on_m, phi_m2, phi_m = subset_interactions(subsets, X, None, None, rows=rows)
        np.testing.assert_allclose(on_m2, expected_m2, rtol=0, atol=1e-12 * np.abs(expected_m2).max())
        np.testing.assert_allclose(on_m, expected_m, rtol=0, atol=1e-12 * np.abs(expected_m).max())
        # efficiency: each row's Shapley values add up to v(all) - v(empty), m_empty being the mean c
        c, m = subsets.mean, tree.value[tree.leaf_of(X)]
        np.testing.assert_allclose(phi_m.sum(axis=1), m[rows] - c, atol=1e-12)
        np.testing.assert_allclose(phi_m2.sum(axis=1), m[rows] ** 2 - c**2, atol=1e-12)
        np.testing.assert_allclose(shapley.sum(), w_quad @ (m**2 - c**2) + w_lin @ (m - c), rtol=1e-12)


def test_interaction_plans_are_kept_within_the_bound():
    # past Tuning.kept_plan_bytes a tree's interaction plan is compiled on each use, same values
    from shap_rsq.engine.worker_plans import plan_bytes

    X, y, w = make_data(seed=6, n=120)
    model = RandomForestRegressor(6, max_depth=6, random_state=0).fit(X, y)
    free = RSquaredExplainer(model)
    expected = free.rsq_interactions(X, y, sample_weight=w)
    kept = free._units.interaction_plans()._plans
    sizes = [plan_bytes(plan) for plan in kept.values()]
    assert len(sizes) == 6 and min(sizes) > 0
    bound = int(2.5 * np.mean(sizes))
    explainer = RSquaredExplainer(model)._set_engine(tuning=replace(DEFAULT_TUNING, kept_plan_bytes=bound))
    for _ in range(2):
        np.testing.assert_array_equal(explainer.rsq_interactions(X, y, sample_weight=w), expected)
        plans = explainer._units.interaction_plans()
        assert 0 < len(plans._plans) < 6
        assert sum(plan_bytes(plan) for plan in plans._plans.values()) == plans.kept_bytes <= bound


def test_group_interactions_match_enumeration_over_groups(fitted):
    model, X, y, w = fitted("LGBMRegressor", True)
    explainer = RSquaredExplainer(model)
    expected, _ = interaction_oracle(explainer.forest, X, y, w, players=MEMBERS)
    matrix = explainer.rsq_interactions(X, y, sample_weight=w, groups=GROUPS)
    np.testing.assert_allclose(_indices(matrix), expected, atol=1e-9, rtol=0)
    np.testing.assert_allclose(matrix.sum(axis=1), explainer.rsq(X, y, sample_weight=w, groups=GROUPS), atol=1e-12)


def test_the_interacting_pair_carries_the_interaction_and_a_dummy_gets_none():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    y = X[:, 0] * X[:, 1] + X[:, 2] + rng.normal(scale=0.2, size=2000)
    model = RandomForestRegressor(n_estimators=20, max_depth=6, random_state=0).fit(X * [1, 1, 1, 1, 0], y)
    matrix = RSquaredExplainer(model).rsq_interactions(X, y)
    off = _indices(matrix)
    assert off[0, 1] == off.max() and off[0, 1] > 0.05
    assert np.all(matrix[4] == 0.0) and np.all(matrix[:, 4] == 0.0)  # never split on: exactly zero
    assert np.abs(off[3, :3]).max() < 0.05 * off[0, 1]  # x3 enters additively: it interacts with nothing


def test_top_k_lists_the_strongest_pairs_of_the_full_matrix(fitted):
    model, X, y, w = fitted("XGBRegressor")
    explainer = RSquaredExplainer(model)
    names = [f"x{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    matrix = explainer.rsq_interactions(frame, y, sample_weight=w)
    assert list(matrix.index) == names and list(matrix.columns) == names
    top = explainer.rsq_interactions(frame, y, sample_weight=w, top_k=4)
    assert list(top.columns) == ["feature_a", "feature_b", "rsq"] and len(top) == 4
    pairs = [(abs(2 * matrix.iloc[a, b]), names[a], names[b]) for a in range(6) for b in range(a + 1, 6)]
    expected = sorted(pairs, reverse=True)[:4]
    assert [(a, b) for _, a, b in expected] == list(zip(top.feature_a, top.feature_b, strict=True))
    for _, row in top.iterrows():
        assert row.rsq == pytest.approx(2 * matrix.loc[row.feature_a, row.feature_b], abs=1e-12)


def test_top_k_on_an_array_with_groups_labels_groups_by_name_and_columns_by_position():
    # the labels were the players' positions: with {"g": [0, 1]} the pair (0, 1) was g x column 2
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 5))
    y = X[:, 0] * X[:, 1] + X[:, 2] * X[:, 3] + X[:, 4] + 0.3 * rng.normal(size=150)
    explainer = RSquaredExplainer(RandomForestRegressor(20, max_depth=4, random_state=0).fit(X, y))
    groups = {"g": [0, 1]}
    matrix = explainer.rsq_interactions(X, y, groups=groups)  # players g, columns 2, 3, 4
    top = explainer.rsq_interactions(X, y, top_k=6, groups=groups)
    player = {"g": 0, 2: 1, 3: 2, 4: 3}
    assert set(top.feature_a) | set(top.feature_b) <= set(player) and len(top) == 6
    for _, row in top.iterrows():
        assert row.rsq == pytest.approx(2 * matrix[player[row.feature_a], player[row.feature_b]], abs=1e-12)
    labels = ["g", 2, 3, 4]
    pairs = sorted((abs(2 * matrix[a, b]), labels[a], labels[b]) for a in range(4) for b in range(a + 1, 4))
    expected = [(a, b) for _, a, b in reversed(pairs)]
    assert list(zip(top.feature_a, top.feature_b, strict=True)) == expected
    assert explainer(X, y, groups=groups).feature_names == ["g", "Feature 2", "Feature 3", "Feature 4"]
    # without groups the same columns keep the same labels
    plain = explainer.rsq_interactions(X, y, top_k=15)
    assert set(plain.feature_a) | set(plain.feature_b) <= set(range(5))


def test_top_k_on_wide_data_stays_sparse():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 5000))
    y = X[:, 0] * X[:, 1] + X[:, 2] + rng.normal(scale=0.3, size=200)
    model = RandomForestRegressor(n_estimators=10, max_depth=5, max_features=0.2, random_state=0).fit(X, y)
    # a budget far below one dense 5000 x 5000 array (191 MiB) still runs: nothing p x p is formed
    explainer = RSquaredExplainer(model, memory_budget=0.1)
    top = explainer.rsq_interactions(X, y, top_k=10)
    assert len(top) == 10 and np.all(np.diff(np.abs(top.rsq)) <= 0)


def test_results_do_not_depend_on_chunk_sizes_or_column_order(fitted):
    model, X, y, w = fitted("RandomForestRegressor", True)
    explainer = RSquaredExplainer(model)
    reference = explainer.rsq_interactions(X, y, sample_weight=w)
    per_row = explainer(X, y, sample_weight=w, interactions=True).values
    # tiny chunks of rows, codes found by sorting rather than in a table, and entries row by row
    tiny = replace(DEFAULT_TUNING, chunk_elements=1 << 8, block_elements=1 << 6)
    for tuning in (tiny, replace(tiny, interaction_table_codes=0), replace(tiny, interaction_code_bits=1)):
        other = RSquaredExplainer(model)._set_engine(tuning=tuning)
        np.testing.assert_allclose(other.rsq_interactions(X, y, sample_weight=w), reference, atol=1e-12)
        np.testing.assert_allclose(other(X, y, sample_weight=w, interactions=True).values, per_row, atol=1e-12)
    local = explainer(X[:7], y[:7], sample_weight=w[:7], interactions=True).values  # fewer rows than codes
    np.testing.assert_allclose(
        local, RSquaredExplainer(model)(X[:7], y[:7], sample_weight=w[:7], interactions=True).values, atol=1e-12
    )
    names = [f"x{j}" for j in range(6)]
    frame = pd.DataFrame(X, columns=names)
    named = RandomForestRegressor(**model.get_params()).fit(frame, y)
    by_name = RSquaredExplainer(named)
    shuffled = by_name.rsq_interactions(frame[names[::-1]], y, sample_weight=w)
    np.testing.assert_allclose(
        shuffled.loc[names, names], by_name.rsq_interactions(frame, y, sample_weight=w), atol=1e-12
    )


def test_caller_arrays_are_untouched(fitted):
    model, X, y, w = fitted("HistGradientBoostingRegressor", True)
    copies = X.copy(), y.copy(), w.copy()
    RSquaredExplainer(model).rsq_interactions(X, y, sample_weight=w)
    for before, after in zip(copies, (X, y, w), strict=True):
        np.testing.assert_array_equal(before, after)


def test_bad_requests_are_refused_with_the_reason(fitted):
    model, X, y, _ = fitted("DecisionTreeRegressor")
    explainer = RSquaredExplainer(model)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="top_k must be a positive integer"):
            explainer.rsq_interactions(X, y, top_k=bad)
    wide = np.random.default_rng(0).normal(size=(300, 400))
    stump = DecisionTreeRegressor(max_depth=2).fit(wide, wide[:, 0])
    with pytest.raises(
        MemoryBudgetError,
        match=r"Per-row interaction shares of 300 rows and 400 players need about 0.72 GiB.*"
        r"about 6 fit",
    ):
        RSquaredExplainer(stump, memory_budget=1 / 64)(wide, wide[:, 0], interactions=True)
    # where not one row fits (144 MB a row of 3,000 players), fewer rows are no advice ("about 0 fit")
    wider = np.random.default_rng(1).normal(size=(50, 3000))
    stump = DecisionTreeRegressor(max_depth=2).fit(wider, wider[:, 0])
    with pytest.raises(MemoryBudgetError, match=r"over the memory budget of 16 MiB\.  Not one row fits: raise"):
        RSquaredExplainer(stump, memory_budget=1 / 64)(wider, wider[:, 0], interactions=True)
    with pytest.raises(ValueError, match="tree_limit"):
        explainer.shap_interaction_values(X, y, tree_limit=2)
    targets = np.column_stack([y, -y])
    several = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(X, targets)
    with pytest.raises(ValueError, match=r"mean R² \(multioutput='uniform_average'\); got multioutput='raw_values'"):
        RSquaredExplainer(several)(X, targets, interactions=True, multioutput="raw_values")


def test_a_multi_output_regressors_interaction_shares_are_of_its_mean_r2():
    # each target's indices over its own SST, averaged as r2_score averages the targets' R²
    X, y, w = make_data(seed=5)
    targets = np.column_stack([y, 3 * X[:, 1] * X[:, 2] + y])
    rows = X
    explainer = RSquaredExplainer(RandomForestRegressor(n_estimators=3, max_depth=4, random_state=0).fit(X, targets))
    expected = np.mean([interaction_oracle(explainer.forests[k], rows, targets[:, k], w)[0] for k in range(2)], 0)
    matrix = explainer.rsq_interactions(rows, targets, sample_weight=w)
    off = ~np.eye(X.shape[1], dtype=bool)
    assert np.abs(expected[off]).max() > 1e-3
    np.testing.assert_allclose(2 * matrix[off], expected[off], rtol=0, atol=1e-9)
    np.testing.assert_allclose(matrix.sum(axis=1), explainer.rsq(rows, targets, sample_weight=w), rtol=0, atol=1e-12)
    explanation = explainer(rows, targets, sample_weight=w, interactions=True)
    assert explanation.output_names == "R²"
    np.testing.assert_allclose(explanation.values.sum(axis=0), matrix, rtol=0, atol=1e-12)
    per_row = explainer(rows, targets, sample_weight=w)
    np.testing.assert_allclose(explanation.values.sum(axis=2), per_row.values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(explanation.base_values, per_row.base_values, rtol=0, atol=1e-12)


def test_a_matrix_whose_dense_arrays_cannot_fit_is_refused_and_top_k_still_works():
    # 2 x 8 x 1,500^2 bytes = 34 MiB of (p, p) arrays over a 16 MiB budget; top_k forms none
    rng = np.random.default_rng(0)
    wide = rng.normal(size=(200, 1500))
    model = DecisionTreeRegressor(max_depth=3, random_state=0).fit(wide, wide[:, 0] * wide[:, 1])
    explainer = RSquaredExplainer(model, memory_budget=1 / 64)
    with pytest.raises(MemoryBudgetError, match=r"matrix of 1,500 players takes about 34 MiB .*pass top_k="):
        explainer.rsq_interactions(wide, wide[:, 0] * wide[:, 1])
    top = explainer.rsq_interactions(wide, wide[:, 0] * wide[:, 1], top_k=3)
    full = RSquaredExplainer(model).rsq_interactions(wide, wide[:, 0] * wide[:, 1])
    for a, b, value in top.itertuples(index=False):
        assert value == pytest.approx(2 * full[a, b], abs=1e-12)


def test_top_pairs_of_wide_data_do_not_copy_the_rows():
    # each tree's distinct rows were copied at full width: two copies of X (20,000 columns) at the
    # peak, where only the tree's split columns are read
    import tracemalloc

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 20_000))
    y = X[:, 0] + X[:, 1] * X[:, 2] + 0.3 * rng.normal(size=400)
    forest = RandomForestRegressor(n_estimators=5, max_depth=6, max_features=0.01, random_state=0)
    explainer = RSquaredExplainer(forest.fit(X[:200], y[:200]))
    explainer.rsq_interactions(X[:10], y[:10], top_k=5)  # plans compiled
    tracemalloc.start()
    pairs = explainer.rsq_interactions(X, y, top_k=20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(pairs) == 20
    assert peak < 0.6 * X.nbytes  # 2.0 x X before; the kernel's own blocks are about 24 MB


def test_per_row_interactions_are_charged_for_the_widest_tree_not_every_feature():
    # six (n, p, p) arrays were charged whatever the trees' players: 2,000 rows of 200 features
    # were refused at 2 GiB (3.6 GiB estimated) and took 0.6 GiB
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 80))
    y = X[:, 0] * X[:, 1] + X[:, 2] + rng.normal(scale=0.3, size=400)
    model = RandomForestRegressor(5, max_depth=3, random_state=0).fit(X, y)
    result = 8 * 400 * 80 * 80
    budget = 2.5 * result  # the result, a copy, and the trees' small tables: under the old 6 results
    values, peak = _per_row_interactions_traced(model, X, y, budget / (1 << 30))
    assert peak < budget
    np.testing.assert_allclose(values.sum(axis=(0, 2)), RSquaredExplainer(model).rsq(X, y), atol=1e-10)


def test_interactions_of_a_deep_tree_stay_within_the_smallest_budget():
    # routing held every row's (splits) floats and (leaves x depth) path booleans at once, and the
    # kernel's row chunks and blocks were fixed in size: 18.2 MiB traced at a 16 MiB budget
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 6))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + rng.normal(scale=0.3, size=1500)
    model = DecisionTreeRegressor(max_depth=9, random_state=0).fit(X, y)
    values, peak = _per_row_interactions_traced(model, X, y, 1 / 64)
    assert peak < (1 << 30) / 64
    np.testing.assert_allclose(values.sum(axis=(0, 2)), RSquaredExplainer(model).rsq(X, y), atol=1e-10)


def _per_row_interactions_traced(model, X, y, budget: float) -> tuple[np.ndarray, int]:
    """Per-row interaction shares under ``budget`` GiB, and the peak of their traced allocations."""
    explainer = RSquaredExplainer(model, memory_budget=budget)
    tracemalloc.start()
    try:
        values = explainer(X, y, interactions=True).values
        return values, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_tree_whose_interaction_plan_cannot_fit_is_refused_before_any_work():
    # one entry per pair of leaves: a fully grown tree on 2,000 rows took 848 MiB to compile its
    # plan whatever the budget, and at 1/64 GiB this depth-10 tree's took 18.8 MiB
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 8))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + rng.normal(scale=0.3, size=2000)
    model = DecisionTreeRegressor(max_depth=10, random_state=0).fit(X, y)
    # on 8 features the tree takes its game on every subset, whose plan is small: the leaf pairs are forced
    explainer = RSquaredExplainer(model, memory_budget=1 / 64)._set_engine(kernel="pairs")
    leaves = model.get_n_leaves()
    entries = leaves * (leaves - 1) // 2 + 2 * leaves
    message = rf"tree 0 has {leaves:,} leaves \({entries:,} entries\), whose plan takes about \d+ MiB to compile"

    # the plan's size depends on the tree alone: a few of its rows are enough to be refused, and
    # the refusal comes before any work (per-row shares of 2,000 rows took 11 CPU s before it)
    def no_work(*args, **kwargs):
        raise AssertionError("shares computed before the refusal")

    explainer._decompose = no_work
    for call in (explainer.rsq_interactions, lambda X, y: explainer(X, y, interactions=True)):
        with pytest.raises(MemoryBudgetError, match=message + r".*max_leaf_nodes"):
            call(X[:100], y[:100])
    del explainer._decompose
    # the estimate bounds what compiling takes
    tree = explainer.forest.trees[0]
    tracemalloc.start()
    try:
        compile_interactions(tree)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    with pytest.raises(MemoryBudgetError):
        check_interaction_plans(explainer.forest.nodes, None, replace(DEFAULT_TUNING, memory_budget=2 * peak))
    check_interaction_plans(explainer.forest.nodes, None, replace(DEFAULT_TUNING, memory_budget=4 * peak))
