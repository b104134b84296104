"""Rows to one tree's split decisions, the leaf they reach, and their distinct split patterns.

A row enters every kernel only through its decisions at the tree's splits, so rows with the same
decisions (a *pattern*) are merged before any kernel runs.  ``plan`` is any plan with the split
fields of :class:`~shap_rsq.kernels.lca.plan.TreePlan` (``split_feature``, ``split_threshold``,
``split_default_left``), and for the leaves its path fields (``path_split``, ``path_left``).
"""

from __future__ import annotations

import numpy as np

from ..models.node_arrays import goes_left

__all__ = [
    "distinct_rows",
    "key_decisions",
    "ranked_keys",
    "reached_leaf",
    "routed_decisions",
    "routed_pattern_keys",
    "routed_patterns",
    "split_decisions",
]


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


def ranked_keys(keys: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` for integer keys below ``size``: the distinct keys,
    sorted, and each key's rank among them.

    When the keys have a table of at most four slots each (36 bytes a key with the slots' ranks),
    the table marks the keys that occur and its marks are numbered, with no sort: 3.8 ms against
    ``np.unique``'s 92 ms on 1,000,000 keys of depth-4 trees (15 splits), where the sort was a
    quarter of routing the rows.  The table's cost grows with its slots, not the keys, so it is
    bounded by the keys: a table of a million slots for 20 rows took 1 ms a tree where their sort
    takes 10 us.  The marks are numbered by scattering a range onto them, not by a cumulative sum
    over the table (twice as fast on tables of thousands of slots).
    """
    if size > 4 * keys.shape[0]:
        distinct, inverse = np.unique(keys, return_inverse=True)
        return distinct, inverse.ravel()
    present = np.zeros(size, dtype=bool)
    present[keys] = True
    distinct = np.flatnonzero(present)
    rank = np.empty(size, dtype=np.int64)
    rank[distinct] = np.arange(len(distinct))
    return distinct, rank[keys]


def _distinct_keys(keys: np.ndarray, n_bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(keys, return_index=True, return_inverse=True)`` reordered (each pattern's first
    row, each row's pattern, the distinct keys: patterns in the order of their keys) for keys
    below ``2^n_bits`` (integers, or packed bytes: :func:`_pattern_keys`), ranked as
    :func:`ranked_keys` does."""
    n = keys.shape[0]
    if keys.dtype.kind == "V" or n_bits > 62:
        distinct, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        return first, inverse.ravel(), distinct
    distinct, inverse = ranked_keys(keys, 1 << n_bits)
    first = np.full(len(distinct), n, dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(n, dtype=np.int64))
    return first, inverse, distinct


def key_decisions(keys: np.ndarray, n_splits: int) -> np.ndarray:
    """The split decisions each key of :func:`_pattern_keys` packs, laid out as
    :func:`split_decisions`' (``(len(keys), n_splits + 1)``, the last column padding)."""
    out = np.ones((len(keys), n_splits + 1), dtype=bool)
    if keys.dtype.kind == "V":
        packed = np.frombuffer(keys.tobytes(), dtype=np.uint8).reshape(len(keys), -1)
        out[:, :n_splits] = np.unpackbits(packed, axis=1, count=n_splits)
    else:
        out[:, :n_splits] = (keys[:, None] >> np.arange(n_splits, dtype=np.int64)) & 1
    return out


def _routed_keys(plan, X: np.ndarray, dtype, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_distinct_keys` of the rows of ``X``, routed ``step`` rows at a time."""
    keys = [
        _pattern_keys(split_decisions(plan, X[start : start + step], dtype)[:, :-1])
        for start in range(0, X.shape[0], step)
    ]
    return _distinct_keys(np.concatenate(keys), len(plan.split_feature))


def routed_patterns(
    plan, X: np.ndarray, dtype, elements: int, leaf_value: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The distinct split patterns of the rows of ``X`` (first row of each, and each row's
    pattern), and with ``leaf_value`` every row's prediction ``leaf_value[leaf]`` (else ``None``):
    :func:`routed_pattern_keys` without the keys."""
    return routed_pattern_keys(plan, X, dtype, elements, leaf_value)[:3]


def routed_pattern_keys(
    plan, X: np.ndarray, dtype, elements: int, leaf_value: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """:func:`routed_patterns`, and each pattern's key (:func:`key_decisions` gives its decisions
    again, a few bytes a pattern held in place of its split decisions).

    Rows are routed in blocks of about ``elements`` booleans (a row's split decisions, or its
    ``(L, D)`` path booleans when the leaves are asked for), so the memory is bounded whatever the
    rows.  Rows of one pattern reach one leaf, so the leaves are found once a pattern, from the
    decisions its key packs (routing its first row again was a quarter of routing depth-8 XGBoost
    trees on 1,000 rows).
    """
    n_splits = len(plan.split_feature)
    # a block holds the rows' split columns of X as floats, 8 bytes an element: with the leaves
    # asked for, blocks keep the rows that (L, D) path booleans a row allow, which bounds them
    per_row = plan.path_split.size if leaf_value is not None else n_splits + 1
    step = max(1, elements // max(1, per_row))
    first, inverse, keys = _routed_keys(plan, X, dtype, step)
    if leaf_value is None:
        return first, inverse, None, keys
    leaf = np.concatenate(
        [
            reached_leaf(plan, key_decisions(keys[start : start + step], n_splits))
            for start in range(0, len(first), step)
        ]
    )
    return first, inverse, leaf_value[leaf][inverse], keys


def routed_decisions(plan, X: np.ndarray, dtype, elements: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`routed_patterns` without the leaves, and each pattern's split decisions
    ``(patterns, n_splits)`` (unpacked from its key, not routed again), in blocks of about
    ``elements`` booleans."""
    n_splits = len(plan.split_feature)
    step = max(1, elements // (n_splits + 1))
    first, inverse, keys = _routed_keys(plan, X, dtype, step)
    decisions = [key_decisions(keys[start : start + step], n_splits)[:, :-1] for start in range(0, len(first), step)]
    return first, inverse, np.concatenate(decisions) if decisions else np.ones((0, n_splits), dtype=bool)


def distinct_rows(decisions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First occurrence and inverse map of each distinct row of split decisions."""
    first, inverse, _ = _distinct_keys(_pattern_keys(decisions), decisions.shape[1])
    return first, inverse
