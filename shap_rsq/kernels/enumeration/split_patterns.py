"""Subset enumeration over a tree's own features, batched over many small trees.

For a tree that splits on ``K`` distinct features, ``m_S(x)`` is computed for
all ``2^K`` subsets at once by one bottom-up pass over a perfect binary "heap"
layout of the tree (a leaf above the bottom level is padded with splits that
copy it), and the Shapley values follow from the subset table.  Rows enter as
distinct split patterns.  This is exact like the LCA kernel and cheaper when
``2^K`` times the number of patterns is small: shallow trees, binary features,
and symmetric (oblivious) trees, whose rows fall into at most ``2^depth``
patterns and whose levels share one split each.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from math import factorial

import numpy as np

from ...models.node_arrays import NodeArrays, cover_fractions, goes_left
from ..batching.sparse import ranges

__all__ = ["HeapBatch", "heap_layout", "oblivious_trees"]


@dataclass(frozen=True)
class HeapBatch:
    """Trees ``(T)`` in heap layout of depth ``D``: internal node ``h`` has children ``2h+1, 2h+2``.

    ``local`` is the player index (``-1`` for padding splits, which never count as known)
    and ``features[t, k]`` the global feature of player ``k`` of tree ``t`` (``-1`` unused).
    """

    depth: int
    n_players: int
    local: np.ndarray  # (T, 2^D - 1)
    feature: np.ndarray  # (T, 2^D - 1) global split feature (0 for padding)
    threshold: np.ndarray
    default_left: np.ndarray
    ratio_left: np.ndarray
    ratio_right: np.ndarray
    leaf_value: np.ndarray  # (T, 2^D)
    features: np.ndarray  # (T, K)
    oblivious: bool

    @property
    def n_trees(self) -> int:
        return self.local.shape[0]

    @property
    def players_per_tree(self) -> np.ndarray:
        return (self.features >= 0).sum(axis=1)

    def select(self, trees: np.ndarray, n_players: int) -> HeapBatch:
        """The batch restricted to ``trees``, all of which have at most ``n_players`` players."""
        take = {
            name: getattr(self, name)[trees]
            for name in ("local", "feature", "threshold", "default_left", "ratio_left", "ratio_right", "leaf_value")
        }
        return replace(self, n_players=n_players, features=self.features[trees, :n_players], **take)


def heap_positions(nodes: NodeArrays) -> np.ndarray:
    """Heap index of every node (children of ``h`` are ``2h+1`` and ``2h+2``); -1 for padding."""
    heap = np.full(nodes.left.shape, -1, dtype=np.int64)
    heap[:, 0] = 0
    for level in range(int(nodes.tree_depth.max())):
        t, u = np.nonzero((nodes.depth == level) & (nodes.left >= 0))
        heap[t, nodes.left[t, u]] = 2 * heap[t, u] + 1
        heap[t, nodes.right[t, u]] = 2 * heap[t, u] + 2
    return heap


# Symmetric trees deeper than this go through the LCA kernel anyway (enumeration costs 2^(depth + players));
# a bound of the layout (heap indices), not a tuned threshold.
MAX_OBLIVIOUS_DEPTH = 15


def oblivious_trees(nodes: NodeArrays) -> np.ndarray:
    """``(T,)`` whether each tree is full and splits every level on one (feature, threshold, default)."""
    depth = nodes.tree_depth
    leaves = nodes.is_leaf & (nodes.depth >= 0)
    full = (leaves.sum(axis=1) == np.left_shift(1, np.minimum(depth, 62))) & (depth > 0)
    result = np.zeros(len(depth), dtype=bool)
    # only full trees of moderate depth can qualify; lay each depth out separately, without padding
    for d in np.unique(depth[full & (depth <= MAX_OBLIVIOUS_DEPTH)]):
        trees = np.flatnonzero(full & (depth == d))
        layout = heap_layout(nodes, trees, int(d))
        same = np.ones(len(trees), dtype=bool)
        for level in range(int(d)):
            first, stop = (1 << level) - 1, (1 << (level + 1)) - 1
            for field in (layout.feature, layout.threshold, layout.default_left):
                same &= np.all(field[:, first:stop] == field[:, first : first + 1], axis=1)
        result[trees] = same
    return result


def heap_layout(nodes: NodeArrays, trees: np.ndarray, depth: int, oblivious: bool = False) -> HeapBatch:
    """Lay out trees ``trees`` (all of depth <= ``depth``) as perfect binary trees of that depth.

    A leaf above the bottom level becomes padding splits (never known, even cover
    fractions) whose descendants all copy its value.
    """
    sub = NodeArrays(*(getattr(nodes, name)[trees] for name in NodeArrays.__dataclass_fields__))
    heap = heap_positions(sub)
    n_trees, n_internal = len(trees), (1 << depth) - 1
    shape = (n_trees, n_internal)
    feature = np.zeros(shape, dtype=np.int64)
    threshold = np.zeros(shape)
    default_left = np.ones(shape, dtype=bool)
    ratio_left = np.full(shape, 0.5)
    ratio_right = np.full(shape, 0.5)
    real = np.zeros(shape, dtype=bool)

    t, u = np.nonzero((sub.left >= 0) & (sub.depth >= 0))
    h = heap[t, u]
    feature[t, h] = sub.feature[t, u]
    threshold[t, h] = sub.threshold[t, u]
    default_left[t, h] = sub.default[t, u] == sub.left[t, u]
    ratio_left[t, h], ratio_right[t, h] = cover_fractions(
        sub.cover[t, u], sub.cover[t, sub.left[t, u]], sub.cover[t, sub.right[t, u]]
    )
    real[t, h] = True
    players, local = _players(feature, real)

    leaf_value = np.zeros((n_trees, 1 << depth))
    t, u = np.nonzero((sub.left < 0) & (sub.depth >= 0))
    span = np.int64(1) << (depth - sub.depth[t, u])  # bottom slots under a leaf at this depth
    first = (heap[t, u] + 1) * span - 1 - n_internal
    leaf_value[np.repeat(t, span), ranges(first, span)] = np.repeat(sub.value[t, u], span)
    return HeapBatch(
        depth,
        players.shape[1],
        local,
        feature,
        threshold,
        default_left,
        ratio_left,
        ratio_right,
        leaf_value,
        players,
        oblivious,
    )


def _players(feature: np.ndarray, real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct split features of each tree (``(T, K)``, -1 padded) and each split's player index."""
    n_trees = feature.shape[0]
    key = np.where(real, feature, -1)
    order = np.sort(key, axis=1)
    distinct = np.concatenate([order[:, :1] >= 0, order[:, 1:] != order[:, :-1]], axis=1) & (order >= 0)
    rank = np.cumsum(distinct, axis=1) - 1
    width = max(1, int(distinct.sum(axis=1).max()))
    players = np.full((n_trees, width), -1, dtype=np.int64)
    t, j = np.nonzero(distinct)
    players[t, rank[t, j]] = order[t, j]
    # a split's player is the rank of its feature among its tree's sorted distinct features
    position = np.argsort(key, axis=1, kind="stable")
    local_sorted = np.where(order >= 0, rank, -1)
    local = np.empty_like(local_sorted)
    np.put_along_axis(local, position, local_sorted, axis=1)
    return players, local


