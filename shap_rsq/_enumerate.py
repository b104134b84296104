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

from dataclasses import dataclass
from math import factorial

import numpy as np

from ._trees import TreeTable

__all__ = ["HeapBatch", "heap_batch", "is_oblivious"]


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


def is_oblivious(tree: TreeTable) -> bool:
    """Every level of a full tree splits on one (feature, threshold, default direction)."""
    level = {0: 0}
    seen: dict[int, tuple] = {}
    depth_of_leaves = set()
    for node in range(tree.n_nodes):
        if node not in level:
            continue
        if tree.left[node] < 0:
            depth_of_leaves.add(level[node])
            continue
        key = (int(tree.feature[node]), float(tree.threshold[node]), bool(tree.default[node] == tree.left[node]))
        if seen.setdefault(level[node], key) != key:
            return False
        level[int(tree.left[node])] = level[int(tree.right[node])] = level[node] + 1
    return len(depth_of_leaves) == 1


def heap_batch(trees: list[TreeTable], depth: int, oblivious: bool) -> HeapBatch:
    """Lay out trees of depth ``<= depth`` as perfect binary trees of that depth."""
    n_internal = (1 << depth) - 1
    shape = (len(trees), n_internal)
    local = np.full(shape, -1, dtype=np.int64)
    feature = np.zeros(shape, dtype=np.int64)
    threshold = np.zeros(shape)
    default_left = np.ones(shape, dtype=bool)
    ratio_left = np.full(shape, 0.5)
    ratio_right = np.full(shape, 0.5)
    leaf_value = np.zeros((len(trees), 1 << depth))
    players: list[list[int]] = []
    for t, tree in enumerate(trees):
        names: dict[int, int] = {}
        _place(
            tree,
            0,
            0,
            0,
            depth,
            names,
            local[t],
            feature[t],
            threshold[t],
            default_left[t],
            ratio_left[t],
            ratio_right[t],
            leaf_value[t],
        )
        players.append(sorted(names, key=names.get))
    width = max(1, max(len(p) for p in players))
    features = np.full((len(trees), width), -1, dtype=np.int64)
    for t, p in enumerate(players):
        features[t, : len(p)] = p
    return HeapBatch(
        depth, width, local, feature, threshold, default_left, ratio_left, ratio_right, leaf_value, features, oblivious
    )


def _place(
    tree, node, heap, level, depth, names, local, feature, threshold, default_left, ratio_left, ratio_right, leaf_value
) -> None:
    if level == depth:
        leaf_value[heap - ((1 << depth) - 1)] = tree.value[node]
        return
    if tree.left[node] < 0:
        # a leaf above the bottom: a padding split whose two children both copy it
        _place(
            tree,
            node,
            2 * heap + 1,
            level + 1,
            depth,
            names,
            local,
            feature,
            threshold,
            default_left,
            ratio_left,
            ratio_right,
            leaf_value,
        )
        _place(
            tree,
            node,
            2 * heap + 2,
            level + 1,
            depth,
            names,
            local,
            feature,
            threshold,
            default_left,
            ratio_left,
            ratio_right,
            leaf_value,
        )
        return
    k = int(tree.feature[node])
    local[heap] = names.setdefault(k, len(names))
    feature[heap] = k
    threshold[heap] = tree.threshold[node]
    left, right = int(tree.left[node]), int(tree.right[node])
    default_left[heap] = tree.default[node] == left
    cover = tree.cover[node]
    ratio_left[heap] = tree.cover[left] / cover if cover > 0 else 0.5
    ratio_right[heap] = tree.cover[right] / cover if cover > 0 else 0.5
    _place(
        tree,
        left,
        2 * heap + 1,
        level + 1,
        depth,
        names,
        local,
        feature,
        threshold,
        default_left,
        ratio_left,
        ratio_right,
        leaf_value,
    )
    _place(
        tree,
        right,
        2 * heap + 2,
        level + 1,
        depth,
        names,
        local,
        feature,
        threshold,
        default_left,
        ratio_left,
        ratio_right,
        leaf_value,
    )


def heap_decisions(batch: HeapBatch, X: np.ndarray, dtype) -> np.ndarray:
    """``(n, T, 2^D - 1)`` booleans: the row goes left at each heap node."""
    x = X[:, batch.feature.ravel()].astype(dtype).reshape(X.shape[0], *batch.feature.shape)
    return np.where(np.isnan(x), batch.default_left, x <= batch.threshold)


def heap_leaf(batch: HeapBatch, left: np.ndarray) -> np.ndarray:
    """``(n, T)`` leaf index (0 .. 2^D - 1) each row reaches."""
    node = np.zeros(left.shape[:2], dtype=np.int64)
    rows = np.arange(left.shape[0])[:, None]
    trees = np.arange(left.shape[1])[None, :]
    for _ in range(batch.depth):
        node = 2 * node + np.where(left[rows, trees, node], 1, 2)
    return node - ((1 << batch.depth) - 1)


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


def oblivious_subset_values(batch: HeapBatch) -> np.ndarray:
    """``m_S`` for every subset and every one of the ``2^D`` level-bit patterns: ``(T, 2^K, 2^D)``.

    Pattern bit ``d`` (most significant first) is 1 when the row goes right at level ``d``.
    Values at level ``d`` depend only on the bits of the levels below it.
    """
    n_trees = batch.n_trees
    subsets = np.arange(1 << batch.n_players)
    values = batch.leaf_value[:, :, None, None]  # (T, nodes, S, patterns below)
    for level in range(batch.depth - 1, -1, -1):
        nodes = np.arange((1 << level) - 1, (1 << (level + 1)) - 1)
        player = batch.local[:, nodes[0]]  # one split per level
        known = (player[:, None] >= 0) & ((subsets[None, :] >> np.maximum(player, 0)[:, None]) & 1 == 1)
        pair = values.reshape(n_trees, len(nodes), 2, *values.shape[2:])
        lo, hi = pair[:, :, 0], pair[:, :, 1]
        unknown = batch.ratio_left[:, nodes, None, None] * lo + batch.ratio_right[:, nodes, None, None] * hi
        k = known[:, None, :, None]
        values = np.concatenate([np.where(k, lo, unknown), np.where(k, hi, unknown)], axis=3)
        values = np.broadcast_to(values, (n_trees, len(nodes), len(subsets), values.shape[3]))
    return values[:, 0]


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
