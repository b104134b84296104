"""Deep trees: the per-pair kernel and the hybrid LCA units against subset enumeration, and their
worker processes (blocks, budget per worker, caller's arrays).  The memory budget of every call is
in ``test_budget.py``."""

from __future__ import annotations

import tracemalloc
from dataclasses import replace

import numpy as np
import pytest
from conftest import FAMILIES, NO_NAN, deep_data, walked_bytes
from oracle import rsq_oracle
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeRegressor

from shap_rsq import RSquaredExplainer
from shap_rsq.engine import run
from shap_rsq.engine.budget import fit_jobs, unit_bytes
from shap_rsq.engine.routing import choose_pair_nodes
from shap_rsq.engine.run import decompose
from shap_rsq.engine.worker_plans import plan_bytes, shipped
from shap_rsq.kernels.lca import pairs
from shap_rsq.kernels.lca.hybrid import HybridUnit, plan_pieces
from shap_rsq.kernels.lca.pairs import node_costs
from shap_rsq.kernels.lca.unit import LcaUnit
from shap_rsq.tuning import DEFAULT_TUNING

# every tree takes the cost model, and half of the nodes' items are over the cap
MIXED = replace(DEFAULT_TUNING, pair_min_work=0.0, max_lca_items=400)
# no node is cheaper as pairs, and a plan holds a few nodes' items: trees are compiled in pieces
PIECES = replace(DEFAULT_TUNING, pair_min_work=0.0, pair_cost=1e12, max_lca_items=1500)


def _deep_models():
    X, y, w = deep_data()
    yield "tree", DecisionTreeRegressor(random_state=0).fit(X, y), X, y, w
    yield "forest", RandomForestRegressor(4, random_state=0).fit(X, y), X, y, w
    lightgbm = pytest.importorskip("lightgbm")
    X8, y8, w8 = deep_data(p=8, n=70, seed=1)
    booster = lightgbm.LGBMRegressor(n_estimators=3, num_leaves=40, min_child_samples=1, verbose=-1, random_state=0)
    yield "lightgbm", booster.fit(X8, y8), X8, y8, w8


DEEP = list(_deep_models())


@pytest.fixture(scope="module")
def oracles():
    cache = {}
    for name, model, X, y, w in DEEP:
        cache[name] = rsq_oracle(RSquaredExplainer(model).forest, X, y, w)
    return cache


@pytest.mark.parametrize("kernel", ["pairs", "lca", "auto", "mixed", "pieces"])
@pytest.mark.parametrize("case", range(len(DEEP)))
def test_deep_trees_match_subset_enumeration(oracles, case, kernel):
    name, model, X, y, w = DEEP[case]
    explainer = RSquaredExplainer(model)
    if kernel in ("mixed", "pieces"):
        explainer._set_engine(tuning=MIXED if kernel == "mixed" else PIECES)
    else:
        explainer._set_engine(kernel=kernel)
    expected_global, expected_local = oracles[name]
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected_global, rtol=0, atol=1e-9)
    np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, expected_local, rtol=0, atol=1e-9)
    assert np.abs(expected_global).max() > 1e-2


@pytest.mark.parametrize(
    ("n", "p", "tuning"),
    [
        (200, 6, DEFAULT_TUNING),
        (500, 8, DEFAULT_TUNING),
        (300, 8, replace(DEFAULT_TUNING, chunk_cells=256, tabulate_cells=1024, level_work=1e30)),
    ],
)
def test_a_splits_groups_in_two_chunks_take_one_quadrature_rule(n, p, tuning):
    # only a split's groups summed have its pairs' degree: a chunk cut inside them (by table size)
    # was integrated on fewer nodes than the chunk before, 2e-10 to 1e-8 of R² off on a fully grown tree
    X, y, w = deep_data(n=n, p=p, seed=0 if p == 6 else 5)
    model = DecisionTreeRegressor(random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)._set_engine(kernel="lca", tuning=tuning)
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected_global, rtol=0, atol=1e-13)
    np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, expected_local, rtol=0, atol=1e-13)


