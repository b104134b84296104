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

import numpy as np

from ...models.forest import TreeTable
from ...tuning import DEFAULT_TUNING, Tuning
from ..batching.sparse import ranges
from ..leaf_paths import Paths, subtree_features, tree_paths, widest_unions
from ..quadrature import exact_nodes

__all__ = ["CROSS", "DIAG", "LIN", "TreePlan", "compile_tree", "node_quadrature", "quadrature_nodes"]

LIN, DIAG, CROSS = 0, 1, 2


@dataclass(frozen=True)
class TreePlan:
    """Row-independent tables of one tree (``K`` features used, ``L`` leaves, ``I`` items).

    Routing: ``split_*`` describe the internal nodes; ``path_split[l, d]`` is the
    internal node at depth ``d`` on the path to leaf ``l`` (``n_splits`` pads),
    ``path_left`` the direction taken, ``path_pow`` the code bit of its feature.

    Items: items ``[0, n_single)`` are linear or diagonal; the rest are cross
    items ordered by ``(side, group)`` so each side of a group is a contiguous
    segment.  ``item_block`` numbers the *blocks*: each single item is one, and the
    cross items of one leaf at one split (its coupled features expanded over
    subsets ``T``) are one; a block's items read the same bits and differ only in
    their coupled factors (``kernels.batching.blocks``).  Factor ``f`` of item ``i`` is
    ``fac_a{b}[i, f] + q * fac_b{b}[i, f]`` where ``b`` is bit ``fac_pos[i, f]``
    of the item's leaf code, and is attributed to local feature ``fac_feat[i, f]``
    (``K`` marks padding).  The first ``item_n_var[i]`` factors depend on their bit,
    the next ones up to ``item_n_fac[i]`` do not, and the rest are ones.  Items on
    the same leaf whose bit-dependent factors read the same bits share a *view*
    (``view_leaf``, ``view_mask``).

    Quadrature: ``n_q`` Gauss-Legendre nodes integrate every item of the tree exactly;
    ``single_q`` suffice for the single items and ``group_q[g]`` for group ``g`` (its
    split's pairs, :func:`node_quadrature`).  Groups are numbered by decreasing ``group_q``,
    so that consecutive groups need the same nodes; ``group_node[g]`` is the split a group
    belongs to (a split's groups are consecutive).  Only the sum of a split's groups has
    ``group_q``'s degree: all of them must be integrated by one rule.
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
    item_n_var: np.ndarray
    item_n_fac: np.ndarray
    item_view: np.ndarray
    view_leaf: np.ndarray
    view_mask: np.ndarray
    n_single: int
    item_group: np.ndarray
    item_side: np.ndarray
    item_block: np.ndarray
    seg_starts: np.ndarray
    group_T: np.ndarray
    single_q: int
    group_q: np.ndarray
    group_node: np.ndarray

    @property
    def n_features(self) -> int:
        return len(self.features)

    @property
    def n_splits(self) -> int:
        return len(self.split_feature)

    @property
    def node_evaluations(self) -> int:
        """Items times the quadrature nodes each is evaluated on: the plan's work per row pattern."""
        return int(self.group_q[self.item_group].sum()) + self.n_single * self.single_q


# Factor kinds: each is affine in q given one pass bit, (a0, b0, a1, b1) below.
_OMIT, _H, _DELTA, _E, _UNKNOWN_ONLY, _CONSTANT, _DIAG, _FREE = range(8)


# Each coefficient is c0 + c1 r + c2 r^2 + c3 R r; rows are kinds, then (a0, b0, a1, b1), then (c0..c3).
# h = q p + (1-q) r,  d = p - r,  e = q p + (1-q) R r,  (1-q) r,  r,  q p + (1-q) r^2, and 1 (omitted).
_TABLE = np.zeros((8, 4, 4))
_TABLE[_OMIT] = [[1, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]]
_TABLE[_H] = [[0, 1, 0, 0], [0, -1, 0, 0], [0, 1, 0, 0], [1, -1, 0, 0]]
_TABLE[_DELTA] = [[0, -1, 0, 0], [0, 0, 0, 0], [1, -1, 0, 0], [0, 0, 0, 0]]
_TABLE[_E] = [[0, 0, 0, 1], [0, 0, 0, -1], [0, 0, 0, 1], [1, 0, 0, -1]]
_TABLE[_UNKNOWN_ONLY] = [[0, 1, 0, 0], [0, -1, 0, 0], [0, 1, 0, 0], [0, -1, 0, 0]]
_TABLE[_CONSTANT] = [[0, 1, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]]
_TABLE[_DIAG] = [[0, 0, 1, 0], [0, 0, -1, 0], [0, 0, 1, 0], [1, 0, -1, 0]]


