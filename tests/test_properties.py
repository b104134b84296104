"""Property tests on random trees up to depth 16: exact, finite, efficient."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import rsq_oracle

from shap_rsq.engine.run import UnitCache, decompose
from shap_rsq.kernels.enumeration import split_patterns as _enumerate
from shap_rsq.kernels.lca.plan import _distinct_pairs
from shap_rsq.kernels.recursion.conditioned import compile_junction, sub_patterns
from shap_rsq.kernels.row_patterns import _distinct_keys
from shap_rsq.models.forest import Forest, TreeTable

THRESHOLDS = np.array([-1.0, -0.25, 0.0, 0.5, 1.0])


@st.composite
def trees(draw, n_features: int) -> TreeTable:
    """A random tree with one spine reaching ``depth`` and random side branches.

    Leaves get random covers (some zero, so whole subtrees can be empty);
    internal covers are sums.  Features repeat freely along paths.
    """
    depth = draw(st.integers(1, 16))
    nodes: list[dict] = []

    def grow(level: int, on_spine: bool) -> int:
        index = len(nodes)
        nodes.append({})
        split = (on_spine and level < depth) or (
            not on_spine and level < depth and draw(st.booleans()) and len(nodes) < 40
        )
        if not split:
            cover = draw(st.sampled_from([0.0, 1.0, 2.0, 3.0, 7.5]))
            nodes[index] = {"leaf": True, "value": draw(st.floats(-3, 3)), "cover": cover}
            return index
        spine_left = draw(st.booleans())
        left = grow(level + 1, on_spine and spine_left)
        right = grow(level + 1, on_spine and not spine_left)
        nodes[index] = {
            "leaf": False,
            "left": left,
            "right": right,
            "feature": draw(st.integers(0, n_features - 1)),
            "threshold": draw(st.sampled_from(list(THRESHOLDS))),
            "default_left": draw(st.booleans()),
            "cover": nodes[left]["cover"] + nodes[right]["cover"],
        }
        return index

    grow(0, True)
    leaf = np.array([n["leaf"] for n in nodes])
    left = np.array([-1 if n["leaf"] else n["left"] for n in nodes])
    right = np.array([-1 if n["leaf"] else n["right"] for n in nodes])
    return TreeTable(
        left=left,
        right=right,
        default=np.where(leaf, -1, np.where([n.get("default_left", True) for n in nodes], left, right)),
        feature=np.array([0 if n["leaf"] else n["feature"] for n in nodes]),
        threshold=np.array([0.0 if n["leaf"] else n["threshold"] for n in nodes]),
        value=np.array([n["value"] if n["leaf"] else 0.0 for n in nodes]),
        cover=np.array([n["cover"] for n in nodes]),
    )


@st.composite
def problems(draw):
    p = draw(st.integers(1, 5))
    forest = Forest.from_trees(
        tuple(draw(st.lists(trees(p), min_size=1, max_size=3))), draw(st.floats(-2, 2)), np.dtype(np.float64), p
    )
    n = draw(st.integers(2, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.choice(np.concatenate([THRESHOLDS, THRESHOLDS + 0.1, [np.nan]]), size=(n, p))
    y = rng.normal(size=n)
    y[0] += 1.0  # never constant
    w = rng.uniform(0.1, 2.0, size=n) if draw(st.booleans()) else np.ones(n)
    return forest, X, y, w


@pytest.mark.parametrize("strategy", ["lca", "enumerate", "recursion", "junction", "auto"])
@settings(max_examples=60, deadline=None)
@given(problem=problems())
def test_random_trees_match_enumeration_and_are_efficient(strategy, problem):
    forest, X, y, w = problem
    cache = UnitCache(forest, strategy)
    sst = np.sum(w * (y - np.average(y, weights=w)) ** 2)
    shares = decompose(forest, cache.units(), X, y, w).values / sst
    # per-row values have their own units: depth-4 trees take the side tables of kernels.recursion.pattern_rows
    local = decompose(forest, cache.units(local=True), X, y, w, local=True)
    expected_global, expected_local = rsq_oracle(forest, X, y, w)

    assert np.all(np.isfinite(shares)) and np.all(np.isfinite(local.values))
    # rtol: rows whose y barely varies give shares far above 1 (SST near 0), exact to rounding
    np.testing.assert_allclose(shares, expected_global, atol=1e-9, rtol=1e-12)
    np.testing.assert_allclose(local.values / sst, expected_local, atol=1e-9, rtol=1e-12)

    # efficiency: the shares telescope to SSE(E f) - SSE(f)
    sse_mean = np.sum(w * (y - local.mean_prediction) ** 2)
    sse_model = np.sum(w * (y - local.prediction) ** 2)
    assert np.isclose(shares.sum() * sst, sse_mean - sse_model, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(local.prediction, forest.predict(X), atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(trees(n_features=12))
def test_deep_trees_on_many_features_stay_efficient(tree):
    # 12 features is beyond the oracle; check finiteness and the efficiency identity only
    forest = Forest.from_trees((tree,), 0.0, np.dtype(np.float64), 12)
    rng = np.random.default_rng(0)
    X = rng.choice(np.concatenate([THRESHOLDS + 0.05, [np.nan]]), size=(40, 12))
    y = rng.normal(size=40)
    w = np.ones(40)
    result = decompose(forest, UnitCache(forest).units(local=True), X, y, w, local=True)
    sse_mean = np.sum((y - result.mean_prediction) ** 2)
    sse_model = np.sum((y - result.prediction) ** 2)
    assert np.all(np.isfinite(result.values))
    np.testing.assert_allclose(
        result.values.sum(axis=1), -((y - result.prediction) ** 2 - (y - result.mean_prediction) ** 2), atol=1e-9
    )
    assert np.isclose(result.values.sum(), sse_mean - sse_model, atol=1e-9)


def test_sixteen_distinct_features_on_one_path_match_enumeration():
    # 16 distinct features on the deepest path: Gauss-Legendre with 16 nodes on degree-31 integrands
    depth, n_features = 16, 16
    rng = np.random.default_rng(7)
    left, right, feature, threshold, value, cover, default = [], [], [], [], [], [], []

    def node(kind_leaf, f=0, t=0.0, v=0.0, c=0.0):
        for column, item in (
            (left, -1),
            (right, -1),
            (feature, f),
            (threshold, t),
            (value, v),
            (cover, c),
            (default, -1),
        ):
            column.append(item)
        return len(left) - 1

    def grow(level):
        if level == depth:
            return node(True, v=rng.normal(), c=rng.uniform(1, 5))
        index = node(False, f=level, t=float(rng.choice(THRESHOLDS)))
        deeper = grow(level + 1)
        side = node(True, v=rng.normal(), c=rng.choice([0.0, rng.uniform(1, 5)]))
        left[index], right[index] = (deeper, side) if level % 2 else (side, deeper)
        default[index] = left[index] if level % 3 else right[index]
        cover[index] = cover[deeper] + cover[side]
        return index

    grow(0)
    tree = TreeTable(*(np.array(c) for c in (left, right, default, feature, threshold, value, cover)))
    forest = Forest.from_trees((tree,), 0.0, np.dtype(np.float64), n_features)
    X = rng.choice(np.concatenate([THRESHOLDS + 0.05, [np.nan]]), size=(5, n_features))
    X[0] = THRESHOLDS.max() + 1.0  # one row that passes far down the spine
    y = rng.normal(size=5)
    w = np.ones(5)
    plans = UnitCache(forest).units()
    # the spine leaf holds all 16 features and every other leaf shares its features with it
    assert plans[0].plan.n_q == 8
    sst = np.sum((y - y.mean()) ** 2)
    expected_global, expected_local = rsq_oracle(forest, X, y, w)
    np.testing.assert_allclose(decompose(forest, plans, X, y, w).values / sst, expected_global, atol=1e-9)
    np.testing.assert_allclose(decompose(forest, plans, X, y, w, local=True).values / sst, expected_local, atol=1e-9)


def test_a_forty_deep_chain_tree_next_to_shallow_ones():
    # leaf-wise boosters grow long chains; nothing may scale with 2^depth
    depth = 40
    n_nodes = 2 * depth + 1
    chain = np.arange(0, 2 * depth, 2)  # chain node k is 2k: left child 2k + 2 (next chain node), right 2k + 1
    left, right = np.full(n_nodes, -1), np.full(n_nodes, -1)
    left[chain], right[chain] = chain + 2, chain + 1
    feature = np.zeros(n_nodes, dtype=int)
    feature[chain] = np.arange(depth) % 3
    threshold = np.zeros(n_nodes)
    threshold[chain] = 0.1 * np.arange(depth)
    value = np.where(left < 0, (np.arange(n_nodes) % 5) - 2.0, 0.0)
    cover = np.ones(n_nodes)
    cover[chain] = depth - np.arange(depth) + 1.0
    deep = TreeTable(left, right, left.copy(), feature, threshold, value, cover)
    shallow = TreeTable(
        np.array([1, -1, -1]),
        np.array([2, -1, -1]),
        np.array([1, -1, -1]),
        np.array([1, 0, 0]),
        np.array([0.5, 0, 0]),
        np.array([0.0, -1.0, 1.0]),
        np.array([4.0, 2.0, 2.0]),
    )
    forest = Forest.from_trees((shallow, deep, shallow), 0.5, np.dtype(np.float64), 3)
    assert forest.nodes.tree_depth.tolist() == [1, depth, 1]
    rng = np.random.default_rng(3)
    X = rng.uniform(-0.5, 4.5, size=(30, 3))
    y = rng.normal(size=30)
    w = np.ones(30)
    sst = np.sum((y - y.mean()) ** 2)
    expected_global, _ = rsq_oracle(forest, X, y, w)
    result = decompose(forest, UnitCache(forest).units(), X, y, w)
    np.testing.assert_allclose(result.values / sst, expected_global, atol=1e-9)
    np.testing.assert_allclose(result.prediction, forest.predict(X), atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**30)), min_size=1, max_size=30), st.booleans())
def test_distinct_pairs_are_the_distinct_rows_in_order(pairs, narrow):
    """Packed keys (pairs of up to 62 bits) and the row-unique fallback number views identically."""
    array = np.array(pairs, dtype=np.int64)
    if narrow:
        array %= 1 << 20  # both fit one key
    rows, rank = np.unique(array, axis=0, return_inverse=True)
    high, low, inverse = _distinct_pairs(array[:, 0], array[:, 1])
    np.testing.assert_array_equal(np.stack([high, low], axis=1), rows)
    np.testing.assert_array_equal(inverse, rank.ravel())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_decision_keys_compare_in_the_models_precision(dtype):
    """Splits compared on float32 rows give the decisions of float64 comparisons: thresholds are
    narrowed only when that is exact (a float64 midpoint between two float32 values is kept)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    between = (np.float64(np.float32(0.1)) + np.float64(np.nextafter(np.float32(0.1), np.float32(1)))) / 2
    X[:3, 1] = [np.float32(0.1), between, np.nextafter(np.float32(0.1), np.float32(1))]
    feature = np.array([[1, 0, 3], [2, 1, 1]])
    threshold = np.array([[between, 0.0, -0.5], [0.25, np.float64(np.float32(0.1)), 0.3]])
    default_left = np.array([[True, False, True], [False, True, False]])
    shift = np.array([0, 2, 1])

    keys = _enumerate.decision_keys(X, feature, threshold, default_left, dtype, shift)

    x = (X.astype(np.float32) if dtype == np.float32 else X).astype(np.float64)[:, feature]  # (n, T, H)
    left = np.where(np.isnan(x), default_left, x <= threshold)
    expected = np.sum(left.astype(np.int64) << shift, axis=2)
    np.testing.assert_array_equal(keys, expected)
    assert keys.shape == (200, 2)
    assert np.float64(np.float32(between)) != between  # the kept-wide case is exercised