def test_mixed_tuning_splits_trees_between_the_kernels(lca_routing):
    _, model, *_ = DEEP[0]
    explainer = RSquaredExplainer(model)._set_engine(tuning=MIXED)
    (unit,) = explainer._units.units()
    assert isinstance(unit, HybridUnit)
    internal = unit.tree.left >= 0
    assert 0 < unit.pair_nodes.sum() < internal.sum()
    # every internal node is either with the pairs or in exactly one piece, each within the cap
    np.testing.assert_array_equal(unit.pieces >= 0, internal & ~unit.pair_nodes)
    costs = node_costs(unit.tree)
    per_piece = np.bincount(unit.pieces[unit.pieces >= 0], weights=costs.items[unit.pieces >= 0])
    assert len(per_piece) > 1 and per_piece.max() <= MIXED.plan_item_cap
    assert np.all(costs.items[unit.pair_nodes & ~cheaper_as_pairs(costs, MIXED)] > MIXED.plan_item_cap)


def test_per_row_values_route_more_nodes_to_the_pairs_and_match_the_oracle(lca_routing, oracles):
    # an LCA item costs more per row for per-row values, a pair about the same: the same tree is
    # routed apart for the two (and compiled once when routed alike)
    name, model, X, y, w = DEEP[1]  # the fully grown forest
    tuning = replace(DEFAULT_TUNING, pair_min_work=0.0)
    explainer = RSquaredExplainer(model)._set_engine(tuning=tuning)
    global_units, local_units = explainer._units.units(False), explainer._units.units(True)
    pair_nodes = [
        [getattr(u, "pair_nodes", np.zeros(1, bool)).sum() for u in units] for units in (global_units, local_units)
    ]
    assert sum(pair_nodes[1]) > sum(pair_nodes[0])
    for g, loc, n_global, n_local in zip(global_units, local_units, *pair_nodes, strict=True):
        assert (g is loc) == (n_global == n_local)
    expected_global, expected_local = oracles[name]
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected_global, rtol=0, atol=1e-9)
    np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, expected_local, rtol=0, atol=1e-9)
    alike = replace(tuning, local_pair_discount=1.0)
    explainer._set_engine(tuning=alike)
    assert all(g is loc for g, loc in zip(explainer._units.units(False), explainer._units.units(True), strict=True))


def cheaper_as_pairs(costs, tuning) -> np.ndarray:
    pair_work = tuning.pair_cost * costs.pairs * np.ceil(costs.width / 2)
    return (costs.pairs >= tuning.pair_min_pairs) & (pair_work < costs.items * costs.n_q)


def test_pieces_hold_every_cross_item_of_the_tree_once(lca_routing):
    _, model, *_ = DEEP[0]
    (whole,) = RSquaredExplainer(model)._set_engine(kernel="lca")._units.units()
    (unit,) = RSquaredExplainer(model)._set_engine(tuning=PIECES)._units.units()
    assert isinstance(unit, HybridUnit) and not unit.pair_nodes.any() and not unit.dense
    plans = list(unit.lca_plans())
    assert len(plans) == unit.pieces.max() + 1 > 2
    n_single = whole.plan.n_single
    assert sum(len(plan.item_leaf) - n_single for plan in plans) == len(whole.plan.item_leaf) - n_single
    # the linear and diagonal items count in the first piece only
    assert np.all(plans[0].item_coef[:n_single] == whole.plan.item_coef[:n_single])
    assert all(np.all(plan.item_coef[:n_single] == 0.0) for plan in plans[1:])


def test_cost_model_keeps_each_plan_within_the_budget():
    X, y, _ = deep_data(n=400, p=20)
    tree = RSquaredExplainer(DecisionTreeRegressor(random_state=0).fit(X, y)).forest.trees[0]
    costs = node_costs(tree)
    for budget in (DEFAULT_TUNING.memory_budget, 1 << 27, 1 << 24):
        tuning = replace(DEFAULT_TUNING, memory_budget=budget)
        chosen = choose_pair_nodes(costs, tuning)
        pieces = plan_pieces(costs.items, chosen, tuning.plan_item_cap)
        kept = pieces >= 0
        assert np.all(np.bincount(pieces[kept], weights=costs.items[kept]) <= tuning.plan_item_cap)
        # pairs only where they are cheaper, or where no plan could hold the node's items
        np.testing.assert_array_equal(chosen, cheaper_as_pairs(costs, tuning) | (costs.items > tuning.plan_item_cap))
    assert costs.items[~chosen].sum() > tuning.plan_item_cap and pieces.max() > 0  # at 16 MiB: several plans


