"""Exact agreement with the brute-force oracle for every supported model family."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import BOOSTED, FAMILIES, NO_NAN, fit_family, make_data, predict
from oracle import rsq_oracle
from sklearn.metrics import r2_score

from shap_rsq import RSquaredExplainer
from shap_rsq.tuning import DEFAULT_TUNING

CASES = [(family, nan) for family in FAMILIES for nan in (False, True) if not (nan and family in NO_NAN)]


@pytest.mark.parametrize(("family", "nan"), CASES)
def test_global_and_local_values_match_subset_enumeration(fitted, family, nan):
    model, X, y, w = fitted(family, nan)
    explainer = RSquaredExplainer(model)
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)

    shares = explainer.rsq(X, y, sample_weight=w)
    explanation = explainer(X, y, sample_weight=w)

    np.testing.assert_allclose(shares, expected_global, rtol=0, atol=1e-9)
    np.testing.assert_allclose(explanation.values, expected_local, rtol=0, atol=1e-9)
    # the oracle itself must not be trivially zero
    assert np.abs(expected_global).max() > 1e-3


@pytest.mark.parametrize(("family", "nan"), CASES)
def test_efficiency_identity_and_row_totals(fitted, family, nan):
    model, X, y, w = fitted(family, nan)
    explainer = RSquaredExplainer(model)
    explanation = explainer(X, y, sample_weight=w)
    f = predict(model, X).astype(np.float64)
    mean_prediction = explainer.forest.base_offset + sum(
        float(np.dot(t.value, _leaf_mass(t))) for t in explainer.forest.trees
    )
    r2_model = r2_score(y, f, sample_weight=w)
    r2_constant = r2_score(y, np.full_like(y, mean_prediction), sample_weight=w)
    tol = 1e-6 if "xgboost" in family.lower() or "XGB" in family else 1e-9  # XGBoost predicts in float32

    assert explanation.values.sum() == pytest.approx(r2_model - r2_constant, abs=tol)
    assert explanation.values.sum() + explanation.base_values.sum() == pytest.approx(r2_model, abs=tol)
    sst = np.sum(w * (y - np.average(y, weights=w)) ** 2)
    row_share = w * ((y - np.average(y, weights=w)) ** 2 - (y - f) ** 2) / sst
    np.testing.assert_allclose(explanation.values.sum(axis=1) + explanation.base_values, row_share, atol=tol)
    np.testing.assert_allclose(explanation.values.sum(axis=0), explainer.rsq(X, y, sample_weight=w), atol=1e-12)


def _leaf_mass(tree) -> np.ndarray:
    """Cover-weighted probability of each node (mass reaches leaves through cover fractions)."""
    mass = np.zeros(tree.n_nodes)
    mass[0] = 1.0
    for node in range(tree.n_nodes):
        if tree.left[node] >= 0:
            cover = tree.cover[node]
            for child in (tree.left[node], tree.right[node]):
                mass[child] += mass[node] * (tree.cover[child] / cover if cover > 0 else 0.5)
    return np.where(tree.is_leaf, mass, 0.0)


@pytest.mark.parametrize("family", FAMILIES)
def test_feature_never_split_on_gets_exactly_zero(family):
    X, y, _ = make_data(seed=5)
    X[:, 4] = 0.0  # constant: no model can split on it

    model = fit_family(family, X, y)
    explainer = RSquaredExplainer(model)
    assert explainer.rsq(X, y)[4] == 0.0
    assert np.all(explainer(X, y).values[:, 4] == 0.0)


@pytest.mark.parametrize("family", sorted(BOOSTED))
def test_boosted_shares_credit_the_signal_features(fitted, family):
    model, X, y, _weights = fitted(family)
    shares = RSquaredExplainer(model).rsq(X, y)
    assert np.argmax(shares) == 0
    assert shares[5] < 0.1 * shares[0]  # in-sample, noise earns a little R² from overfitting


@pytest.mark.parametrize("strategy", ["lca", "enumerate", "recursion", "junction"])
@pytest.mark.parametrize(
    ("family", "nan"),
    [
        ("GradientBoostingRegressor", False),
        ("XGBRegressor", True),
        ("CatBoost-SymmetricTree", True),
        ("LGBMRegressor", True),
        ("RandomForestRegressor", False),
    ],
)
def test_each_kernel_matches_subset_enumeration(fitted, family, nan, strategy):
    # every tree through the compiled LCA kernel, or every eligible tree through batched enumeration
    model, X, y, w = fitted(family, nan)
    explainer = RSquaredExplainer(model)._set_engine(kernel=strategy)
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected_global, atol=1e-9, rtol=0)
    np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, expected_local, atol=1e-9, rtol=0)


@pytest.mark.parametrize("strategy", ["auto", "recursion"])
@pytest.mark.parametrize(("family", "nan"), [("XGBRegressor", True), ("RandomForestRegressor", False)])
def test_depth_four_trees_on_the_patterns_that_occur_match_subset_enumeration(fitted, family, nan, strategy):
    # depth-4 heaps run the recursion's root on the observed split patterns, not on a 2^15 cube;
    # "recursion" sends every depth-4 tree there, up to 5 repeated features (32 states)
    from shap_rsq.kernels.enumeration.small_trees import HeapUnit

    model, X, y, w = fitted(family, nan)
    explainer = RSquaredExplainer(model)._set_engine(kernel=strategy)
    observed = [u for u in explainer._units.units() if isinstance(u, HeapUnit) and u.batch.depth == 4]
    assert sum(len(u.trees) for u in observed) >= 2
    expected_global, _ = rsq_oracle(explainer.forest, X, y, w)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected_global, atol=1e-9, rtol=0)


@pytest.mark.parametrize("local", [False, True])
@pytest.mark.parametrize("share", [0.0, np.inf])
@pytest.mark.parametrize(("family", "nan"), [("LGBMRegressor", True), ("CatBoost-Lossguide", False)])
def test_leaf_wise_trees_pick_a_kernel_by_work_and_both_are_exact(
    lca_routing, fitted, monkeypatch, family, nan, share, local
):
    # the unit compares the conditioned recursion's work with the LCA estimate on the rows at hand
    # (per-row values against their own share: the recursion's reverse pass runs on every row);
    # whichever it picks, the values are those of subset enumeration
    from shap_rsq.kernels.lca import unit as _lca_unit

    calls = []
    kernel = "row_gradients" if local else "gradient_on_patterns"
    original = getattr(_lca_unit, kernel)
    monkeypatch.setattr(_lca_unit, kernel, lambda *a: calls.append(1) or original(*a))
    model, X, y, w = fitted(family, nan)
    share_field = "junction_local_share" if local else "junction_share"
    explainer = RSquaredExplainer(model)._set_engine(tuning=replace(DEFAULT_TUNING, **{share_field: share}))
    leaf_wise = [u for u in explainer._units.units(local) if getattr(u, "junction", None) is not None]
    assert len(leaf_wise) >= 3
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
    if local:
        values, expected = explainer(X, y, sample_weight=w).values, expected_local
    else:
        values, expected = explainer.rsq(X, y, sample_weight=w), expected_global
    np.testing.assert_allclose(values, expected, atol=1e-9, rtol=0)
    assert len(calls) == (len(leaf_wise) if share else 0)


def test_per_row_values_of_the_conditioned_recursion_do_not_depend_on_its_blocks_of_rows(fitted):
    # the reverse pass runs on blocks of rows as small as the budget asks: one row or all at once,
    # and the LCA kernel, give each row the same gradients
    from shap_rsq.kernels.recursion.conditioned import sub_patterns
    from shap_rsq.kernels.recursion.conditioned_rows import live_states, row_gradients
    from shap_rsq.kernels.row_patterns import split_decisions

    model, X, _y, _w = fitted("LGBMRegressor", True)
    explainer = RSquaredExplainer(model)._set_engine(kernel="junction")
    for unit in explainer._units.units(True)[:4]:
        (rows, dtype, first, *_), _ = unit.prepare(X, explainer.forest.input_dtype)
        plan = unit.junction_plan
        patterns, at = sub_patterns(plan, split_decisions(plan, rows, dtype, rows=first)[:, :-1])
        one_row = row_gradients(plan, patterns, at, 2 * plan.n_q * live_states(plan))
        all_rows = row_gradients(plan, patterns, at, 1 << 40)
        _features, *by_lca = unit._lca_rows(rows, dtype, first)
        for a, b, c in zip(one_row, all_rows, by_lca, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)
            np.testing.assert_allclose(a, c, rtol=0, atol=1e-12)


@pytest.mark.parametrize("family", ["LGBMRegressor", "CatBoost-Lossguide"])
def test_the_conditioned_recursion_gives_the_same_values_on_every_row_as_on_distinct_sub_patterns(fitted, family):
    # a node may keep every row instead of its distinct sub-patterns (Tuning.junction_whole_rows):
    # at no node, at the nodes most rows tell apart, or at every node, global and per-row values
    # agree to rounding with each other and with the LCA kernel
    from shap_rsq.kernels.lca import global_values
    from shap_rsq.kernels.recursion.conditioned import sub_patterns
    from shap_rsq.kernels.recursion.conditioned_passes import gradient_on_patterns
    from shap_rsq.kernels.recursion.conditioned_rows import row_gradients
    from shap_rsq.kernels.row_patterns import split_decisions

    model, X, _y, _w = fitted(family, family == "LGBMRegressor")
    explainer = RSquaredExplainer(model)._set_engine(kernel="junction")
    rng = np.random.default_rng(0)
    checked = 0
    for unit in explainer._units.units(True):
        (rows, dtype, first, *_), _ = unit.prepare(X, explainer.forest.input_dtype)
        plan = unit.junction_plan
        if plan is None:
            continue
        left = split_decisions(plan, rows, dtype, rows=first)[:, :-1]
        w_quad, w_lin = rng.normal(size=(2, len(first)))
        by_lca = np.zeros(plan.features.max() + 1)
        for lca_plan, block, codes in unit._coded_blocks(rows, dtype, first, local=False):
            by_lca[lca_plan.features] += global_values.weighted_gradient(
                lca_plan, codes, w_quad[block], w_lin[block], unit.tuning
            )
        _features, *rows_by_lca = unit._lca_rows(rows, dtype, first)
        for whole in (2.0, 0.75, 0.0):
            patterns, at = sub_patterns(plan, left, whole=whole)
            kept = [p.count == len(first) for p in patterns]
            assert all(kept) if whole == 0.0 else kept[-1]  # the root tells every row apart
            grad = gradient_on_patterns(plan, patterns, at[-1], w_quad, w_lin)
            np.testing.assert_allclose(grad, by_lca[plan.features], rtol=0, atol=1e-11)
            for a, b in zip(row_gradients(plan, patterns, at, 1 << 40), rows_by_lca, strict=True):
                np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
        checked += 1
    assert checked >= 3


def test_consecutive_small_trees_share_one_batch(fitted):
    # batching is the point of these units: one per tree would run thousands of NumPy calls
    catboost = pytest.importorskip("catboost")

    from shap_rsq.kernels.enumeration.small_trees import HeapUnit, ObliviousUnit

    X, y, _ = make_data(seed=2)
    symmetric = catboost.CatBoostRegressor(iterations=30, depth=6, verbose=0, allow_writing_files=False)
    for model, kind in [(symmetric.fit(X, y), ObliviousUnit), (fitted("GradientBoostingRegressor")[0], HeapUnit)]:
        explainer = RSquaredExplainer(model)
        units = explainer._units.units()
        assert [type(u) for u in units] == [kind]
        assert len(units[0].trees) == explainer.forest.n_trees


@pytest.mark.parametrize("strategy", ["enumerate", "recursion"])
@pytest.mark.parametrize("family", ["GradientBoostingRegressor", "CatBoost-SymmetricTree"])
def test_rows_split_into_chunks_give_the_same_values(fitted, family, strategy):
    # batched units sum row weights per pattern over chunks and evaluate the games once at the end
    model, X, y, w = fitted(family, family not in NO_NAN)
    tuning = replace(DEFAULT_TUNING, chunk_elements=1, min_chunk_rows=32)
    explainer = RSquaredExplainer(model)._set_engine(kernel=strategy, tuning=tuning)
    assert all(unit.chunk_rows() == 32 for unit in explainer._units.units())  # 120 rows in 4 chunks
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected_global, atol=1e-9, rtol=0)
    np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, expected_local, atol=1e-9, rtol=0)


@pytest.mark.parametrize("family", [f for f in FAMILIES if f not in NO_NAN])
def test_models_trained_without_nan_route_it_as_their_predict_does(fitted, family):
    # the common case: fitted on complete rows, explained on rows with holes
    model, X, y, w = fitted(family)
    holes = X.copy()
    holes[np.random.default_rng(1).random(X.shape) < 0.15] = np.nan
    explainer = RSquaredExplainer(model)
    tol = 1e-5 if "xgboost" in family.lower() or "XGB" in family else 1e-9  # XGBoost predicts in float32
    np.testing.assert_allclose(explainer.forest.predict(holes), predict(model, holes), atol=tol, rtol=0)
    # all trees routed at once (the starting predictions of parallel blocks) reach the same leaves
    forest = explainer.forest
    together = forest.nodes.leaf_values(holes, np.arange(forest.n_trees), forest.input_dtype)
    one_by_one = np.stack([tree.value[tree.leaf_of(holes, forest.input_dtype)] for tree in forest.trees], axis=1)
    np.testing.assert_array_equal(together, one_by_one)
    fortran = forest.nodes.leaf_values(np.asfortranarray(holes), np.arange(forest.n_trees), forest.input_dtype)
    np.testing.assert_array_equal(fortran, one_by_one)  # columns gathered, not a flat index
    expected_global, _ = rsq_oracle(explainer.forest, holes, y, w)
    np.testing.assert_allclose(explainer.rsq(holes, y, sample_weight=w), expected_global, atol=1e-9, rtol=0)


@pytest.mark.parametrize("ratio", [0.0, np.inf])
@pytest.mark.parametrize(
    ("family", "nan"), [("DecisionTreeRegressor", True), ("LGBMRegressor", True), ("XGBRegressor", True)]
)
def test_dense_and_cell_by_cell_tables_give_the_same_values(lca_routing, fitted, monkeypatch, family, nan, ratio):
    # a view's items are tabulated on every combination of its bits when most combinations occur,
    # cell by cell otherwise; forcing either way everywhere must not change a value, global or per row
    from shap_rsq.kernels.batching import cells as lca_cells

    dense = []
    original = lca_cells.Cells.__init__

    def spy(self, plan, *args):
        original(self, plan, *args)
        dense.extend(self.dense[self.width > 0].tolist())

    monkeypatch.setattr(lca_cells.Cells, "__init__", spy)
    # leaf-wise trees through the LCA kernel too; every chunk by classes of one width and kind
    tuning = replace(DEFAULT_TUNING, dense_ratio=ratio, junction_share=0.0, mixed_cells=0)
    model, X, y, w = fitted(family, nan)
    explainer = RSquaredExplainer(model)._set_engine(tuning=tuning)
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected_global, atol=1e-9, rtol=0)
    np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, expected_local, atol=1e-9, rtol=0)
    assert dense and set(dense) == {ratio > 0}


@pytest.mark.parametrize("level_work", [0.0, np.inf])
@pytest.mark.parametrize("family", ["DecisionTreeRegressor", "LGBMRegressor", "XGBRegressor"])
def test_fewer_quadrature_nodes_below_the_root_stay_exact(fitted, family, level_work):
    # a split's pairs need ceil(|U| / 2) Gauss-Legendre nodes (TreePlan.group_q), fewer than the
    # root's; a chunk of groups takes its first group's, the most: a chunk per level (0) or
    # chunks across levels (inf) must both match subset enumeration
    from shap_rsq.kernels.lca.plan import compile_tree

    tuning = replace(DEFAULT_TUNING, level_work=level_work, junction_share=0.0, chunk_cells=64)
    model, X, y, w = fitted(family, True)
    explainer = RSquaredExplainer(model)._set_engine(kernel="lca", tuning=tuning)
    plans = [compile_tree(tree) for tree in explainer.forest.trees if tree.left[0] >= 0]
    assert all(np.all(np.diff(plan.group_q) <= 0) and plan.group_q.max(initial=0) <= plan.n_q for plan in plans)
    assert any(plan.group_q.min(initial=plan.n_q) < plan.n_q for plan in plans)
    assert all(plan.single_q <= plan.n_q for plan in plans)
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected_global, atol=1e-9, rtol=0)
    np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, expected_local, atol=1e-9, rtol=0)


def test_splits_whose_sides_share_features_take_fewer_nodes_and_stay_exact():
    # a deep tree on four features reuses each on both sides of its upper splits: counting the
    # widest pair's features lowers their rules (Tuning.union_pairs), and the shares stay the
    # oracle's, as they are with the bound of the widest leaves (union_pairs=0)
    from sklearn.tree import DecisionTreeRegressor

    from shap_rsq.kernels.lca.plan import compile_tree

    X, y, w = make_data(seed=3, nan=False)
    X = X[:, :4]
    model = DecisionTreeRegressor(max_depth=9, random_state=0).fit(X, y)
    tree = RSquaredExplainer(model).forest.trees[0]
    counted = compile_tree(tree)
    bounded = compile_tree(tree, tuning=replace(DEFAULT_TUNING, union_pairs=0))
    assert counted.group_q.sum() < bounded.group_q.sum() and counted.n_q < bounded.n_q
    expected_global, expected_local = None, None
    for union_pairs in (0, DEFAULT_TUNING.union_pairs):
        tuning = replace(DEFAULT_TUNING, union_pairs=union_pairs, junction_share=0.0)
        explainer = RSquaredExplainer(model)._set_engine(kernel="lca", tuning=tuning)
        if expected_global is None:
            expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
        np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected_global, atol=1e-9, rtol=0)
        np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, expected_local, atol=1e-9, rtol=0)


def test_a_node_short_of_the_bound_is_not_exact(fitted, monkeypatch):
    # the bound is not slack: one Gauss-Legendre node fewer for the single items misses the oracle
    # (on their own chunk: joined to the cross items' first chunk they take its nodes, more)
    from shap_rsq.kernels.lca import plan as lca_plan

    original = lca_plan.node_quadrature
    monkeypatch.setattr(lca_plan, "node_quadrature", lambda *a: (lambda s, n: (max(1, s - 1), n))(*original(*a)))
    model, X, y, w = fitted("DecisionTreeRegressor", True)
    tuning = replace(DEFAULT_TUNING, join_single_work=-1)
    explainer = RSquaredExplainer(model)._set_engine(kernel="lca", tuning=tuning)
    expected_global, _ = rsq_oracle(explainer.forest, X, y, w)
    assert np.abs(explainer.rsq(X, y, sample_weight=w) - expected_global).max() > 1e-6


@pytest.mark.parametrize("family", ["DecisionTreeRegressor", "XGBRegressor", "CatBoost-Lossguide"])
def test_single_items_on_their_own_chunk_or_the_first_cross_chunk_agree(fitted, family):
    # small trees evaluate their single items on the first cross chunk's nodes (Tuning.join_single_work);
    # more nodes than the bound are exact too, so both ways give the oracle's shares
    from shap_rsq.kernels.batching.cells import Cells
    from shap_rsq.kernels.lca.global_values import _joins_singles, leaf_codes
    from shap_rsq.kernels.lca.plan import compile_tree
    from shap_rsq.kernels.row_patterns import split_decisions

    model, X, y, w = fitted(family, True)
    values = {}
    for work in (-1, 1 << 30):  # never joined, always joined
        tuning = replace(DEFAULT_TUNING, join_single_work=work, junction_share=0.0)
        explainer = RSquaredExplainer(model)._set_engine(kernel="lca", tuning=tuning)
        values[work] = explainer.rsq(X, y, sample_weight=w)
    plans = [compile_tree(tree) for tree in explainer.forest.trees if tree.left[0] >= 0]
    codes = [leaf_codes(plan, split_decisions(plan, X)) for plan in plans]
    assert any(_joins_singles(plan, Cells(plan, c, tuning), tuning) for plan, c in zip(plans, codes, strict=True))
    expected_global, _ = rsq_oracle(explainer.forest, X, y, w)
    np.testing.assert_allclose(values[-1], expected_global, atol=1e-9, rtol=0)
    np.testing.assert_allclose(values[1 << 30], expected_global, atol=1e-9, rtol=0)
    np.testing.assert_allclose(values[1 << 30], values[-1], atol=1e-13, rtol=0)


def test_zero_cover_fractions_need_no_division_by_zero(fitted):
    # slopes come from V x b / phi (kernels.batching.blocks): a factor that is zero (an empty child,
    # as CatBoost leaves them) is zero for every q with b = 0, so b / phi is never evaluated there;
    # NumPy is told to raise on any division by zero or invalid value along the way
    model, X, y, w = fitted("CatBoost-SymmetricTree", True)
    explainer = RSquaredExplainer(model)._set_engine(kernel="lca")
    assert any(np.any(tree.cover <= 0) for tree in explainer.forest.trees)  # empty children are there
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
    with np.errstate(divide="raise", invalid="raise"):
        shares = explainer.rsq(X, y, sample_weight=w)
        values = explainer(X, y, sample_weight=w).values
    np.testing.assert_allclose(shares, expected_global, atol=1e-9, rtol=0)
    np.testing.assert_allclose(values, expected_local, atol=1e-9, rtol=0)


@pytest.mark.parametrize("local", [False, True])
def test_the_lca_kernel_reads_each_patterns_decisions_from_its_routing_key(fitted, lca_routing, local):
    # the leaf codes gathered each pattern's first row from X again; they now unpack its decisions
    # from the key routing made, so X is not read after routing (garbage there changes nothing)
    from shap_rsq.kernels.lca.unit import LcaUnit

    model, X, _y, _w = fitted("XGBRegressor", True)
    explainer = RSquaredExplainer(model)._set_engine(kernel="lca")
    checked = 0
    for unit in explainer._units.units(local):
        if not isinstance(unit, LcaUnit) or unit.junction is not None:
            continue
        state, _ = unit.prepare(X, explainer.forest.input_dtype)
        garbage = (np.full_like(X, np.nan), *state[1:])
        rng = np.random.default_rng(0)
        w_quad, w_lin = rng.normal(size=(2, len(X), 1))
        read, unread = (np.zeros((len(X), X.shape[1])) if local else np.zeros(X.shape[1]) for _ in range(2))
        unit.contribute(state, w_quad, w_lin, read, local)
        unit.contribute(garbage, w_quad, w_lin, unread, local)
        np.testing.assert_array_equal(read, unread)
        checked += 1
    assert checked >= 3
