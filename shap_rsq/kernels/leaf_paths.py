"""Root-to-leaf paths of one tree as padded arrays: the geometry ``kernels.lca.plan`` compiles from.

For every leaf: the internal node at each depth, the direction taken, the cover
fraction of the edge, each split's feature numbered by first appearance on the
path, and the cover products of each feature's splits (overall and above every
depth).  For every node: which features split somewhere below it, and the most distinct
features two leaves meeting there have on their paths together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models.forest import TreeTable
from ..models.node_arrays import cover_fractions
from .bits import popcount
from .quadrature import exact_nodes

__all__ = ["Paths", "node_depth", "subtree_features", "tree_paths", "widest_pair", "widest_unions"]


@dataclass(frozen=True)
class Paths:
    """Root-to-leaf paths of one tree, ``(L, D)`` arrays padded past each leaf's depth."""

    leaf: np.ndarray  # (L,) node ids
    depth: np.ndarray  # (L,)
    node: np.ndarray  # (L, D) internal node at each depth, -1 past the leaf
    went_left: np.ndarray  # (L, D)
    ratio: np.ndarray  # (L, D) cover fraction of the edge taken (1 past the leaf)
    local: np.ndarray  # (L, D) local feature index of each split on the path, -1 past the leaf
    features: np.ndarray  # (L, F) distinct features per leaf in order of appearance, -1 padded
    r: np.ndarray  # (L, F) cover product of each local feature's splits
    prefix: np.ndarray  # (L, D + 1, F) cover product of its splits above depth d

    @property
    def n_local(self) -> np.ndarray:
        return (self.features >= 0).sum(axis=1)


def tree_paths(tree: TreeTable) -> Paths:
    leaf, leaf_depth, chain = _leaf_chains(tree)
    max_depth = chain.shape[1] - 1
    # down[:, d]: the node at depth d (the leaf itself at its depth), read back from the chain
    back = np.maximum(leaf_depth[:, None] - np.arange(max_depth + 1), 0)
    down = chain.take(back + np.arange(0, chain.size, max_depth + 1)[:, None])
    on_path = np.arange(max_depth) < leaf_depth[:, None]
    node = np.where(on_path, down[:, :-1], -1)
    safe = np.maximum(node, 0)
    went_left = on_path & (down[:, 1:] == tree.left[safe])
    to_left, to_right = cover_fractions(tree.cover[safe], tree.cover[tree.left[safe]], tree.cover[tree.right[safe]])
    ratio = np.where(on_path, np.where(went_left, to_left, to_right), 1.0)
    path_feature = np.where(on_path, tree.player[safe], -1)
    local, features = _local_features(path_feature)
    width = features.shape[1]
    onehot = (local[:, :, None] == np.arange(width)) & on_path[:, :, None]  # (L, D, F)
    factor = np.where(onehot, ratio[:, :, None], 1.0)
    prefix = np.ones((len(leaf), max_depth + 1, width))
    prefix[:, 1:] = np.cumprod(factor, axis=1)
    return Paths(leaf, leaf_depth, node, went_left, ratio, local, features, prefix[:, -1], prefix)