CASES = [(family, nan) for family in FAMILIES for nan in (False, True) if family not in NO_NAN or not nan]


@pytest.mark.parametrize(("family", "nan"), CASES)
def test_pair_kernel_on_every_family(fitted, family, nan):
    # zero covers (CatBoost), NaN defaults and every library's node layout
    model, X, y, w = fitted(family, nan)
    explainer = RSquaredExplainer(model)._set_engine(kernel="pairs")
    expected_global, expected_local = rsq_oracle(explainer.forest, X, y, w)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected_global, rtol=0, atol=1e-9)
    np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, expected_local, rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_pair_slopes_from_logarithms_equal_the_products_all_but_one(seed):
    # random blocks: covers of 1 (a feature off a path), tiny covers (1e-300, shap's fix of zero
    # covers) and any bits; the logarithms' matrix products against prefix and suffix products
    rng = np.random.default_rng(seed)
    n, n_a, n_b, k = 7, 4, 5, 9
    covers = [np.where(rng.random((m, k)) < 0.3, 1.0, rng.random((m, k)) ** 4) for m in (n_a, n_b)]
    covers[0][0, 0] = 1e-300
    sides = [
        (rng.random((m, n, k)) < 0.6, cover, rng.normal(size=m)) for m, cover in zip((n_a, n_b), covers, strict=True)
    ]
    args = (*sides, slice(0, n), slice(0, n_a), slice(0, n_b), 5)
    for weight in (None, rng.normal(size=n)):
        direct = pairs._direct_slopes(*args, weight)
        # to rounding of the largest slope: a slope a million times smaller is a difference of terms
        scale = np.abs(direct).max()
        np.testing.assert_allclose(pairs._block_slopes(*args, weight), direct, rtol=1e-12, atol=1e-12 * scale)


def test_pair_cost_falls_with_the_rows_below_pair_rows_and_never_rises():
    tuning = DEFAULT_TUNING
    costs = [tuning.pair_cost_at(n) for n in (1, 100, 500, 1000, 1999, 2000, 10**6)]
    assert costs == sorted(costs)
    assert costs[0] == tuning.pair_cost_floor and costs[-2:] == [tuning.pair_cost] * 2
    assert tuning.pair_cost_at(None) == tuning.pair_cost
    assert tuning.pair_cost_at(1000) == pytest.approx(tuning.pair_cost * 1000 / tuning.pair_rows)


def test_fewer_rows_give_the_pairs_more_nodes_and_the_same_shares():
    X, y, w = deep_data(n=300, p=12)
    model = RandomForestRegressor(3, random_state=0).fit(X, y)

    def pair_nodes(units):
        return sum(int(unit.pair_nodes.sum()) for unit in units if isinstance(unit, HybridUnit))

    cache = RSquaredExplainer(model)._units
    few = pair_nodes(cache.units(False, 100))
    many_units = cache.units(False, 5000)
    assert few > pair_nodes(many_units) > 0
    # one routing of each kind is kept: the units of the 100-row routing are gone with their plans
    assert all(any(unit is kept for kept in many_units) for unit in cache._lca_units.values())
    assert cache.units(False, 4000) is many_units  # the same pair cost: routed once
    assert cache.units(True, 100) is cache.units(True, 5000)  # per-row values keep their discount
    # the routing moves work between exact kernels only
    fixed = RSquaredExplainer(model)._set_engine(tuning=replace(DEFAULT_TUNING, pair_rows=1))
    explainer = RSquaredExplainer(model)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), fixed.rsq(X, y, sample_weight=w), atol=1e-13)
    np.testing.assert_allclose(
        explainer(X, y, sample_weight=w).values, fixed(X, y, sample_weight=w).values, rtol=0, atol=1e-13
    )


