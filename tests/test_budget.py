"""The memory budget: traced peaks of deep and shallow trees within it, blocks of patterns sized to
it, and refusals that give the estimate and what to change."""

from __future__ import annotations

import tracemalloc
from dataclasses import replace

import numpy as np
import pytest
from conftest import deep_data, make_data
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import r2_score
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from shap_rsq import MemoryBudgetError, RSquaredExplainer, estimate_rsq
from shap_rsq.engine.budget import row_bytes, unit_bytes
from shap_rsq.engine.run import decompose
from shap_rsq.kernels.lca.plan import compile_tree
from shap_rsq.kernels.lca.unit import LcaUnit
from shap_rsq.kernels.row_patterns import distinct_rows, split_decisions
from shap_rsq.tuning import DEFAULT_TUNING


@pytest.mark.parametrize(
    ("n", "p", "budget"),
    [
        (400, 20, 1 / 16),  # GiB: the LCA kernel alone peaked at over 1 GiB on this tree
        # the smallest budget: fixed-size tables (36 MB to find distinct codes, 4 MB temporaries,
        # a pattern's leaf codes left out of its blocks) took a tree on 1,000 rows to 27.7 MiB.
        # This one (303 leaves) has pair nodes, is compiled in 6 pieces and runs in blocks of
        # about 250 patterns, in a third of the time
        (700, 8, 1 / 64),
    ],
)
def test_a_deep_tree_stays_within_a_small_budget(lca_routing, n, p, budget):
    X, y, _ = deep_data(n=n, p=p)
    model = DecisionTreeRegressor(min_samples_leaf=2, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model, memory_budget=budget)
    shares, peak = _traced(explainer, X, y)
    assert peak < budget * (1 << 30)
    np.testing.assert_allclose(shares.sum(), r2_score(y, model.predict(X)) - _constant_r2(explainer, y), atol=1e-9)
    if budget < 1 / 16:
        (unit,) = explainer._units.units()
        assert unit.dense and unit.pattern_step(False) < n / 2
        np.testing.assert_allclose(shares, RSquaredExplainer(model).rsq(X, y), rtol=0, atol=1e-12)


@pytest.mark.parametrize("local", [False, True], ids=["global", "per row"])
def test_blocks_of_patterns_of_a_tree_whose_rows_share_cells_stay_within_the_smallest_budget(lca_routing, local):
    # an LCA call is charged 0.5 bytes per (pattern, item) beside 48 per (pattern, leaf)
    # (Tuning.lca_global_bytes and lca_local_bytes, 4 before): its items' entries are held a
    # block of rows at a time, so larger blocks of patterns fit.  The smallest budget still cuts
    # these rows into blocks
    X, y, _ = deep_data(n=3000, p=8)
    model = DecisionTreeRegressor(max_depth=8, random_state=0).fit(X, y)
    budget = 1 / 64
    explainer = RSquaredExplainer(model, memory_budget=budget)
    (unit,) = explainer._units.units(local)
    assert type(unit) is LcaUnit and unit.pattern_step(local) < len(y) / 4
    assert RSquaredExplainer(model)._units.units(local)[0].pattern_step(local) >= len(y)  # one block at 2 GiB
    shares, peak = _traced(explainer, X, y, local)
    assert peak < budget * (1 << 30)
    expected = _traced(RSquaredExplainer(model), X, y, local)[0]
    np.testing.assert_allclose(shares, expected, rtol=0, atol=1e-12)  # the blocks change no value


@pytest.mark.parametrize("call", ["grouped per-row shares", "class shares", "estimated shares"])
def test_grouped_class_and_estimated_shares_stay_within_the_smallest_budget(call):
    # rsq and per-row shares are traced above; these paths run the same units through other
    # layers (grouped players, one game per class, a sample of rows), each on a depth-10 tree
    X, y, _ = deep_data(n=800, p=8)
    labels = (y > np.median(y)).astype(int)
    target = labels if call == "class shares" else y
    model = (DecisionTreeClassifier if call == "class shares" else DecisionTreeRegressor)(max_depth=10, random_state=0)
    model.fit(X, target)

    def shares(budget: float) -> np.ndarray:
        explainer = RSquaredExplainer(model, memory_budget=budget)
        if call == "grouped per-row shares":
            return explainer(X, y, groups={"a": [0, 1], "b": [2, 3]}).values
        if call == "class shares":
            return np.asarray(explainer.rsq(X, labels))
        return np.asarray(estimate_rsq(explainer, X, y, n_sample=200, random_state=0).values)

    tracemalloc.start()
    try:
        small = shares(1 / 64)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < (1 << 30) / 64
    np.testing.assert_allclose(small, shares(2.0), rtol=0, atol=1e-12)  # the budget changes blocks, not values