# Each coefficient is a constant plus a signed x, where x is r, but R r for _E and r^2 for _DIAG (the
# other terms are zeros: the sum is exact).
_CONST = _TABLE[..., 0].T.copy()  # (4 coefficients, 8 kinds)
_SIGN = _TABLE[..., 1:].sum(axis=-1).T.copy()


def _coefficients(kind: np.ndarray, r: np.ndarray, prefix: np.ndarray) -> np.ndarray:
    """``(4, ...)``: ``(a0, b0, a1, b1)`` of factors of the given kinds; ``r`` is the leaf's cover
    product for the feature and ``prefix`` the cover product of its splits above the LCA."""
    x = np.where(kind == _E, prefix * r, np.where(kind == _DIAG, r * r, r))
    out = np.empty((4, *r.shape))
    for i in range(4):  # np.take on the kind tables: fancy indexing is slower
        np.multiply(_SIGN[i].take(kind), x, out=out[i])
        out[i] += _CONST[i].take(kind)
    return out


def compile_tree(
    tree: TreeTable, skip: np.ndarray | None = None, singles: bool = True, tuning: Tuning = DEFAULT_TUNING
) -> TreePlan | None:
    """Tables of one tree, or ``None`` for a single leaf (which contributes nothing).

    ``skip`` (a mask over nodes) leaves out the cross items of the pairs meeting there: the
    per-pair kernel (``kernels.lca.pairs``) or another of the tree's plans evaluates those.  Without
    ``singles`` the linear and diagonal items are kept in the layout (the kernel expects them
    first) but weigh zero, for every plan of a tree but the one that counts them.
    """
    if tree.left[0] < 0:
        return None
    paths = tree_paths(tree)
    feature_ids = np.unique(tree.player[tree.left >= 0])  # the players: output indices
    splits = np.flatnonzero(tree.left >= 0)
    split_index = np.full(tree.n_nodes, -1, dtype=np.int64)
    split_index[splits] = np.arange(len(splits))
    leaf_feature = np.where(paths.features >= 0, np.searchsorted(feature_ids, paths.features), len(feature_ids))
    single = _single_items(tree, paths, leaf_feature)
    if not singles:
        single["item_coef"] = np.zeros_like(single["item_coef"])
    single_q, split_q = node_quadrature(tree, paths, tuning.union_pairs)
    cross = _cross_items(tree, paths, feature_ids, leaf_feature, split_q, skip)
    on_path = paths.node >= 0
    n_local = paths.n_local
    value = tree.value[paths.leaf]
    return TreePlan(
        features=feature_ids.astype(np.int64),
        split_feature=tree.feature[splits].astype(np.int64),
        split_threshold=tree.threshold[splits].astype(np.float64),
        split_default_left=tree.default[splits] == tree.left[splits],
        path_split=np.where(on_path, split_index[np.maximum(paths.node, 0)], len(splits)),
        path_left=np.where(on_path, paths.went_left, True),
        path_pow=np.where(on_path, np.left_shift(np.int64(1), np.maximum(paths.local, 0)), 0),
        full_code=(np.int64(1) << n_local) - 1,
        code_size=n_local,
        leaf_value=value,
        expected_value=float(np.sum(value * np.prod(paths.ratio, axis=1))),
        n_q=max(single_q, int(split_q.max(initial=0))),
        n_single=2 * len(paths.leaf),
        **_factor_layout({name: np.concatenate([single[name], cross[name]]) for name in single}, len(feature_ids)),
        item_group=cross["group"],
        item_side=cross["side"],
        item_block=np.concatenate([np.arange(2 * len(paths.leaf)), 2 * len(paths.leaf) + cross["block"]]),
        seg_starts=cross["seg_starts"],
        group_T=cross["group_T"],
        single_q=single_q,
        group_q=cross["group_q"],
        group_node=cross["group_node"],
    )


