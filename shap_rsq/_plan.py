"""Compile one tree into the product-form *items* that the kernel evaluates.

Notation (see ``docs/method.md``).  For leaf ``l`` and feature ``k`` on its path,
``p_lk(x)`` is 1 when ``x`` passes every ``k``-split on the path and ``r_lk`` is
the product of cover fractions of those splits.  With every feature in the game
independently *known* with probability ``q``, the multilinear extension of the
tree's conditional expectation is

    mu(q) = sum_l v_l prod_k h_lk,              h = q p + (1 - q) r,

and that of its square is a sum over ordered leaf pairs of
``v_1 v_2 prod_k F_k`` with ``F_k = q p_1k p_2k + (1 - q) r_1k r_2k``.  Shapley
values are ``phi_j = int_0^1 d/dq_j (...) dq``.

The pair sum is regrouped at each pair's lowest common ancestor ``u``.  Features
met below ``u`` on one side only (or only above ``u``) give factors that belong
to one leaf; the split feature of ``u`` itself does too, because a row cannot
pass both of its branches.  Only features met below ``u`` on *both* sides
couple the two leaves; for them ``F = h_1 h_2 + q(1-q) d_1 d_2`` with
``d = p - r`` and the product over coupled features is expanded over subsets
``T``.  Each ``(u, T)`` becomes a *group* whose value is
``2 prod_{k in T} q(1-q) * A * B``, where ``A`` (``B``) sums one product-form
item per leaf under the left (right) child.  Leaves paired with themselves and
the linear term give one item each.

Every factor of every item is affine in ``q`` given one pass bit ``p_lk(x)``:
``value = a_bit + q * b_bit``.  A row therefore enters only through the
*code* of each leaf, the bitmask of its pass bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ._trees import TreeTable, cover_fractions

__all__ = ["CROSS", "DIAG", "LIN", "TreePlan", "compile_tree"]

LIN, DIAG, CROSS = 0, 1, 2


@dataclass(frozen=True)
class TreePlan:
    """Row-independent tables of one tree (``K`` features used, ``L`` leaves, ``I`` items).

    Routing: ``split_*`` describe the internal nodes; ``path_split[l, d]`` is the
    internal node at depth ``d`` on the path to leaf ``l`` (``n_splits`` pads),
    ``path_left`` the direction taken, ``path_pow`` the code bit of its feature.

    Items: items ``[0, n_single)`` are linear or diagonal; the rest are cross
    items ordered by ``(group, side)`` so each side of a group is a contiguous
    segment.  Factor ``f`` of item ``i`` is
    ``fac_a{b}[i, f] + q * fac_b{b}[i, f]`` where ``b`` is bit ``fac_pos[i, f]``
    of the item's leaf code, and is attributed to local feature ``fac_feat[i, f]``
    (``K`` marks padding).
    """

    features: np.ndarray
    split_feature: np.ndarray
    split_threshold: np.ndarray
    split_default_left: np.ndarray
    path_split: np.ndarray
    path_left: np.ndarray
    path_pow: np.ndarray
    full_code: np.ndarray
    code_size: np.ndarray
    leaf_value: np.ndarray
    expected_value: float
    n_q: int
    item_leaf: np.ndarray
    item_kind: np.ndarray
    item_coef: np.ndarray
    fac_pos: np.ndarray
    fac_feat: np.ndarray
    fac_a0: np.ndarray
    fac_b0: np.ndarray
    fac_a1: np.ndarray
    fac_b1: np.ndarray
    n_single: int
    item_group: np.ndarray
    item_side: np.ndarray
    seg_starts: np.ndarray
    group_T: np.ndarray

    @property
    def n_features(self) -> int:
        return len(self.features)

    @property
    def n_splits(self) -> int:
        return len(self.split_feature)


# Factor kinds as (a0, b0, a1, b1) given the cover product r (and prefix product R).
def _h(r: float) -> tuple[float, float, float, float]:
    return (r, -r, r, 1.0 - r)


def _delta(r: float) -> tuple[float, float, float, float]:
    return (-r, 0.0, 1.0 - r, 0.0)


def _e(r: float, prefix: float) -> tuple[float, float, float, float]:
    return (prefix * r, -prefix * r, prefix * r, 1.0 - prefix * r)


def _unknown_only(r: float) -> tuple[float, float, float, float]:
    return (r, -r, r, -r)


def _constant(r: float) -> tuple[float, float, float, float]:
    return (r, 0.0, r, 0.0)


def _diag(r: float) -> tuple[float, float, float, float]:
    return (r * r, -r * r, r * r, 1.0 - r * r)


@dataclass
class _Leaf:
    value: float
    path: list[tuple[int, bool, float]]  # (node, went_left, cover fraction of the edge taken)
    local: list[int]  # distinct features in order of first appearance
    pos: dict[int, int]
    ratio: list[float]  # r_lk per local feature


@dataclass
class _Split:
    node: int
    depth: int
    leaves: tuple[int, int, int]  # first leaf, first leaf of the right child, end
    prefix: dict[int, float]  # R_k: cover product of k-splits strictly above


def _walk(tree: TreeTable) -> tuple[list[_Leaf], list[_Split], dict[int, frozenset[int]]]:
    """Leaves in depth-first order, internal nodes in preorder, subtree feature sets."""
    leaves: list[_Leaf] = []
    leaf_nodes: list[int] = []
    splits: list[_Split] = []
    stack = [(0, [], {}, 0)]
    while stack:
        node, path, prefix, depth = stack.pop()
        if tree.left[node] < 0:
            leaves.append(_make_leaf(tree, float(tree.value[node]), path))
            leaf_nodes.append(node)
            continue
        split = _Split(node, depth, (len(leaves), -1, -1), prefix)
        splits.append(split)
        k = int(tree.feature[node])
        children = []
        fractions = cover_fractions(tree.cover[node], tree.cover[tree.left[node]], tree.cover[tree.right[node]])
        for child, went_left, rho in ((tree.left[node], True, fractions[0]), (tree.right[node], False, fractions[1])):
            rho = float(rho)
            child_prefix = dict(prefix)
            child_prefix[k] = child_prefix.get(k, 1.0) * rho
            children.append((int(child), [*path, (node, went_left, rho)], child_prefix, depth + 1))
        stack.append(children[1])
        stack.append(children[0])
    _fill_leaf_ranges(tree, leaf_nodes, splits)
    return leaves, splits, _subtree_features(tree)


def _make_leaf(tree: TreeTable, value: float, path: list[tuple[int, bool, float]]) -> _Leaf:
    local: list[int] = []
    pos: dict[int, int] = {}
    ratio: list[float] = []
    for node, _, rho in path:
        k = int(tree.feature[node])
        if k not in pos:
            pos[k] = len(local)
            local.append(k)
            ratio.append(1.0)
        ratio[pos[k]] *= rho
    return _Leaf(value, path, local, pos, ratio)


def _fill_leaf_ranges(tree: TreeTable, leaf_nodes: list[int], splits: list[_Split]) -> None:
    # Leaves are in DFS order, so each subtree owns a contiguous range [first, end) of them.
    first = {node: index for index, node in enumerate(leaf_nodes)}
    end = {node: index + 1 for index, node in enumerate(leaf_nodes)}
    for split in reversed(splits):  # children before parents
        first[split.node] = first[int(tree.left[split.node])]
        end[split.node] = end[int(tree.right[split.node])]
    for split in splits:
        split.leaves = (first[split.node], first[int(tree.right[split.node])], end[split.node])


def _subtree_features(tree: TreeTable) -> dict[int, frozenset[int]]:
    sets: dict[int, frozenset[int]] = {}
    order = []
    stack = [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if tree.left[node] >= 0:
            stack.extend((int(tree.left[node]), int(tree.right[node])))
    for node in reversed(order):
        if tree.left[node] < 0:
            sets[node] = frozenset()
        else:
            sets[node] = sets[int(tree.left[node])] | sets[int(tree.right[node])] | {int(tree.feature[node])}
    return sets


class _ItemList:
    """Growing list of items; factors are (local position, global feature, a0, b0, a1, b1)."""

    def __init__(self) -> None:
        self.leaf: list[int] = []
        self.kind: list[int] = []
        self.coef: list[float] = []
        self.factors: list[list[tuple]] = []
        self.group: list[int] = []
        self.side: list[int] = []

    def add(self, leaf: int, kind: int, coef: float, factors: list[tuple], group: int = -1, side: int = 0):
        self.leaf.append(leaf)
        self.kind.append(kind)
        self.coef.append(coef)
        self.factors.append(factors)
        self.group.append(group)
        self.side.append(side)


def _single_items(leaves: list[_Leaf], items: _ItemList) -> None:
    for index, leaf in enumerate(leaves):
        lin = [(j, k, *_h(leaf.ratio[j])) for j, k in enumerate(leaf.local)]
        diag = [(j, k, *_diag(leaf.ratio[j])) for j, k in enumerate(leaf.local)]
        items.add(index, LIN, leaf.value, lin)
        items.add(index, DIAG, leaf.value * leaf.value, diag)


def _cross_items(
    tree: TreeTable,
    leaves: list[_Leaf],
    splits: list[_Split],
    subtree: dict[int, frozenset[int]],
    items: _ItemList,
    groups: dict[tuple[int, tuple[int, ...]], int],
) -> None:
    for split in splits:
        u = split.node
        k_u = int(tree.feature[u])
        below = (subtree[int(tree.left[u])], subtree[int(tree.right[u])])
        coupled = (below[0] & below[1]) - {k_u}
        lo, mid, hi = split.leaves
        for side, leaf_range in ((0, range(lo, mid)), (1, range(mid, hi))):
            for index in leaf_range:
                leaf = leaves[index]
                fixed, free = _lca_factors(leaf, side, k_u, coupled, below, split.prefix)
                for size in range(len(free) + 1):
                    for subset in combinations(free, size):
                        chosen = set(subset)
                        factors = fixed + [
                            (j, k, *(_delta(leaf.ratio[j]) if (j, k) in chosen else _h(leaf.ratio[j]))) for j, k in free
                        ]
                        key = (u, tuple(sorted(k for _, k in subset)))
                        group = groups.setdefault(key, len(groups))
                        items.add(index, CROSS, leaf.value, factors, group, side)


def _lca_factors(leaf: _Leaf, side: int, k_u: int, coupled, below, prefix) -> tuple[list, list]:
    """Factors of a leaf's half of the pairs meeting at ``u``; ``free`` lists coupled features."""
    fixed: list[tuple] = []
    free: list[tuple[int, int]] = []
    for j, k in enumerate(leaf.local):
        r = leaf.ratio[j]
        if k == k_u:
            # pairs split at u: the known branch needs both directions at once, so only (1-q) r1 r2 is left
            fixed.append((j, k, *(_unknown_only(r) if side == 0 else _constant(r))))
        elif k in coupled:
            free.append((j, k))
        elif k in below[side] or (k not in below[1 - side] and side == 0):
            fixed.append((j, k, *_e(r, prefix.get(k, 1.0))))
    return fixed, free