def test_routing_a_fully_grown_tree_stays_within_a_small_budget():
    # rows were routed at least 256 at a time, (rows, leaves x depth) path booleans: 31 MiB for a
    # fully grown tree on 2,000 rows whatever the budget, 12 MiB here; the patterns are the same
    X, y, _ = deep_data(n=1000, p=20)
    tree = RSquaredExplainer(DecisionTreeRegressor(random_state=0).fit(X, y)).forest.trees[0]
    budget = 1 << 24
    # compiled before tracing: routing alone is measured.  Routing reads only the split and path
    # fields, which skipping every pair's cross items leaves as they are (the full plan of this
    # 1,000-leaf tree took 20 CPU seconds to compile)
    plan = compile_tree(tree, skip=np.ones(tree.n_nodes, dtype=bool))
    tuning = replace(DEFAULT_TUNING, memory_budget=budget)
    unit = LcaUnit(np.array([0]), np.array([0.0]), tree, 1.0, tuning=tuning, _plan=plan)
    tracemalloc.start()
    try:
        (_, _, first, inverse, *_), prediction = unit.prepare(X, None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < budget / 4
    expected_first, expected_inverse = distinct_rows(split_decisions(plan, X)[:, :-1])
    np.testing.assert_array_equal(first, expected_first)
    np.testing.assert_array_equal(inverse, expected_inverse)
    np.testing.assert_array_equal(prediction[:, 0], tree.value[tree.leaf_of(X)])


def _traced(explainer, X, y, local: bool = False) -> tuple[np.ndarray, int]:
    """``explainer.rsq(X, y)`` (or the per-row shares) and the peak bytes ``tracemalloc`` saw the
    call allocate."""
    tracemalloc.start()
    try:
        shares = explainer(X, y).values if local else explainer.rsq(X, y)
        return shares, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _constant_r2(explainer, y) -> float:
    mean = explainer.forest.base_offset + explainer.forest.nodes.tree_mean.sum()
    return r2_score(y, np.full_like(y, mean))


def test_refusal_gives_the_estimate_and_what_to_change():
    X, y, _ = make_data(n=200_000, p=60)
    model = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model, memory_budget=1 / 8)
    estimate = r"Estimated working memory 0\.\d\d GiB .* 200,000 rows x 60 features"
    with pytest.raises(MemoryBudgetError, match=estimate) as error:
        explainer(X, y)
    message = str(error.value)
    assert "memory_budget=0.12 GiB" in message
    assert "fewer rows (about" in message and "rsq()" in message
    fit = int(message.split("about ")[1].split(" fit")[0].replace(",", ""))
    assert 0 < fit < 200_000
    explainer(X[:fit], y[:fit])  # as many rows as it says fit do
    assert isinstance(error.value, ValueError)
    assert explainer.rsq(X, y).shape == (60,)  # global shares hold O(n + p)


def test_a_refusal_no_number_of_rows_can_fix_does_not_advise_fewer_rows(monkeypatch):
    # every unit now fits the smallest budget on one row (batches take fewer trees, plans come in
    # pieces), so a unit whose own memory is over it is made up here
    import shap_rsq.engine.budget as budget

    X, y, _ = make_data(n=100, p=20)
    model = RandomForestRegressor(4, max_depth=4, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model, memory_budget=1 / 64)
    monkeypatch.setattr(budget, "unit_bytes", lambda unit, n_rows, *args, **kwargs: 20 << 20)
    with pytest.raises(MemoryBudgetError, match="exceeds memory_budget=16 MiB: raise RSquaredExplainer") as error:
        explainer.rsq(X, y)
    message = str(error.value)
    assert "fewer rows" not in message and "grow shallower trees" in message