def _factor_layout(items: dict, n_features: int) -> dict:
    """Each item's factors reordered: those that depend on their pass bit, then those that do
    not, then factors equal to one; with the counts and the *view* of each item.

    A row enters an item only through the bits of its first ``item_n_var`` factors, so the
    kernel tabulates an item on its leaf code masked to those bits (its view's mask): rows that
    differ elsewhere share one cell.  The bit-free factors are the same for every cell.
    """
    coef = _coefficients(items["factor_kind"], items["r"], items["prefix"])
    a0, b0, a1, b1 = coef
    varying = (a0 != a1) | (b0 != b1)
    one = ~varying & (a0 == 1.0) & (b0 == 0.0)
    order = np.argsort(np.where(varying, 0, 1 + one), axis=1, kind="stable")
    out = {name: items[name] for name in ("item_leaf", "item_kind", "item_coef")}
    flat = order + np.arange(0, order.size, order.shape[1])[:, None]  # np.take beats take_along_axis
    out["fac_a0"], out["fac_b0"], out["fac_a1"], out["fac_b1"] = coef.reshape(4, -1).take(flat, axis=1)
    out["fac_pos"] = order  # the factors' positions on the path before reordering
    out["fac_feat"] = np.where(one, n_features, items["fac_feat"]).take(flat)
    out["item_n_var"] = varying.sum(axis=1)
    out["item_n_fac"] = one.shape[1] - one.sum(axis=1)
    mask = np.where(varying, np.left_shift(np.int64(1), np.arange(one.shape[1])), 0).sum(axis=1)
    out["view_leaf"], out["view_mask"], out["item_view"] = _distinct_pairs(items["item_leaf"], mask)
    return out