@pytest.mark.parametrize("with_nan", [False, True])
def test_decision_keys_of_repeated_splits_read_each_distinct_split_once(with_nan):
    """Many trees splitting on the same few (column, threshold, default) triples take the path that
    compares each distinct split once; its keys are the per-split comparisons', NaN included, and
    splits that differ only in their default direction stay apart when rows have NaN."""
    rng = np.random.default_rng(8)
    X = rng.binomial(1, 0.5, size=(300, 6)).astype(float)
    if with_nan:
        X[rng.random(X.shape) < 0.1] = np.nan
    n_trees, depth = 40, 3
    feature = rng.integers(0, 3, size=(n_trees, depth))
    threshold = np.full((n_trees, depth), 0.5)
    default_left = rng.random((n_trees, depth)) < 0.5
    shift = np.array([2, 0, 1])
    split_ids = _enumerate._distinct_splits(feature, threshold, default_left if with_nan else None)[0]
    assert len(split_ids) * 2 <= feature.size  # the shared path runs

    keys = _enumerate.decision_keys(X, feature, threshold, default_left, np.float64, shift)

    x = X[:, feature]  # (n, T, H)
    left = np.where(np.isnan(x), default_left, x <= threshold)
    np.testing.assert_array_equal(keys, np.sum(left.astype(np.int64) << shift, axis=2))


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_pattern_keys_reach_the_leaf_that_the_heap_walk_reaches(depth):
    # pattern indices put each node's sub-pattern in one run of bits (preorder); the leaf read
    # back from the bits must be the one the decisions lead to
    rng = np.random.default_rng(depth)
    n_splits = (1 << depth) - 1
    left = rng.random((300, 1, n_splits)) < 0.5
    bits = _enumerate.pattern_bits(depth)
    keys = np.sum(left[:, 0].astype(np.int64) << bits, axis=1)
    node = np.zeros(len(keys), dtype=np.int64)  # walk the heap: children of h are 2h+1 (left), 2h+2
    for _ in range(depth):
        node = 2 * node + np.where(left[np.arange(len(keys)), 0, node], 1, 2)
    np.testing.assert_array_equal(_enumerate.pattern_leaf(depth, keys), node - n_splits)
    assert sorted(bits) == list(range(n_splits)) and bits[0] == n_splits - 1  # the root most significant