def compile_tree(tree: TreeTable) -> TreePlan | None:
    """Tables of one tree, or ``None`` for a single leaf (which contributes nothing)."""
    if tree.left[0] < 0:
        return None
    leaves, splits, subtree = _walk(tree)
    items = _ItemList()
    _single_items(leaves, items)
    groups: dict[tuple[int, tuple[int, ...]], int] = {}
    _cross_items(tree, leaves, splits, subtree, items, groups)
    return _assemble(tree, leaves, splits, items, groups)


def _assemble(tree, leaves, splits, items, groups) -> TreePlan:
    features = np.array(sorted({k for leaf in leaves for k in leaf.local}), dtype=np.int64)
    local_of = {int(k): i for i, k in enumerate(features)}
    n_feat = len(features)
    split_index = {s.node: i for i, s in enumerate(splits)}

    depth = max(len(leaf.path) for leaf in leaves)
    n_leaves = len(leaves)
    path_split = np.full((n_leaves, depth), len(splits), dtype=np.int64)
    path_left = np.ones((n_leaves, depth), dtype=bool)
    path_pow = np.zeros((n_leaves, depth), dtype=np.int64)
    for index, leaf in enumerate(leaves):
        for d, (node, went_left, _) in enumerate(leaf.path):
            path_split[index, d] = split_index[node]
            path_left[index, d] = went_left
            path_pow[index, d] = 1 << leaf.pos[int(tree.feature[node])]
    code_size = np.array([len(leaf.local) for leaf in leaves], dtype=np.int64)
    expected = sum(leaf.value * np.prod([rho for _, _, rho in leaf.path]) for leaf in leaves)

    group_items = _keep_two_sided(items, len(groups))
    order = _item_order(items, group_items)
    tables = _factor_tables(items, order, local_of, n_feat)
    cross = _cross_segments(items, order, group_items, groups, local_of, n_feat)

    split_nodes = np.array([s.node for s in splits], dtype=np.int64)
    return TreePlan(
        features=features,
        split_feature=tree.feature[split_nodes].astype(np.int64),
        split_threshold=tree.threshold[split_nodes].astype(np.float64),
        split_default_left=tree.default[split_nodes] == tree.left[split_nodes],
        path_split=path_split,
        path_left=path_left,
        path_pow=path_pow,
        full_code=(np.int64(1) << code_size) - 1,
        code_size=code_size,
        leaf_value=np.array([leaf.value for leaf in leaves]),
        expected_value=float(expected),
        n_q=int(max(1, code_size.max())),
        item_leaf=np.array(items.leaf, dtype=np.int64)[order],
        item_kind=np.array(items.kind, dtype=np.int64)[order],
        item_coef=np.array(items.coef, dtype=np.float64)[order],
        n_single=2 * n_leaves,
        **tables,
        **cross,
    )