def decision_keys(X: np.ndarray, feature: np.ndarray, threshold: np.ndarray, default_left: np.ndarray, dtype, shift):
    """``(n, T)`` integers ``sum_h left_h << shift[h]``: which way each row goes at splits ``(T, H)``.

    The split columns are copied once, one contiguous row per distinct column (trees share
    features), so each split compares whole rows; NaN handling is skipped when they have none.
    When many splits repeat (binary features, a few borders per feature), each distinct split
    is compared once and the trees read its decisions.
    """
    columns, position = np.unique(feature, return_inverse=True)
    position = position.reshape(feature.shape)
    values = np.array(X[:, columns].T, dtype=dtype, order="C")  # (columns, n)
    threshold = _comparable_threshold(threshold, values.dtype)
    has_nan = bool(np.isnan(values).any())
    key_type = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if np.iinfo(t).bits > max(shift))
    key = np.zeros((feature.shape[0], X.shape[0]), dtype=key_type)
    distinct, split_id = _distinct_splits(position, threshold, default_left if has_nan else None)
    if len(distinct) * 2 <= feature.size:
        left = goes_left(
            values[position.ravel()[distinct]],
            threshold.ravel()[distinct, None],
            default_left.ravel()[distinct, None],
            has_nan,
        )
        table = left.view(np.uint8)  # (distinct, n)
        for h in range(feature.shape[1]):
            key |= table[split_id[:, h]].astype(key_type, copy=False) << key_type(shift[h])
        return np.ascontiguousarray(key.T)
    for h in range(feature.shape[1]):
        left = goes_left(values[position[:, h]], threshold[:, h, None], default_left[:, h, None], has_nan)  # (T, n)
        key |= left.astype(key_type) << key_type(shift[h])
    return np.ascontiguousarray(key.T)