def _pair_unions_by_enumeration(tree: TreeTable) -> np.ndarray:
    """``(nodes,)`` the most distinct features on two leaves' paths meeting at each split, leaf
    pair by leaf pair (0 at leaves)."""
    best = np.zeros(tree.n_nodes, dtype=np.int64)

    def leaves(u: int, path: frozenset) -> list[frozenset]:
        if tree.left[u] < 0:
            return [path]
        below = path | {int(tree.feature[u])}
        a, b = leaves(int(tree.left[u]), below), leaves(int(tree.right[u]), below)
        best[u] = max(len(x | y) for x in a for y in b)
        return a + b

    leaves(0, frozenset())
    return best


@settings(max_examples=80, deadline=None)
@given(trees(n_features=5), st.sampled_from([0, 1, 4, 1 << 20]))
def test_each_split_counts_its_widest_leaf_pair(tree, budget):
    # a split's Gauss-Legendre rule is that of its widest pair of leaves, counted over their
    # feature sets where that lowers the widest leaves' bound; past the budget, the bound's
    from shap_rsq.kernels.lca.plan import node_quadrature
    from shap_rsq.kernels.leaf_paths import tree_paths

    paths = tree_paths(tree)
    exact = _pair_unions_by_enumeration(tree)
    splits = np.flatnonzero(exact)
    split_q = node_quadrature(tree, paths, budget)[1]
    rule = -(-exact[splits] // 2)
    assert np.all(split_q[splits] >= rule)  # never fewer nodes than the pairs need
    if budget >= 1 << 20:
        np.testing.assert_array_equal(split_q[splits], rule)
        assert compile_junction(tree).n_q == max(-(-int(paths.n_local.max()) // 2), int(rule.max()))


@settings(max_examples=60, deadline=None)
@given(trees(n_features=6))
def test_recursion_counts_the_quadrature_nodes_of_the_lca_plan(tree):
    # the conditioned recursion counts its nodes from the node lists, without every leaf's path
    from shap_rsq.kernels.lca.plan import quadrature_nodes
    from shap_rsq.kernels.leaf_paths import tree_paths

    assert compile_junction(tree).n_q == quadrature_nodes(tree, tree_paths(tree))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 2**14 - 1), min_size=0, max_size=200),
    st.sampled_from([14, 20, 40, 62]),
)
def test_distinct_keys_are_numpys_unique_whichever_way_they_are_found(keys, n_bits):
    """Split-pattern keys deduplicated through a table of every key (few bits) or by sorting (many)
    give ``np.unique``'s patterns, first rows and inverse exactly: the kernels' pattern order and
    so their sums depend on them."""
    array = np.array(keys, dtype=np.int64)
    _, first, inverse = np.unique(array, return_index=True, return_inverse=True)
    got_first, got_inverse, got_keys = _distinct_keys(array, n_bits)
    np.testing.assert_array_equal(got_first, first)
    np.testing.assert_array_equal(got_inverse, inverse.ravel())
    np.testing.assert_array_equal(got_keys, np.unique(array))
    assert got_inverse.dtype == np.int64 and got_first.dtype == np.int64


