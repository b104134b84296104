"""Rows to one tree's split decisions, the leaf they reach, and their distinct split patterns.

A row enters every kernel only through its decisions at the tree's splits, so rows with the same
decisions (a *pattern*) are merged before any kernel runs.  ``plan`` is any plan with the split
fields of :class:`~shap_rsq.kernels.lca.plan.TreePlan` (``split_feature``, ``split_threshold``,
``split_default_left``), and for the leaves its path fields (``path_split``, ``path_left``).
"""

from __future__ import annotations

import numpy as np

from ..models.node_arrays import goes_left

__all__ = ["distinct_rows", "reached_leaf", "routed_patterns", "split_decisions"]


def split_decisions(plan, X: np.ndarray, dtype: np.dtype | None = None, rows=None) -> np.ndarray:
    """``(n, n_splits + 1)`` booleans: row goes left at each split; the last column pads paths.

    Only the split columns (of ``rows``, when given) are gathered and cast to the
    model's ``dtype``, never all of ``X``.
    """
    x = X[:, plan.split_feature] if rows is None else X[np.ix_(rows, plan.split_feature)]
    x = x if dtype is None else x.astype(dtype)
    left = goes_left(x, plan.split_threshold, plan.split_default_left)
    return np.concatenate([left, np.ones((x.shape[0], 1), dtype=bool)], axis=1)


def reached_leaf(plan, left: np.ndarray) -> np.ndarray:
    """``(n,)`` index of the leaf each row reaches: the one whose path it passes entirely."""
    on_path = left[:, plan.path_split] == plan.path_left  # (n, L, D)
    return np.argmax(np.all(on_path, axis=2), axis=1)


def _pattern_keys(decisions: np.ndarray) -> np.ndarray:
    """One sortable key per row of split decisions (an integer, or packed bytes past 62 splits)."""
    if decisions.shape[1] <= 62:
        return decisions @ (np.int64(1) << np.arange(decisions.shape[1], dtype=np.int64))
    packed = np.ascontiguousarray(np.packbits(decisions, axis=1))
    return packed.view(np.dtype((np.void, packed.shape[1]))).ravel()


def routed_patterns(
    plan, X: np.ndarray, dtype, elements: int, leaf_value: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The distinct split patterns of the rows of ``X`` (first row of each, and each row's
    pattern), and with ``leaf_value`` every row's prediction ``leaf_value[leaf]`` (else ``None``).

    Rows are routed in blocks of about ``elements`` booleans: a row holds its split decisions
    and, for the predictions, its ``(L, D)`` path booleans, so the memory is bounded whatever the
    rows.
    """
    per_row = plan.path_split.size if leaf_value is not None else len(plan.split_feature) + 1
    step = max(1, elements // max(1, per_row))
    keys, prediction = [], []
    for start in range(0, X.shape[0], step):
        left = split_decisions(plan, X[start : start + step], dtype)
        keys.append(_pattern_keys(left[:, :-1]))
        if leaf_value is not None:
            prediction.append(leaf_value[reached_leaf(plan, left)])
    _, first, inverse = np.unique(np.concatenate(keys), return_index=True, return_inverse=True)
    return first, inverse.ravel(), None if leaf_value is None else np.concatenate(prediction)


def distinct_rows(decisions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First occurrence and inverse map of each distinct row of split decisions."""
    _, first, inverse = np.unique(_pattern_keys(decisions), return_index=True, return_inverse=True)
    return first, inverse.ravel()
