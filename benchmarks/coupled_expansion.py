"""Counts, without timing, the (row, item) work of two ways to expand the coupled features of the LCA kernel.

A feature ``k`` that both sides of split ``u`` use below it couples a leaf pair ``(a, b)`` through
``F_k = q p_a p_b + (1 - q) r_a r_b`` (``kernels.lca.plan``).  The kernel writes it *centered*,
``h_a h_b + q(1-q) d_a d_b`` (``d = p - r``), so that a leaf whose path lacks ``k`` (``d = 0``)
enters one group instead of two: ``2^(coupled on its path)`` items a leaf, each read by every row.
Written *uncentered*, a ``q``-term is ``p_a p_b``: zero for every row that fails one of the leaf's
``k``-splits, so a sparse gather would read only the rows that pass, but a leaf lacking ``k``
enters both terms.  Either form can be chosen feature by feature at each split.

For each tree this prints, per row and weighted by each split's quadrature nodes, the centered
items (the kernel's work today), the uncentered form's non-zero entries, and a per-``(u, k)``
choice of the cheaper form (chosen by the summed factor of that feature alone, not optimised);
for a fully grown tree also the per-pair kernel's ``pairs x width`` and the cheaper of the two
kernels at each split, which is what routing does today.  The counts are exact; what a sparse
gather of variable length would cost to index is not counted.

    python benchmarks/coupled_expansion.py xgb 6        # 300 trees of depth 6, 1,000 rows, 100 features
    python benchmarks/coupled_expansion.py xgb 12       # deep.py's xgb-12-10k: depth 12, 10,000 rows (trees 3-5)
    python benchmarks/coupled_expansion.py full 20      # deep.py's tree-full: fully grown, 2,000 rows, 20 features
"""

from __future__ import annotations

import argparse

import numpy as np
from deep import _data as _deep_data
from local import _data

from shap_rsq import RSquaredExplainer
from shap_rsq.kernels.lca.pairs import _leaf_ranges, _ordered_paths, coupled_features, node_costs
from shap_rsq.kernels.lca.plan import node_quadrature
from shap_rsq.kernels.leaf_paths import tree_paths


def _passes(tree, paths, feature_ids, X: np.ndarray) -> np.ndarray:
    """``(rows, L, K)``: whether each row passes every split on feature ``k`` of leaf ``l``'s path."""
    on_path = paths.node >= 0
    node = np.maximum(paths.node, 0)
    n_features = len(feature_ids)
    kid = np.where(on_path, np.searchsorted(feature_ids, tree.player[node]), n_features)
    failed = on_path[None] & ((X[:, tree.feature[node]] <= tree.threshold[node]) != paths.went_left[None])
    passes = np.ones((X.shape[0], len(paths.leaf), n_features + 1), dtype=bool)
    leaves = np.arange(len(paths.leaf))
    for d in range(paths.node.shape[1]):
        passes[:, leaves, kid[:, d]] &= ~failed[:, :, d]
    return passes[:, :, :n_features]


def expansion_work(tree, X: np.ndarray, chunk: int = 200) -> tuple[float, float, float]:
    """Summed over the rows of ``X``: centered items, uncentered non-zero entries, per-``(u, k)`` choice."""
    paths, feature_ids, has = _ordered_paths(tree)
    lo, hi = _leaf_ranges(tree, paths.leaf)
    internal = np.flatnonzero(tree.left >= 0)
    coupled = coupled_features(tree, feature_ids)
    split_q = node_quadrature(tree, tree_paths(tree))[1]
    centered = uncentered = chosen = 0.0
    for start in range(0, X.shape[0], chunk):
        passes = _passes(tree, paths, feature_ids, X[start : start + chunk])
        rows = passes.shape[0]
        for u in internal:
            features = np.flatnonzero(coupled[u])
            leaves = slice(lo[u], hi[u])
            on = has[leaves][:, features]  # (leaves, coupled)
            sparse = np.where(on[None], 1.0 + passes[:, leaves][:, :, features], 2.0)  # uncentered, per row
            dense = np.broadcast_to(1.0 + on[None], sparse.shape)  # centered: 2 items a coupled feature on the path
            pick = sparse.sum(axis=(0, 1)) < dense.sum(axis=(0, 1))
            centered += split_q[u] * rows * np.sum(np.prod(1.0 + on, axis=1))
            uncentered += split_q[u] * np.prod(sparse, axis=2).sum()
            chosen += split_q[u] * np.prod(np.where(pick, sparse, dense), axis=2).sum()
    return centered, uncentered, chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("family", choices=["xgb", "full"])
    parser.add_argument("size", type=int, help="depth of the XGBoost trees, or features of the fully grown tree")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    if args.family == "full":
        from sklearn.tree import DecisionTreeRegressor

        X, y = _deep_data(2000)
        X = X[:, : args.size]
        model, trees, X = DecisionTreeRegressor(random_state=0).fit(X, y), [0], X[:200]
    else:
        import xgboost

        deep = args.size > 8
        X, y = _deep_data(10000) if deep else _data(1000, 100)
        settings = {"n_estimators": 6, "random_state": 0} if deep else {"n_estimators": 300, "learning_rate": 0.05}
        model = xgboost.XGBRegressor(max_depth=args.size, **settings).fit(X, y)
        trees, X = ([3, 4, 5], X[rng.choice(len(X), 2000, replace=False)]) if deep else ([0, 50, 150, 299], X)
    forest = RSquaredExplainer(model).forest
    X = X.astype(forest.input_dtype).astype(float)
    for t in trees:
        tree = forest.trees[t]
        centered, uncentered, chosen = (work / X.shape[0] for work in expansion_work(tree, X))
        line = (
            f"tree {t}: per row, centered {centered:.3g}, uncentered {uncentered / centered:.2f}x, "
            f"chosen per (u, k) {chosen / centered:.2f}x"
        )
        if args.family == "full":
            costs = node_costs(tree)
            q = node_quadrature(tree, tree_paths(tree))[1]
            internal = tree.left >= 0
            pairs = costs.pairs * costs.width * q
            routed = float(np.sum(np.minimum(costs.items * q, pairs)[internal]))
            line += f"; pairs x width {float(pairs[internal].sum()):.3g}, cheaper kernel per split {routed:.3g}"
            line += f" (chosen per (u, k) {chosen / routed:.2f}x that)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