def _distinct_pairs(high: np.ndarray, low: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct ``(high, low)`` pairs of non-negative integers in lexicographic order, and each
    pair's rank among them (one packed integer key when both fit: ``unique(axis=0)`` is slow)."""
    bits = int(low.max(initial=0)).bit_length()
    if int(high.max(initial=0)).bit_length() + bits > 62:
        pairs, rank = np.unique(np.stack([high, low], axis=1), axis=0, return_inverse=True)
        return pairs[:, 0], pairs[:, 1], rank.ravel()
    keys, rank = np.unique((high << bits) | low, return_inverse=True)
    return keys >> bits, keys & ((np.int64(1) << bits) - 1), rank.ravel()


def quadrature_nodes(tree: TreeTable, paths: Paths) -> int:
    """Gauss-Legendre nodes that integrate every item of the tree exactly (see :func:`node_quadrature`)."""
    single_q, split_q = node_quadrature(tree, paths)
    return max(single_q, int(split_q.max(initial=0)))


def node_quadrature(tree: TreeTable, paths: Paths, budget: int = DEFAULT_TUNING.union_pairs) -> tuple[int, np.ndarray]:
    """Gauss-Legendre nodes that integrate exactly the single items and, per node, its leaf pairs.

    A single item's integrand (linear or diagonal) is a polynomial of degree below the
    leaf's number of features, and a pair's of degree ``|U| - 1`` in ``q``, with ``U`` the
    union of the two paths' features, so ``ceil(|U| / 2)`` nodes suffice.  The expansion over
    coupled features raises each group's degree, but the groups of a pair sum back to its
    product, and a quadrature rule is linear: what must be exact is the pair's sum, so a
    node's groups take its pairs' bound.  Two leaves meeting at split ``u`` share the
    features of the path down to ``u``, which bounds ``|U|`` by the widest leaf on each side
    minus those.  Deep leaf-wise trees share long prefixes, and every tree's lower splits
    need fewer nodes than its root: a complete tree of depth ``D`` with distinct features
    needs ``D`` at the root, about ``D / 2`` at its last splits and for its single items.
    Below the split the two sides may use the same features too, which that bound counts
    twice: where a search over the pairs' feature sets can lower the rule, it is counted
    exactly (:func:`~shap_rsq.kernels.leaf_paths.widest_unions`, at most ``budget``
    distinct pairs a split).

    Returns ``(single_q, split_q)``: the single items' nodes and ``(n_nodes,)`` nodes per
    split (0 at leaves).
    """
    leaf, depth = np.nonzero(paths.node >= 0)
    u = paths.node[leaf, depth]
    side = np.where(paths.went_left[leaf, depth], 0, 1)
    widest = np.zeros((tree.n_nodes, 2), dtype=np.int64)
    np.maximum.at(widest, (u, side), paths.n_local[leaf])
    shared = np.maximum.accumulate(paths.local, axis=1)[leaf, depth] + 1
    bound = np.zeros(tree.n_nodes, dtype=np.int64)
    # every leaf under u gives the same shared count: the features of the path down to u
    bound[u] = widest[u].sum(axis=1) - shared
    split_q = np.zeros(tree.n_nodes, dtype=np.int64)
    split_q[u] = exact_nodes(widest_unions(paths, bound, budget)[u])
    return exact_nodes(paths.n_local.max()), split_q


def _single_items(tree: TreeTable, paths: Paths, leaf_feature: np.ndarray) -> dict:
    """The linear item (``v_l prod h``) and the leaf-with-itself item (``v_l^2 prod (q p + (1-q) r^2)``)."""
    n_leaves = paths.features.shape[0]
    valid = paths.features >= 0
    kind = np.concatenate([np.where(valid, _H, _OMIT), np.where(valid, _DIAG, _OMIT)])
    r = np.concatenate([paths.r, paths.r])
    value = tree.value[paths.leaf]
    return _item_arrays(
        leaf=np.concatenate([np.arange(n_leaves)] * 2),
        kind=np.repeat([LIN, DIAG], n_leaves),
        coef=np.concatenate([value, value * value]),
        factor_kind=kind,
        r=r,
        prefix=np.ones_like(r),
        feat=np.concatenate([leaf_feature, leaf_feature]),
    )


def _item_arrays(leaf, kind, coef, factor_kind, r, prefix, feat) -> dict:
    """Items with their factors' kinds and cover products; :func:`_factor_layout` turns those
    into coefficients for all items at once."""
    return {
        "item_leaf": leaf.astype(np.int64),
        "item_kind": kind.astype(np.int64),
        "item_coef": coef.astype(np.float64),
        "fac_feat": feat.astype(np.int64),
        "factor_kind": factor_kind,
        "r": r,
        "prefix": prefix,
    }


def _cross_items(
    tree: TreeTable, paths: Paths, feature_ids: np.ndarray, leaf_feature: np.ndarray, split_q: np.ndarray, skip=None
) -> dict:
    """Half-items of every leaf pair meeting at each split, expanded over coupled-feature subsets;
    groups numbered by decreasing quadrature nodes ``split_q`` of their split, then by key."""
    n_feat = len(feature_ids)
    split_local = np.searchsorted(feature_ids, tree.player)  # each split's tree-local feature
    inside = subtree_features(tree, feature_ids)  # (nodes, K)
    padded = np.concatenate([inside, np.zeros((tree.n_nodes, 1), dtype=bool)], axis=1)  # n_feat pads
    # one row per (split u on the path to leaf l): the leaf's half of the pairs meeting at u
    pair_leaf, pair_depth = np.nonzero(paths.node >= 0)
    if skip is not None:
        kept = ~skip[paths.node[pair_leaf, pair_depth]]
        pair_leaf, pair_depth = pair_leaf[kept], pair_depth[kept]
    u = paths.node[pair_leaf, pair_depth]
    side = np.where(paths.went_left[pair_leaf, pair_depth], 0, 1)
    own = np.where(side == 0, tree.left[u], tree.right[u])
    other = np.where(side == 0, tree.right[u], tree.left[u])
    kk = leaf_feature[pair_leaf]  # (P, F) tree-local feature ids, n_feat pads
    in_own = padded[own[:, None], kk]
    in_other = padded[other[:, None], kk]
    valid = kk < n_feat
    is_split = valid & (kk == split_local[u][:, None])
    coupled = valid & in_own & in_other & ~is_split
    kind = np.full(kk.shape, _OMIT)
    kind = np.where(valid & ~in_own & ~in_other & (side[:, None] == 0), _E, kind)  # met only above u
    kind = np.where(valid & in_own & ~coupled, _E, kind)
    kind = np.where(is_split, np.where(side[:, None] == 0, _UNKNOWN_ONLY, _CONSTANT), kind)
    kind = np.where(coupled, _FREE, kind)

    # expand each row over subsets of its coupled features
    n_free = coupled.sum(axis=1)
    copies = np.left_shift(1, n_free)
    row = np.repeat(np.arange(len(u)), copies)
    subset = ranges(0, copies)
    free_rank = np.cumsum(coupled, axis=1) - 1
    chosen = coupled[row] & ((subset[:, None] >> np.maximum(free_rank[row], 0)) & 1 == 1)
    item_kind = np.where(kind[row] == _FREE, np.where(chosen, _DELTA, _H), kind[row])

    # group = (u, T) with T coded as a bitmask over u's coupled features in a canonical order
    coupled_at = padded[tree.left] & padded[tree.right]  # (nodes, K + 1): features coupled at each split
    coupled_at[np.arange(tree.n_nodes), split_local] = False
    canonical = np.cumsum(coupled_at, axis=1) - 1  # position of each feature among the split's coupled
    position = canonical[u[:, None], kk]
    mask = np.sum(np.where(chosen, np.left_shift(np.int64(1), np.maximum(position[row], 0)), 0), axis=1)
    width = int(coupled_at.sum(axis=1)[u].max(initial=0))
    key = u[row] * (np.int64(1) << width) + mask
    keys, group = np.unique(key, return_inverse=True)
    item_side = side[row]
    sides = np.zeros((len(keys), 2), dtype=bool)
    sides[group, item_side] = True
    keep = sides.all(axis=1)
    kept_keys = np.flatnonzero(keep)
    by_nodes = kept_keys[np.argsort(-split_q[keys[kept_keys] >> width], kind="stable")]
    renumber = np.full(len(keys), -1, dtype=np.int64)
    renumber[by_nodes] = np.arange(len(by_nodes))
    kept = keep[group]
    # side-major order: the kernel's per-row side sums then come out as two contiguous (group, q) blocks
    order = np.lexsort((renumber[group[kept]], item_side[kept]))
    items = np.flatnonzero(kept)[order]
    group = renumber[group[items]]
    item_side = item_side[items]
    row = row[items]
    arrays = _item_arrays(
        leaf=pair_leaf[row],
        kind=np.full(len(items), CROSS),
        coef=tree.value[paths.leaf[pair_leaf[row]]],
        factor_kind=item_kind[items],
        r=paths.r[pair_leaf[row]],
        prefix=paths.prefix[pair_leaf[row], pair_depth[row]],
        feat=kk[row],
    )
    arrays["group"] = group
    arrays["side"] = item_side
    arrays["block"] = _ranks(row, len(u))  # the (split, leaf) each item expands
    n_groups = len(by_nodes)
    arrays["seg_starts"] = np.searchsorted(item_side * n_groups + group, np.arange(2 * n_groups))
    arrays["group_T"] = _group_features(keys[by_nodes], width, coupled_at, canonical, n_feat)
    arrays["group_q"] = split_q[keys[by_nodes] >> width]
    arrays["group_node"] = keys[by_nodes] >> width
    return arrays


def _group_features(keys: np.ndarray, width: int, coupled_at: np.ndarray, canonical: np.ndarray, n_feat: int):
    """``(G, T)`` tree-local features expanded in each group, ``n_feat`` padded."""
    split = keys >> width
    mask = keys & ((np.int64(1) << width) - 1)
    coupled = coupled_at[split]
    chosen = coupled & ((mask[:, None] >> np.maximum(canonical[split], 0)) & 1 == 1)
    n_chosen = chosen.sum(axis=1)
    out = np.full((len(keys), max(1, int(n_chosen.max(initial=0)))), n_feat, dtype=np.int64)
    g, k = np.nonzero(chosen)
    out[g, (np.cumsum(chosen, axis=1) - 1)[g, k]] = k
    return out


def _ranks(values: np.ndarray, bound: int) -> np.ndarray:
    """Each value's rank among the distinct ``values`` (integers in ``[0, bound)``), without a sort."""
    present = np.zeros(bound, dtype=bool)
    present[values] = True
    return (np.cumsum(present) - 1)[values]