def test_shallow_trees_fit_the_smallest_budget():
    # a flat 64 MiB for every batch of shallow trees refused a depth-2 tree on 20 rows at 1/64 GiB
    # (with "grow shallower trees") while deeper trees ran
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    y = X[:, 0] + rng.normal(size=20)
    model = DecisionTreeRegressor(max_depth=2).fit(X, y)
    small = RSquaredExplainer(model, memory_budget=1 / 64)
    np.testing.assert_allclose(small.rsq(X, y), RSquaredExplainer(model).rsq(X, y), rtol=0, atol=1e-15)
    np.testing.assert_allclose(small.rsq(X, y).sum(), r2_score(y, model.predict(X)), atol=1e-12)
    X, y, _ = make_data(n=200, p=5)
    for depth in (2, 3, 4):
        model = DecisionTreeRegressor(max_depth=depth, random_state=0).fit(X, y)
        small, full = RSquaredExplainer(model, memory_budget=1 / 64), RSquaredExplainer(model)
        np.testing.assert_allclose(small.rsq(X, y), full.rsq(X, y), rtol=0, atol=1e-14)
        np.testing.assert_allclose(small(X, y).values, full(X, y).values, rtol=0, atol=1e-14)
        np.testing.assert_allclose(small.rsq_interactions(X, y), full.rsq_interactions(X, y), rtol=0, atol=1e-14)
    # a batch of depth-4 trees took its 2^15 pattern weights a tree and root arrays of 2^21 elements
    # whatever the budget: rsq of this forest was refused at 1/64 GiB while per-row shares ran
    X, y, _ = make_data(n=2000, p=6)
    forest = RandomForestRegressor(30, max_depth=4, random_state=0).fit(X, y)
    small = RSquaredExplainer(forest, memory_budget=1 / 64)
    np.testing.assert_allclose(small.rsq(X, y), RSquaredExplainer(forest).rsq(X, y), rtol=0, atol=1e-14)


def test_a_shallow_batch_is_charged_for_the_rows_of_one_chunk():
    X, y, _ = make_data(n=20_000, p=10)
    model = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    (unit,) = RSquaredExplainer(model)._units.units()
    assert unit_bytes(unit, 20, False) < 1 << 20  # a few tables over 128 split patterns
    assert unit_bytes(unit, 2_000, False) < unit_bytes(unit, 20_000, False)
    chunk = unit.chunk_rows()
    assert unit_bytes(unit, chunk, False) == unit_bytes(unit, 100 * chunk, False)  # one chunk at a time


