"""Root-to-leaf paths of one tree as padded arrays: the geometry ``kernels.lca.plan`` compiles from.

For every leaf: the internal node at each depth, the direction taken, the cover
fraction of the edge, each split's feature numbered by first appearance on the
path, and the cover products of each feature's splits (overall and above every
depth).  For every node: which features split somewhere below it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models.forest import TreeTable
from ..models.node_arrays import cover_fractions

__all__ = ["Paths", "node_depth", "subtree_features", "tree_paths"]


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
    parent = _parents(tree)
    depth = node_depth(tree)
    leaf = np.flatnonzero((tree.left < 0) & (depth >= 0))
    max_depth = int(depth[leaf].max())
    # ancestors upward from each leaf, then re-indexed by depth
    chain = np.full((len(leaf), max_depth + 1), -1, dtype=np.int64)
    chain[:, 0] = leaf
    for step in range(1, max_depth + 1):
        chain[:, step] = np.where(chain[:, step - 1] >= 0, parent[np.maximum(chain[:, step - 1], 0)], -1)
    leaf_depth = depth[leaf]
    d = np.arange(max_depth)
    on_path = d[None, :] < leaf_depth[:, None]
    rows = np.arange(len(leaf))[:, None]
    node = np.where(on_path, chain[rows, np.clip(leaf_depth[:, None] - d[None, :], 0, max_depth)], -1)
    child = np.where(on_path, chain[rows, np.clip(leaf_depth[:, None] - d[None, :] - 1, 0, max_depth)], -1)
    safe = np.maximum(node, 0)
    went_left = on_path & (child == tree.left[safe])
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
    local = np.where(valid, np.take_along_axis(rank, first, axis=1), -1)
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