def test_per_row_pair_slopes_keep_the_digits_of_a_feature_that_barely_splits():
    # feature 0 splits off 1e-8 of the cover and every row passes it: its per-row slopes are about
    # 1e-8 of the others, and must not come out as a difference of the other slopes' size
    rng = np.random.default_rng(0)
    n, n_a, n_b, k = 6, 3, 4, 5
    covers = [rng.uniform(0.2, 0.9, (m, k)) for m in (n_a, n_b)]
    for cover in covers:
        cover[:, 0] = 1.0 - 1e-8
    sides = []
    for m, cover in zip((n_a, n_b), covers, strict=True):
        bits = rng.random((m, n, k)) < 0.5
        bits[:, :, 0] = True
        sides.append((bits, cover, rng.normal(size=m)))
    args = (*sides, slice(0, n), slice(0, n_a), slice(0, n_b), 4)
    direct = pairs._direct_slopes(*args, None)
    assert np.abs(direct[0]).max() < 1e-6 * np.abs(direct[1:]).max()
    np.testing.assert_allclose(pairs._block_slopes(*args, None), direct, rtol=1e-10, atol=0)


def test_efficiency_identity_on_a_fully_grown_forest():
    X, y, _ = deep_data(n=300, p=12)
    model = RandomForestRegressor(5, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    kinds = {type(u).__name__ for u in explainer._units.units()}
    assert "HybridUnit" in kinds
    shares = explainer.rsq(X, y)
    mean = explainer.forest.base_offset + explainer.forest.nodes.tree_mean.sum()
    expected = r2_score(y, model.predict(X)) - r2_score(y, np.full_like(y, mean))
    assert shares.sum() == pytest.approx(expected, abs=1e-9)


def test_results_do_not_depend_on_jobs_blocks_or_budget():
    X, y, w = deep_data(n=150, p=8)
    model = RandomForestRegressor(4, random_state=0).fit(X, y)
    reference = RSquaredExplainer(model)
    expected = reference.rsq(X, y, sample_weight=w)
    expected_local = reference(X, y, sample_weight=w).values
    settings = [
        {"tuning": replace(MIXED, block_elements=1 << 10, side_block_elements=1 << 10, chunk_elements=1 << 12)},
        {"tuning": replace(MIXED, memory_budget=1 << 24)},
        {"kernel": "pairs", "tuning": replace(DEFAULT_TUNING, parallel_work=0.0)},
        {"tuning": replace(PIECES, parallel_work=0.0, max_lca_items=800)},
    ]
    for jobs, setting in zip([1, 1, 2, 2], settings, strict=True):
        explainer = RSquaredExplainer(model, n_jobs=jobs)._set_engine(**setting)
        np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(explainer(X, y, sample_weight=w).values, expected_local, rtol=0, atol=1e-12)


def test_long_calls_go_to_the_workers_one_tree_a_block_costliest_first(monkeypatch):
    # four blocks of contiguous trees gave one of two workers 57% of the estimated work of a
    # depth-12 XGBoost model; blocks of one tree, dispatched costliest first, balance it
    X, y, w = deep_data(n=300, p=8)
    model = RandomForestRegressor(6, max_depth=8, random_state=0).fit(X, y)
    expected = RSquaredExplainer(model).rsq(X, y, sample_weight=w)
    fine = replace(DEFAULT_TUNING, parallel_work=0.0, block_seconds=1e-12)
    explainer = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=fine)
    units = explainer._units.units()
    assert len(run._unit_blocks(units, 2, False, len(y), fine)) == len(units)
    assert len(run._unit_blocks(units, 2, True, len(y), fine)) == 2 * DEFAULT_TUNING.blocks_per_job
    estimated = [run._unit_weight(unit, len(y), False, fine) for unit in units]  # no plan yet: estimates
    dispatched = []
    real = run._run_parallel

    def record(tasks, blocks, *args):
        dispatched.extend(int(block[0]) for block in blocks)
        return real(tasks, blocks, *args)

    monkeypatch.setattr(run, "_run_parallel", record)
    np.testing.assert_allclose(explainer.rsq(X, y, sample_weight=w), expected, rtol=0, atol=1e-12)
    work = [estimated[u] for u in dispatched]
    assert sorted(dispatched) == list(range(len(units))) and work == sorted(work, reverse=True)