@pytest.mark.parametrize("local", [False, True])
def test_the_estimate_of_shallow_trees_is_above_their_peak(local):
    X, y, _ = make_data(n=30_000, p=10)
    model = RandomForestRegressor(60, max_depth=3, random_state=0).fit(X[:2000], y[:2000])
    explainer = RSquaredExplainer(model)
    units = explainer._units.units(local)
    forest = explainer.forest
    estimate = row_bytes(len(y), forest.n_features, forest.n_trees, local, 1)
    estimate += max(unit_bytes(unit, len(y), local) for unit in units)
    tracemalloc.start()
    try:
        decompose(forest, units, X, y, np.ones(len(y)), local=local, n_jobs=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < estimate < 4 * peak


@pytest.mark.parametrize(
    ("budget", "reason"),
    [(0, "at least 1/64"), (-1.0, "at least 1/64"), (float("nan"), "finite"), (float("inf"), "finite"), ("big", "")],
)
def test_memory_budget_is_checked(budget, reason):
    # infinity was said to be below 1/64 GiB
    X, y, _ = make_data()
    model = DecisionTreeRegressor(max_depth=3).fit(X, y)
    with pytest.raises((ValueError, TypeError), match=f"memory_budget must be .*{reason}"):
        RSquaredExplainer(model, memory_budget=budget)


def test_an_out_of_memory_error_becomes_a_budget_error(monkeypatch):
    X, y, _ = deep_data(n=80, p=6)
    explainer = RSquaredExplainer(DecisionTreeRegressor(random_state=0).fit(X, y))
    (unit,) = explainer._units.units()

    def exhausted(*args, **kwargs):
        raise MemoryError("Unable to allocate 2.7 GiB")

    monkeypatch.setattr(unit, "contribute", exhausted)
    message = r"ran out of memory .* 80 rows x 6 features .* memory_budget=2\.00 GiB"
    with pytest.raises(MemoryBudgetError, match=message):
        explainer.rsq(X, y)


@pytest.mark.parametrize("local", [False, True])
def test_trees_whose_kernels_fit_only_fewer_rows_run_block_by_block_within_the_budget(local):
    # the conditioned recursion of a leaf-wise tree keeps its states on every row (about 4 KB a row
    # here): 30,000 rows were refused under 16 MiB ("about 3,086 fit"); now they run 3,000 or so at a
    # time, a softmax's offsets taken block by block, and give the shares of the rows all at once
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 6))
    labels = np.digitize(X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=20_000), [-1.0, 1.0])
    model = HistGradientBoostingClassifier(max_iter=15, max_depth=4, random_state=0).fit(X, labels)
    small = RSquaredExplainer(model, memory_budget=1 / 64)
    units = small._unit_caches[0].units(local)
    assert row_bytes(20_000, 6, 0, local, 1) + max(unit_bytes(unit, 20_000, local) for unit in units) > 16 << 20
    small.rsq(X[:20], labels[:20])  # the trees read before the measurement
    tracemalloc.start()
    try:
        blocked = small(X, labels).values if local else small.rsq(X, labels)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20
    whole = RSquaredExplainer(model)
    expected = whole(X, labels).values if local else whole.rsq(X, labels)
    np.testing.assert_allclose(blocked, expected, rtol=1e-12, atol=1e-15)


def test_rows_read_by_many_trees_are_laid_out_column_by_column_and_the_shares_do_not_move(monkeypatch):
    # a tree gathered its split columns from rows laid out row by row, reading nearly all of X
    # each time: 1.46x less time on 400,000 rows of 50 columns with the columns laid out first
    from shap_rsq.engine import budget, run

    X, y, _ = make_data(n=3000, p=12)
    model = RandomForestRegressor(20, max_depth=5, random_state=0).fit(X, y)
    explainer = RSquaredExplainer(model)
    forest = explainer.forest
    routed = budget.routing_rows(forest, X)
    assert routed.flags.f_contiguous and routed is not X
    np.testing.assert_array_equal(routed, X)
    assert X.flags.c_contiguous  # the caller's rows untouched
    small = replace(DEFAULT_TUNING, memory_budget=2 * X.nbytes)  # a copy past a quarter of it
    assert budget.routing_rows(forest, X, small) is X
    shares = explainer.rsq(X, y)
    monkeypatch.setattr(run, "routing_rows", lambda forest, X, tuning: X)
    np.testing.assert_array_equal(explainer.rsq(X, y), shares)


def test_wide_rows_of_which_trees_read_a_few_columns_are_not_copied():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5000))
    y = X[:, 0] + X[:, 1] * X[:, 2]
    model = RandomForestRegressor(5, max_depth=4, max_features=0.01, random_state=0).fit(X, y)
    from shap_rsq.engine.budget import routing_rows

    assert routing_rows(RSquaredExplainer(model).forest, X) is X


def test_rows_whose_gathers_barely_pass_the_copy_are_not_copied():
    # 600 rows of 20,000 columns read by 1,000 depth-3 trees (6 columns each): the trees' gathers
    # from rows move 1.04x the lines of a read and a write of X, and the copy took 0.28 s of a
    # 0.45 s first call; a copy also writes fresh pages, so it must save more than that
    from shap_rsq.engine.budget import columns_first

    X = np.zeros((600, 20_000))
    assert columns_first(X, 1000, 6.0) is X
    assert columns_first(X, 1000, 6.0, replace(DEFAULT_TUNING, column_copy_lines=2.0)) is not X
    tall = np.zeros((40_000, 50))  # 60 depth-4 trees on 50 columns: 5.8x the copy's lines
    assert columns_first(tall, 60, 4.4).flags.f_contiguous