def _distinct_splits(position: np.ndarray, threshold: np.ndarray, default_left: np.ndarray | None):
    """First occurrence of each distinct ``(column, threshold[, default])`` among splits ``(T, H)``
    (flat indices) and each split's rank among them ``(T, H)``."""
    parts = [position.ravel().astype(np.int64), threshold.ravel().astype(np.float64).view(np.int64)]
    if default_left is not None:
        parts.append(default_left.ravel().astype(np.int64))
    order = np.lexsort(parts[::-1])
    stacked = np.stack(parts, axis=1)[order]
    new = np.concatenate([[True], np.any(stacked[1:] != stacked[:-1], axis=1)])
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.cumsum(new) - 1
    return order[new], rank.reshape(position.shape)


def _comparable_threshold(threshold: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Thresholds in the rows' precision when that loses nothing (float32 models): comparing in
    float64 gives the same decisions but runs at half the speed."""
    narrow = threshold.astype(dtype)
    return narrow if np.array_equal(narrow, threshold) else threshold


def heap_keys(batch: HeapBatch, X: np.ndarray, dtype) -> np.ndarray:
    """``(n, T)`` split patterns ``sum_h left_h << pattern_bits[h]`` over heap nodes ``h``."""
    return decision_keys(X, batch.feature, batch.threshold, batch.default_left, dtype, pattern_bits(batch.depth))


@lru_cache(maxsize=16)
def pattern_bits(depth: int) -> np.ndarray:
    """The bit of each heap node's decision in a pattern index: nodes in preorder, the root most
    significant, so that a node's sub-pattern (its decision, then its left subtree's, then its
    right subtree's) is a contiguous run of bits."""
    order = []

    def visit(h: int, level: int) -> None:
        if level < depth:
            order.append(h)
            visit(2 * h + 1, level + 1)
            visit(2 * h + 2, level + 1)

    visit(0, 0)
    bits = np.empty(len(order), dtype=np.int64)
    bits[order] = np.arange(len(order))[::-1]
    bits.flags.writeable = False
    return bits


def pattern_leaf(depth: int, keys: np.ndarray) -> np.ndarray:
    """Bottom slot (0 .. 2^D - 1) that patterns ``keys`` (any shape) reach."""
    bits = pattern_bits(depth)
    node = np.zeros(keys.shape, dtype=np.int64)
    for _ in range(depth):
        left = (keys >> bits[node].astype(keys.dtype)) & 1
        node = 2 * node + 2 - left.astype(np.int64)
    return node - ((1 << depth) - 1)


def subset_values(batch: HeapBatch, left: np.ndarray) -> np.ndarray:
    """``m_S`` for every subset ``S`` of each tree's players and every pattern: ``(T, 2^K, U)``.

    ``left`` holds the split decisions of ``U`` patterns per tree, ``(T, U, 2^D - 1)``.
    """
    n_trees, n_patterns = left.shape[:2]
    subsets = np.arange(1 << batch.n_players)
    values = batch.leaf_value[:, :, None, None]  # (T, nodes, S, U) broadcast
    for level in range(batch.depth - 1, -1, -1):
        nodes = np.arange((1 << level) - 1, (1 << (level + 1)) - 1)
        player = batch.local[:, nodes]  # (T, nodes)
        known = (player[:, :, None] >= 0) & ((subsets[None, None, :] >> np.maximum(player, 0)[:, :, None]) & 1 == 1)
        go_left = np.moveaxis(left[:, :, nodes], 1, 2)[:, :, None, :]  # (T, nodes, 1, U)
        pair = values.reshape(n_trees, len(nodes), 2, *values.shape[2:])
        lo, hi = pair[:, :, 0], pair[:, :, 1]
        unknown = batch.ratio_left[:, nodes, None, None] * lo + batch.ratio_right[:, nodes, None, None] * hi
        values = np.where(known[:, :, :, None], np.where(go_left, lo, hi), unknown)
        values = np.broadcast_to(values, (n_trees, len(nodes), len(subsets), n_patterns))
    return values[:, 0]


def oblivious_level_values(batch: HeapBatch) -> tuple[np.ndarray, np.ndarray]:
    """``m_S`` on every one of the ``2^D`` level-bit patterns, tabulated by the levels ``S`` knows:
    ``(T, 2^D masks, 2^D patterns)``, and the mask of every subset of players ``(T, 2^K)``.

    Pattern bit ``d`` (most significant first) is 1 when the row goes right at level ``d``.
    A subset acts on a symmetric tree only through which *levels* it knows, and the values
    below level ``d`` depend only on the known-bits and pattern bits of the levels below it:
    tabulating by level masks costs ``sum_d 2^d 4^(D-d)`` per tree, against ``D 2^K 2^D``
    for subsets carried through every level.
    """
    n_trees, depth = batch.n_trees, batch.depth
    values = batch.leaf_value[:, :, None, None]  # (T, nodes, known masks below, patterns below)
    for level in range(depth - 1, -1, -1):
        nodes = np.arange((1 << level) - 1, (1 << (level + 1)) - 1)
        pair = values.reshape(n_trees, len(nodes), 2, *values.shape[2:])
        lo, hi = pair[:, :, 0], pair[:, :, 1]
        unknown = batch.ratio_left[:, nodes, None, None] * lo + batch.ratio_right[:, nodes, None, None] * hi
        # axes: node, known bit of this level, masks below, pattern bit of this level, patterns below
        table = np.empty((n_trees, len(nodes), 2, lo.shape[2], 2, lo.shape[3]))
        table[:, :, 0] = unknown[:, :, :, None, :]
        table[:, :, 1, :, 0] = lo
        table[:, :, 1, :, 1] = hi
        values = table.reshape(n_trees, len(nodes), 2 * lo.shape[2], 2 * lo.shape[3])
    return values[:, 0], _level_masks(batch)


def _level_masks(batch: HeapBatch) -> np.ndarray:
    """``(T, 2^K)`` the levels each subset of players knows, level 0 most significant."""
    depth = batch.depth
    player = batch.local[:, (1 << np.arange(depth)) - 1]  # (T, D): one split per level
    subsets = np.arange(1 << batch.n_players)
    known = (player[:, None, :] >= 0) & ((subsets[None, :, None] >> np.maximum(player, 0)[:, None, :]) & 1 == 1)
    return np.sum(known << np.arange(depth)[::-1], axis=2)


@lru_cache(maxsize=32)
def shapley_matrix(n_players: int) -> np.ndarray:
    """``(2^K, K)`` matrix ``W`` with ``phi = G @ W`` for a game ``G`` tabulated on all subsets."""
    size = 1 << n_players
    subsets = np.arange(size)
    popcount = np.array([bin(s).count("1") for s in range(size)])
    weight = np.array([factorial(s) * factorial(n_players - s - 1) / factorial(n_players) for s in range(n_players)])
    matrix = np.zeros((size, n_players))
    for j in range(n_players):
        without = subsets[(subsets >> j) & 1 == 0]
        w = weight[popcount[without]]
        matrix[without | (1 << j), j] += w
        matrix[without, j] -= w
    return matrix