def _keep_two_sided(items: _ItemList, n_groups: int) -> np.ndarray:
    """Per group, whether both sides received items (a one-sided group sums to nothing)."""
    seen = np.zeros((n_groups, 2), dtype=bool)
    for group, side in zip(items.group, items.side, strict=True):
        if group >= 0:
            seen[group, side] = True
    return seen.all(axis=1)


def _item_order(items: _ItemList, keep: np.ndarray) -> np.ndarray:
    group = np.array(items.group)
    side = np.array(items.side)
    single = np.flatnonzero(group < 0)
    cross = np.flatnonzero((group >= 0) & keep[np.maximum(group, 0)])
    cross = cross[np.lexsort((side[cross], group[cross]))]
    return np.concatenate([single, cross])


def _factor_tables(items: _ItemList, order: np.ndarray, local_of: dict, n_feat: int) -> dict:
    width = max(1, max(len(items.factors[i]) for i in order))
    shape = (len(order), width)
    pos = np.zeros(shape, dtype=np.int64)
    feat = np.full(shape, n_feat, dtype=np.int64)
    a0 = np.ones(shape)
    b0 = np.zeros(shape)
    a1 = np.ones(shape)
    b1 = np.zeros(shape)
    for row, i in enumerate(order):
        for f, (j, k, *coef) in enumerate(items.factors[i]):
            pos[row, f] = j
            feat[row, f] = local_of[k]
            a0[row, f], b0[row, f], a1[row, f], b1[row, f] = coef
    return {"fac_pos": pos, "fac_feat": feat, "fac_a0": a0, "fac_b0": b0, "fac_a1": a1, "fac_b1": b1}


def _cross_segments(items, order, keep, groups, local_of, n_feat) -> dict:
    n_single = int(np.sum(np.array(items.group)[order] < 0))
    cross = order[n_single:]
    old_group = np.array(items.group, dtype=np.int64)[cross]
    side = np.array(items.side, dtype=np.int64)[cross]
    kept = np.flatnonzero(keep)
    renumber = np.full(len(keep), -1, dtype=np.int64)
    renumber[kept] = np.arange(len(kept))
    group = renumber[old_group]

    # every kept group has both sides, so its segments are 2g (left leaves) and 2g + 1 (right)
    seg_starts = np.searchsorted(group * 2 + side, np.arange(2 * len(kept)))
    subsets = {g: key[1] for key, g in groups.items()}
    t_width = max([len(subsets[g]) for g in kept], default=0)
    group_T = np.full((len(kept), max(1, t_width)), n_feat, dtype=np.int64)
    for new, g in enumerate(kept):
        for t, k in enumerate(subsets[g]):
            group_T[new, t] = local_of[k]
    return {
        "item_group": group,
        "item_side": side,
        "seg_starts": seg_starts,
        "group_T": group_T,
    }