@settings(max_examples=40, deadline=None)
@given(n_splits=st.sampled_from([1, 7, 62, 63, 130]), seed=st.integers(0, 2**32 - 1))
def test_each_patterns_decisions_unpack_from_its_key(n_splits, seed):
    """The leaves and the recursion read each pattern's decisions off its key (an integer up to 62
    splits, packed bytes past them) instead of routing its first row again: the same booleans, with
    ``split_decisions``' padding column."""
    from shap_rsq.kernels.row_patterns import _pattern_keys, key_decisions

    rng = np.random.default_rng(seed)
    decisions = rng.random((40, n_splits)) < rng.uniform(0.05, 0.95)
    decisions[rng.integers(0, 40, size=10)] = decisions[0]  # some patterns repeat
    first, inverse, keys = _distinct_keys(_pattern_keys(decisions), n_splits)
    unpacked = key_decisions(keys, n_splits)
    np.testing.assert_array_equal(unpacked[:, :-1], decisions[first])
    np.testing.assert_array_equal(unpacked[inverse, :-1], decisions)
    assert unpacked[:, -1].all()


def test_distinct_keys_table_grows_with_the_keys_not_their_bits():
    """A few rows of a tree of 20 splits are sorted, not ranked through a table of 2^20 slots: the
    table's zeros and ranks cost a millisecond and 9 MB a tree however few the rows."""
    import tracemalloc

    keys = np.random.default_rng(0).integers(0, 1 << 20, size=20)
    tracemalloc.start()
    try:
        first, _, _ = _distinct_keys(keys, 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, peak
    np.testing.assert_array_equal(first, np.unique(keys, return_index=True)[1])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_factor_coefficients_are_the_kind_tables_four_terms(seed):
    """Each factor's ``(a0, b0, a1, b1)`` is taken as a constant plus one signed cover term (``r``,
    ``r^2`` or ``R r`` by kind): the same numbers as the kind table's four terms summed, which
    holds only while every kind uses one of them."""
    from shap_rsq.kernels.lca.plan import _TABLE, _coefficients

    rng = np.random.default_rng(seed)
    kind = rng.integers(0, len(_TABLE), size=(6, 5))
    r, prefix = rng.uniform(0.0, 1.0, size=(2, 6, 5))
    terms = _TABLE[kind]
    expected = [
        terms[..., i, 0] + terms[..., i, 1] * r + terms[..., i, 2] * r * r + terms[..., i, 3] * prefix * r
        for i in range(4)
    ]
    np.testing.assert_allclose(_coefficients(kind, r, prefix), expected, rtol=0, atol=1e-15)


@settings(max_examples=80, deadline=None)
@given(tree=trees(n_features=3), seed=st.integers(0, 2**32 - 1))
def test_leaf_of_walks_each_row_down_its_splits(tree, seed):
    # row by row: x <= threshold goes left (ties too), NaN to the default child, compared in dtype
    X = np.random.default_rng(seed).choice(np.concatenate([THRESHOLDS, THRESHOLDS + 1e-9, [np.nan]]), size=(30, 3))
    for dtype in (None, np.float32):
        expected = []
        for x in X if dtype is None else X.astype(dtype):
            u = 0
            while tree.left[u] >= 0:
                v = x[tree.feature[u]]
                u = tree.default[u] if np.isnan(v) else tree.left[u] if v <= tree.threshold[u] else tree.right[u]
            expected.append(u)
        np.testing.assert_array_equal(tree.leaf_of(X, dtype), expected)
        # some rows, in any order and repeated: each reaches its own leaf
        rows = np.random.default_rng(seed).integers(0, len(X), size=12)
        np.testing.assert_array_equal(tree.leaf_of(X, dtype, rows=rows), np.asarray(expected)[rows])


@settings(max_examples=80, deadline=None)
@given(tree=trees(n_features=3), seed=st.integers(0, 2**32 - 1))
def test_a_junction_plan_predicts_from_the_split_decisions_the_value_of_the_leaf_each_row_reaches(tree, seed):
    # the recursion's units predict from the decisions they route on, picking each node's child
    # from the leaves up: the value of the leaf that walking the row down reaches, NaN and ties too
    from shap_rsq.kernels.recursion.conditioned import pattern_predictions
    from shap_rsq.kernels.row_patterns import split_decisions

    plan = compile_junction(tree)
    if plan is None:
        return
    X = np.random.default_rng(seed).choice(np.concatenate([THRESHOLDS, THRESHOLDS + 1e-9, [np.nan]]), size=(30, 3))
    for dtype in (None, np.float32):
        predicted = pattern_predictions(plan, split_decisions(plan, X, dtype)[:, :-1])
        np.testing.assert_array_equal(predicted, tree.value[tree.leaf_of(X, dtype)])


@settings(max_examples=80, deadline=None)
@given(tree=trees(n_features=4))
def test_a_junction_node_s_states_are_the_features_it_shares_with_the_rest_of_the_tree(tree):
    # from occurrence counts: a feature of a node's subtree that also occurs outside it is open
    # there, one that occurs only inside it, on both sides, closes there; the maps read each
    # child's open features off the node's states (its own fixed by the branch when not a state),
    # and the branches share one map object exactly when the child does not read the split's feature
    plan = compile_junction(tree)
    if plan is None:
        return
    splits = np.flatnonzero(tree.left >= 0)
    local = {int(f): k for k, f in enumerate(plan.features)}

    def below(u: int) -> list[int]:
        return [] if tree.left[u] < 0 else [u, *below(tree.left[u]), *below(tree.right[u])]

    def counts(u: int) -> np.ndarray:
        return np.bincount([local[int(tree.feature[v])] for v in below(u)], minlength=len(plan.features))

    def open_features(u: int) -> list[int]:
        node = next(n for n in plan.nodes if splits[n.split] == u)
        shared = (counts(u) > 0) & (counts(u) < total)
        return [f for f in np.flatnonzero(shared) if f != node.own_feature] + (
            [node.own_feature] if node.conditioned else []
        )

    total = counts(0)
    for node in plan.nodes:
        u = splits[node.split]
        inside, sides = counts(u), [counts(c) for c in (tree.left[u], tree.right[u])]
        own = local[int(tree.feature[u])]
        closing = [f for f in np.flatnonzero((inside == total) & (sides[0] > 0) & (sides[1] > 0)) if f != own]
        assert node.own_feature == own and node.conditioned == (inside[own] < total[own])
        assert list(node.closing) == closing
        bits = closing + [f for f in open_features(u) if f != own] + ([own] if node.conditioned else [])
        assert node.n_bits == len(bits)
        for side, c in enumerate((tree.left[u], tree.right[u])):
            if tree.left[c] < 0:
                assert node.known_map[side] is None and node.unknown_map[side] is None
                continue
            child_open = open_features(c)
            assert (node.known_map[side] is node.unknown_map[side]) == (own not in child_open)
            for known, states in ((1, node.known_map[side]), (0, node.unknown_map[side])):
                parent = np.arange(1 << len(bits))
                if node.conditioned:  # the known branch on the upper half of the states
                    parent = parent[parent >> (len(bits) - 1) == known]
                for state, read in zip(parent, states, strict=True):
                    bit = [(state >> bits.index(f)) & 1 if f in bits else known for f in child_open]
                    assert read == sum(b << k for k, b in enumerate(bit))


@settings(max_examples=80, deadline=None)
@given(tree=trees(n_features=3), seed=st.integers(0, 2**32 - 1), whole=st.sampled_from([0.0, 0.5, 0.75, 1.0, 2.0]))
def test_sub_patterns_are_each_node_s_distinct_decisions_below_it(tree, seed, whole):
    # each row's sub-pattern at a node holds its decision there and its children's sub-patterns;
    # a node keeps its distinct ones, each once, unless there are ``whole m`` of them: then every row
    plan = compile_junction(tree)
    if plan is None:
        return
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 40))
    left = rng.random((m, len(plan.split_feature))) < rng.uniform(0.05, 0.95)
    patterns, at = sub_patterns(plan, left, whole)
    kept = [p.count >= whole * m for p in patterns]
    for i, (node, p) in enumerate(zip(plan.nodes, patterns, strict=True)):
        below = [at[c] if c >= 0 else np.zeros(m, dtype=np.int64) for c in node.children]
        np.testing.assert_array_equal(p.decision[at[i]], left[:, node.split])
        for side in (0, 1):
            np.testing.assert_array_equal(p.child[side][at[i]], below[side])
        distinct = set(zip(left[:, node.split], *below, strict=True))
        if kept[i]:
            np.testing.assert_array_equal(at[i], np.arange(m))
            assert len(distinct) >= whole * m
            assert p.same == tuple(c >= 0 and kept[c] for c in node.children)
        else:
            assert p.count == len(distinct) == len(set(zip(p.decision, *p.child, strict=True)))
