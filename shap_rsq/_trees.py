"""Tree tables: the trees of a model as plain arrays, read from shap's ``TreeEnsemble``.

shap already parses every supported model family into dense, padded arrays
(children, default child, feature, threshold, value, cover).  This module only
trims them into one :class:`TreeTable` per tree and offers the two row-level
operations every other module needs: routing rows to leaves and predicting.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Forest", "TreeTable"]


@dataclass(frozen=True)
class TreeTable:
    """One regression tree as node arrays (node 0 is the root).

    Attributes
    ----------
    left, right : ndarray of int
        Child indices, ``-1`` at leaves.
    default : ndarray of int
        Child taken when the split feature is missing (NaN).
    feature : ndarray of int
        Split feature of each internal node.
    threshold : ndarray of float
        A row goes left when ``x[feature] <= threshold``.
    value : ndarray of float
        Leaf values, already scaled (learning rate, ``1/T`` of a forest).
    cover : ndarray of float
        Training weight that reached each node.
    """

    left: np.ndarray
    right: np.ndarray
    default: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    value: np.ndarray
    cover: np.ndarray

    @property
    def is_leaf(self) -> np.ndarray:
        return self.left < 0

    @property
    def n_nodes(self) -> int:
        return len(self.left)

    def leaf_of(self, X: np.ndarray, dtype: np.dtype | None = None) -> np.ndarray:
        """Index of the leaf each row of ``X`` reaches (NaN follows the default child).

        Values are compared in ``dtype`` (the model's input precision) when given.
        """
        node = np.zeros(X.shape[0], dtype=np.int64)
        rows = np.arange(X.shape[0])
        active = ~self.is_leaf[node]
        while active.any():
            r, u = rows[active], node[active]
            x = X[r, self.feature[u]] if dtype is None else X[r, self.feature[u]].astype(dtype)
            go_left = np.where(np.isnan(x), self.default[u] == self.left[u], x <= self.threshold[u])
            node[r] = np.where(go_left, self.left[u], self.right[u])
            active[r] = ~self.is_leaf[node[r]]
        return node


@dataclass(frozen=True)
class Forest:
    """A sum of regression trees plus a constant: ``f(x) = base_offset + sum_t tree_t(x)``.

    Attributes
    ----------
    trees : tuple of TreeTable
    base_offset : float
    input_dtype : numpy dtype
        Feature values are cast to this dtype before comparing with thresholds,
        exactly as the model does (float32 for scikit-learn and XGBoost).
    n_features : int
    """

    trees: tuple[TreeTable, ...]
    base_offset: float
    input_dtype: np.dtype
    n_features: int

    @classmethod
    def from_ensemble(cls, ensemble, n_features: int, tree_limit: int | None = None) -> Forest:
        """Read the padded arrays of a ``shap.explainers._tree.TreeEnsemble``."""
        n_trees = ensemble.children_left.shape[0]
        if tree_limit is not None and 0 <= tree_limit < n_trees:
            n_trees = tree_limit
        trees = []
        for t in range(n_trees):
            size = int(ensemble.num_nodes[t])
            left = ensemble.children_left[t, :size].astype(np.int64)
            is_leaf = left < 0
            trees.append(
                TreeTable(
                    left=left,
                    right=ensemble.children_right[t, :size].astype(np.int64),
                    default=ensemble.children_default[t, :size].astype(np.int64),
                    feature=np.where(is_leaf, 0, ensemble.features[t, :size]).astype(np.int64),
                    threshold=ensemble.thresholds[t, :size].astype(np.float64),
                    value=np.where(is_leaf, ensemble.values[t, :size, 0], 0.0).astype(np.float64),
                    cover=ensemble.node_sample_weight[t, :size].astype(np.float64),
                )
            )
        base = float(np.asarray(ensemble.base_offset, dtype=np.float64).reshape(-1)[0])
        return cls(tuple(trees), base, np.dtype(ensemble.input_dtype), int(n_features))

    def cast(self, X: np.ndarray) -> np.ndarray:
        """Rows in the dtype the model compares thresholds in (a copy unless already there)."""
        return np.asarray(X, dtype=self.input_dtype)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Sum of leaf values plus the base offset."""
        out = np.full(X.shape[0], self.base_offset)
        for tree in self.trees:
            out += tree.value[tree.leaf_of(X, self.input_dtype)]
        return out