def _leaf_chains(tree: TreeTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The leaves a path reaches, their depths and their ancestors upward, leaf first, ``-1`` past
    the root.

    Walking up from every leaf finds the depths too: a leaf is reached when its chain ends at
    the root (padding nodes have no parent).
    """
    parent = _parents(tree)
    leaf = np.flatnonzero(tree.left < 0)
    steps = [leaf]
    while True:
        above = np.where(steps[-1] >= 0, parent[np.maximum(steps[-1], 0)], -1)
        if (above < 0).all():
            break
        steps.append(above)
    chain = np.stack(steps, axis=1)
    reached = (chain == 0).any(axis=1)
    depth = (chain[reached] >= 0).sum(axis=1) - 1
    return leaf[reached], depth, chain[reached, : int(depth.max()) + 1]


def _parents(tree: TreeTable) -> np.ndarray:
    """Parent of every node (-1 for the root and for unreachable padding)."""
    parent = np.full(tree.n_nodes, -1, dtype=np.int64)
    internal = np.flatnonzero(tree.left >= 0)
    parent[tree.left[internal]] = internal
    parent[tree.right[internal]] = internal
    return parent


def node_depth(tree: TreeTable) -> np.ndarray:
    """``(nodes,)`` depth of each node, ``-1`` for nodes no path reaches."""
    depth = np.full(tree.n_nodes, -1, dtype=np.int64)
    depth[0] = 0
    frontier = np.array([0])
    while frontier.size:
        inner = frontier[tree.left[frontier] >= 0]
        children = np.concatenate([tree.left[inner], tree.right[inner]])
        depth[children] = np.concatenate([depth[inner], depth[inner]]) + 1
        frontier = children
    return depth


def _local_features(path_feature: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per path: each split's local feature index (by first appearance) and the distinct features."""
    valid = path_feature >= 0
    same = (path_feature[:, :, None] == path_feature[:, None, :]) & valid[:, :, None] & valid[:, None, :]
    first = np.argmax(same, axis=2)  # first position on the path with the same feature
    is_first = valid & (first == np.arange(path_feature.shape[1]))
    rank = np.cumsum(is_first, axis=1) - 1
    local = np.where(valid, rank.take(first + np.arange(0, rank.size, rank.shape[1])[:, None]), -1)
    width = max(1, int(is_first.sum(axis=1).max()))
    features = np.full((path_feature.shape[0], width), -1, dtype=np.int64)
    rows, cols = np.nonzero(is_first)
    features[rows, rank[rows, cols]] = path_feature[rows, cols]
    return local, features


def subtree_features(tree: TreeTable, feature_ids: np.ndarray) -> np.ndarray:
    """``(nodes, K)``: whether each tree-local feature splits somewhere in each node's subtree."""
    internal = np.flatnonzero(tree.left >= 0)
    parent = _parents(tree)
    inside = np.zeros((tree.n_nodes, len(feature_ids)), dtype=bool)
    kid = np.searchsorted(feature_ids, tree.player[internal])
    ancestor = internal.copy()
    while ancestor.size:
        inside[ancestor, kid] = True
        keep = parent[ancestor] >= 0
        ancestor, kid = parent[ancestor[keep]], kid[keep]
    return inside


def _feature_words(paths: Paths) -> np.ndarray:
    """``(L, W)`` each leaf's path features as a bit set in 64-bit words (features numbered within the tree)."""
    valid = paths.features >= 0
    ids, local = np.unique(paths.features[valid], return_inverse=True)
    words = np.zeros((paths.features.shape[0], max(1, -(-len(ids) // 64))), dtype=np.uint64)
    leaf = np.nonzero(valid)[0]
    bit = np.left_shift(np.uint64(1), (local % 64).astype(np.uint64))
    np.bitwise_or.at(words, (leaf, local // 64), bit)
    return words


def widest_pair(first: np.ndarray, second: np.ndarray, floor: int, bound: int, budget: int) -> int:
    """The most features in ``a | b`` over rows ``a`` of ``first`` and ``b`` of ``second``
    (``(A, W)``, ``(B, W)`` bit sets in 64-bit words, :func:`~shap_rsq.kernels.bits.bit_words`),
    at least ``floor``: exact, or ``bound`` (an upper bound) once a pair reaches its rule or past
    ``budget`` pairs counted.

    Only the rule ``ceil(|U| / 2)`` of the result matters to a caller, so the search stops as soon
    as it cannot lower that of ``bound``; distinct sets are counted once.
    """
    goal = exact_nodes(bound)
    if exact_nodes(floor) >= goal:
        return bound
    first, second = _distinct(first), _distinct(second)
    if len(first) * len(second) > budget:
        return bound
    best = floor
    step = max(1, (1 << 16) // len(second))  # (step, B, W) temporaries of about a megabyte
    for start in range(0, len(first), step):
        best = max(best, int(popcount(first[start : start + step, None] | second[None]).sum(axis=-1).max()))
        if exact_nodes(best) >= goal:
            return bound
    return best


def _distinct(words: np.ndarray) -> np.ndarray:
    """The distinct rows of ``(n, W)`` words."""
    if words.shape[1] == 1:
        return np.unique(words[:, 0])[:, None]
    return np.unique(words, axis=0)


def widest_unions(paths: Paths, bound: np.ndarray, budget: int) -> np.ndarray:
    """``(nodes,)`` the most distinct features on the paths of two leaves meeting at each split
    (the degree of their pair's integrand plus one), or ``bound[u]`` where that gives the same
    Gauss-Legendre rule or the split has more than ``budget`` distinct pairs of feature sets
    (every split when ``budget`` is 0).

    ``bound`` is an upper bound per split (0 elsewhere).  Two leaves share the features of the
    path down to the split, and below it a feature both sides use counts once: on few features
    deep trees reuse many, and the widest pair has fewer than ``bound`` (a quarter fewer
    quadrature nodes on fully grown trees of 20 features).  The widest leaf of each side is
    tried first, for every split at once; the splits it does not settle count their pairs.
    """
    out = np.asarray(bound, dtype=np.int64).copy()
    leaf, depth = np.nonzero(paths.node >= 0)
    if not len(leaf) or budget < 1:
        return out
    node = paths.node[leaf, depth]
    right = ~paths.went_left[leaf, depth]
    width = paths.n_local[leaf]
    # (split, side) runs of leaves, each run's widest leaf last
    order = np.lexsort((width, right, node))
    node, right, leaf, width = node[order], right[order], leaf[order], width[order]
    starts = np.flatnonzero(np.concatenate([[True], (node[1:] != node[:-1]) | (right[1:] != right[:-1])]))
    stops = np.append(starts[1:], len(order))
    both = np.flatnonzero(node[starts[:-1]] == node[starts[1:]])  # runs of a split's left side
    words = _feature_words(paths)
    split = node[starts[both]]
    left_top, right_top = leaf[stops[both] - 1], leaf[stops[both + 1] - 1]
    floor = popcount(words[left_top] | words[right_top]).sum(axis=-1)  # the two widest leaves' union
    open_ = np.flatnonzero(exact_nodes(floor) < exact_nodes(out[split]))
    for k in open_:
        lo, hi = both[k], both[k] + 1
        out[split[k]] = widest_pair(
            words[leaf[starts[lo] : stops[lo]]],
            words[leaf[starts[hi] : stops[hi]]],
            int(floor[k]),
            int(out[split[k]]),
            budget,
        )
    return out