def test_workers_fit_the_budget_with_smaller_blocks_of_patterns(lca_routing):
    # at 4 MiB the per-row arrays of 2,000 rows take a quarter of the budget, and each worker's
    # blocks of patterns another quarter: two workers fit only with each one's blocks cut to an
    # eighth; before, such a call always ran in one process
    X, y, _ = deep_data(n=2000, p=8)
    model = RandomForestRegressor(2, max_depth=5, random_state=0).fit(X[:300], y[:300])
    small = replace(DEFAULT_TUNING, memory_budget=1 << 22, parallel_work=0.0)
    explainer = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=small)
    units = explainer._units.units(True)
    assert fit_jobs(units, len(y), 8, 2, True, 2, small) == (2, 2)
    assert fit_jobs(units, len(y), 8, 2, True, 2, replace(small, memory_budget=1 << 30)) == (2, 1)
    unit = next(u for u in units if isinstance(u, LcaUnit))
    assert shipped([unit], 2)[0].pattern_step(True) < unit.pattern_step(True)
    one = RSquaredExplainer(model)._set_engine(tuning=replace(small, parallel_work=1e300))
    np.testing.assert_allclose(explainer(X, y).values, one(X, y).values, rtol=0, atol=1e-12)


def test_a_junction_plan_counts_every_array_it_holds(lca_routing):
    # plan_bytes walked the plan's hundreds of node records field by field, 5 ms a tree; the plan
    # now sums its arrays itself, and must find the same ones
    X, y, _ = deep_data(n=300, p=8)
    (unit,) = RSquaredExplainer(DecisionTreeRegressor(random_state=0).fit(X, y))._units.units()
    plan = unit.junction_plan

    assert len(plan.nodes) > 100
    assert plan_bytes(plan) == walked_bytes(plan) > plan.node_states.nbytes + plan.node_leaves.nbytes


def test_a_worker_is_charged_once_for_a_plan_and_its_blocks(lca_routing):
    # compiling a plan and running its blocks of patterns do not overlap: a tree compiled in
    # pieces, each a quarter of the budget to compile, with blocks of a quarter, is charged
    # less than half of it, so two workers (each keeping 4 MiB of plans here) fit with whole
    # blocks.  Charged for both, a depth-12 XGBoost model on 10,000 rows ran with halved blocks
    X, y, _ = deep_data(n=1000, p=8)
    model = DecisionTreeRegressor(min_samples_leaf=2, random_state=0).fit(X, y)
    small = replace(DEFAULT_TUNING, memory_budget=1 << 28, parallel_work=0.0, worker_plan_bytes=1 << 22)
    (unit,) = units = RSquaredExplainer(model, n_jobs=2)._set_engine(tuning=small)._units.units()
    assert unit.work / 4 > small.plan_item_cap  # compiled in pieces
    charged = unit_bytes(unit, len(y), False, small)
    assert fit_jobs(units, len(y), 8, 1, False, 2, small) == (2, 1)
    reference = RSquaredExplainer(model)
    w = np.ones(len(y))
    tracemalloc.start()
    try:  # one worker's unit, alone in this process
        values = decompose(reference.forest, units, X, y, w, tuning=small).values
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < charged < small.memory_budget // 2
    expected = decompose(reference.forest, reference._units.units(), X, y, w).values
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12 * np.abs(expected).max())


def test_caller_arrays_are_not_modified():
    X, y, w = deep_data(n=120, p=8)
    model = DecisionTreeRegressor(random_state=0).fit(X, y)
    copies = X.copy(), y.copy(), w.copy()
    RSquaredExplainer(model)._set_engine(tuning=MIXED)(X, y, sample_weight=w)
    for before, after in zip(copies, (X, y, w), strict=True):
        np.testing.assert_array_equal(before, after)
