"""The per-pair product kernel: the cross term of a tree's squared game, one leaf pair at a time.

For two leaves ``a``, ``b`` meeting at split ``u`` the multilinear extension of
``v_a v_b m_a m_b`` is ``v_a v_b prod_k F_k`` with ``F_k = q p_ak p_bk + (1 - q) r_ak r_bk``
over the features ``k`` on either path (``p = r = 1`` off the path, so ``F_k = 1`` there).  The
LCA kernel expands the factors of features that both sides reuse below ``u`` into
``2^coupled`` separable items; here the product is taken as it stands, so a pair costs
``|features| x Q`` whatever the coupling.  Its slope along ``q_k`` is
``(p_ak p_bk - r_ak r_bk) prod_{j != k} F_j``: the product times ``b / F_k``, from the
logarithms of the factors (:func:`_block_slopes`), or "all factors but one" from prefix and
suffix products where a cover fraction is zero (:func:`_direct_slopes`).

At node ``u`` the pairs are (left leaves) x (right leaves), and only the features met on the
paths of ``u``'s leaves enter (``K_u``); their integrand has degree below ``K_u``, so
``ceil(K_u / 2)`` Gauss-Legendre nodes are exact.  Which nodes take this kernel is decided by
``engine.routing.choose_pair_nodes`` on the costs of :func:`node_costs`; the other nodes keep
their LCA items (``kernels.lca.hybrid``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...models.forest import TreeTable
from ...tuning import DEFAULT_TUNING, Tuning
from ..leaf_paths import Paths, node_depth, subtree_features, tree_paths
from ..quadrature import exact_nodes, gauss_legendre
from ..row_patterns import split_decisions
from .plan import node_quadrature

__all__ = ["NodeCosts", "PairPlan", "compile_pairs", "coupled_features", "node_costs", "pair_values"]


@dataclass(frozen=True)
class NodeCosts:
    """Per node of one tree: what its leaf pairs cost in either kernel (per distinct row pattern)."""

    items: np.ndarray  # (nodes,) LCA items of the pairs meeting there: sum_leaves 2^(coupled on the leaf's path)
    pairs: np.ndarray  # (nodes,) |left leaves| x |right leaves|
    width: np.ndarray  # (nodes,) features on the paths of the node's leaves
    n_q: int  # quadrature nodes of the whole tree's LCA plan (bound: ceil(most features on a path / 2))


@dataclass(frozen=True)
class PairPlan:
    """Row-independent tables of the pairs of one tree at its chosen nodes (leaves in DFS order)."""

    features: np.ndarray  # (K,) feature ids of the tree
    split_node: np.ndarray  # (S,) internal nodes
    split_feature: np.ndarray  # (S,)
    split_threshold: np.ndarray  # (S,)
    split_default_left: np.ndarray  # (S,)
    path_split: np.ndarray  # (L, D) split index at each depth of each leaf's path (S pads)
    path_left: np.ndarray  # (L, D)
    path_kid: np.ndarray  # (L, D) tree-local feature of each split (K pads)
    cover: np.ndarray  # (L, K) cover product of each feature's splits on the path (1 off the path)
    value: np.ndarray  # (L,)
    nodes: tuple  # per chosen node: (left leaves slice, right leaves slice, feature columns, quadrature nodes)

    @property
    def n_features(self) -> int:
        return len(self.features)


def _dfs_leaves(tree: TreeTable) -> np.ndarray:
    """Leaves in depth-first order, so that every node's leaves are one contiguous run."""
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        if tree.left[node] < 0:
            order.append(node)
        else:
            stack.extend((int(tree.right[node]), int(tree.left[node])))
    return np.array(order, dtype=np.int64)


def _leaf_ranges(tree: TreeTable, leaves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[lo, hi)`` of every node's run of leaves in the depth-first order ``leaves``."""
    lo = np.zeros(tree.n_nodes, dtype=np.int64)
    hi = np.zeros(tree.n_nodes, dtype=np.int64)
    lo[leaves] = np.arange(len(leaves))
    hi[leaves] = np.arange(len(leaves)) + 1
    depth = node_depth(tree)
    internal = np.flatnonzero((tree.left >= 0) & (depth >= 0))
    for node in internal[np.argsort(-depth[internal], kind="stable")]:  # children before parents
        lo[node] = lo[tree.left[node]]
        hi[node] = hi[tree.right[node]]
    return lo, hi


def _ordered_paths(tree: TreeTable) -> tuple[Paths, np.ndarray, np.ndarray]:
    """The tree's paths with leaves in DFS order, its feature ids and each leaf's features ``(L, K)``."""
    paths = tree_paths(tree)
    by_dfs = np.searchsorted(paths.leaf, _dfs_leaves(tree))  # paths list leaves by node id
    paths = Paths(*(getattr(paths, name)[by_dfs] for name in Paths.__dataclass_fields__))
    feature_ids = np.unique(tree.player[tree.left >= 0])  # the players: output indices
    k = np.where(paths.features >= 0, np.searchsorted(feature_ids, paths.features), len(feature_ids))
    has = np.zeros((len(paths.leaf), len(feature_ids) + 1), dtype=bool)
    np.put_along_axis(has, k, True, axis=1)
    return paths, feature_ids, has[:, :-1]


def coupled_features(tree: TreeTable, feature_ids: np.ndarray) -> np.ndarray:
    """``(nodes, K)``: the features both sides of each split use below it, its own split feature
    aside (a row cannot pass both of its branches): those the LCA kernel expands over subsets."""
    inside = subtree_features(tree, feature_ids)
    internal = np.flatnonzero(tree.left >= 0)
    coupled = np.zeros((tree.n_nodes, len(feature_ids)), dtype=bool)
    coupled[internal] = inside[tree.left[internal]] & inside[tree.right[internal]]
    coupled[internal, np.searchsorted(feature_ids, tree.player[internal])] = False
    return coupled


def node_costs(tree: TreeTable) -> NodeCosts:
    """What each node's leaf pairs cost in the LCA kernel (items) and here (pairs, width)."""
    paths, feature_ids, has = _ordered_paths(tree)
    lo, hi = _leaf_ranges(tree, paths.leaf)
    internal = np.flatnonzero(tree.left >= 0)
    coupled = coupled_features(tree, feature_ids)
    leaf, depth = np.nonzero(paths.node >= 0)
    u = paths.node[leaf, depth]
    n_coupled = np.sum(coupled[u] & has[leaf], axis=1)
    items = np.bincount(u, weights=np.exp2(n_coupled), minlength=tree.n_nodes)
    pairs = np.zeros(tree.n_nodes)
    left, right = tree.left[internal], tree.right[internal]
    pairs[internal] = (hi[left] - lo[left]).astype(float) * (hi[right] - lo[right])
    width = np.zeros(tree.n_nodes, dtype=np.int64)
    cumulative = np.concatenate([np.zeros((1, has.shape[1]), int), np.cumsum(has, axis=0)])
    width[internal] = np.sum(cumulative[hi[internal]] - cumulative[lo[internal]] > 0, axis=1)
    n_q = exact_nodes(paths.n_local.max())
    return NodeCosts(items, pairs, width, n_q)


def compile_pairs(tree: TreeTable, chosen: np.ndarray, tuning: Tuning = DEFAULT_TUNING) -> PairPlan:
    """Tables of the pairs meeting at the ``chosen`` nodes of one tree, each node with the
    quadrature nodes its pairs need (:func:`~shap_rsq.kernels.lca.plan.node_quadrature`)."""
    paths, feature_ids, has = _ordered_paths(tree)
    split_q = node_quadrature(tree, paths, tuning.union_pairs)[1] if chosen.any() else None
    lo, hi = _leaf_ranges(tree, paths.leaf)
    splits = np.flatnonzero(tree.left >= 0)
    split_index = np.full(tree.n_nodes, len(splits), dtype=np.int64)
    split_index[splits] = np.arange(len(splits))
    on_path = paths.node >= 0
    n_feat = len(feature_ids)
    kid = np.where(on_path, np.searchsorted(feature_ids, tree.player[np.maximum(paths.node, 0)]), n_feat)
    cover = np.ones((len(paths.leaf), n_feat + 1))
    rows = np.arange(len(paths.leaf))
    for d in range(paths.node.shape[1]):  # each leaf meets a feature at most once per depth
        cover[rows, kid[:, d]] *= np.where(on_path[:, d], paths.ratio[:, d], 1.0)
    cumulative = np.concatenate([np.zeros((1, n_feat), int), np.cumsum(has, axis=0)])
    nodes = []
    for u in np.flatnonzero(chosen):
        left, right = tree.left[u], tree.right[u]
        columns = np.flatnonzero(cumulative[hi[u]] - cumulative[lo[u]] > 0)
        n_q = min(int(split_q[u]), exact_nodes(len(columns)))
        nodes.append((slice(lo[left], hi[left]), slice(lo[right], hi[right]), columns, n_q))
    return PairPlan(
        features=feature_ids.astype(np.int64),
        split_node=splits,
        split_feature=tree.feature[splits].astype(np.int64),
        split_threshold=tree.threshold[splits].astype(np.float64),
        split_default_left=tree.default[splits] == tree.left[splits],
        path_split=np.where(on_path, split_index[np.maximum(paths.node, 0)], len(splits)),
        path_left=np.where(on_path, paths.went_left, True),
        path_kid=kid,
        cover=cover[:, :n_feat],
        value=tree.value[paths.leaf].astype(np.float64),
        nodes=tuple(nodes),
    )


def passes(
    plan: PairPlan, X: np.ndarray, dtype=None, rows: np.ndarray | None = None, extended: bool = False
) -> np.ndarray:
    """``(n, L, K)`` booleans: the row passes every split on feature ``k`` of leaf ``l``'s path (of
    the rows ``rows`` of ``X``, when given: only their split columns are read).

    With ``extended``, ``(n, L + 1, K + 1)``: a phantom leaf and a pad column that every row
    passes, written in place (no ``(n, L, D)`` array and no copy to extend).
    """
    left = split_decisions(plan, X, dtype, rows)  # the plan has the split fields the LCA kernel routes by
    n_leaves = plan.path_kid.shape[0]
    failed = np.zeros((len(left), n_leaves + int(extended), plan.n_features + 1), dtype=bool)
    leaves = np.arange(n_leaves)
    for d in range(plan.path_kid.shape[1]):
        failed[:, leaves, plan.path_kid[:, d]] |= left[:, plan.path_split[:, d]] != plan.path_left[:, d]
    if extended:
        failed[:, :, -1] = False  # the pad column (``K`` pads the paths)
        return np.logical_not(failed, out=failed)
    return ~failed[:, :, :-1]


def pair_values(plan: PairPlan, bits: np.ndarray, w_quad: np.ndarray | None, block: int) -> np.ndarray:
    """Shapley values of the pairs' part of ``m^2``, ``(K,)`` summed with row weights ``w_quad``,
    or ``(n, K)`` per row with unit weights when ``w_quad`` is None.  ``bits`` come from
    :func:`passes`; temporaries hold about ``block`` floats each."""
    n = bits.shape[0]
    out = np.zeros(plan.n_features) if w_quad is not None else np.zeros((n, plan.n_features))
    for a_leaves, b_leaves, columns, n_q in plan.nodes:
        n_a, n_b = a_leaves.stop - a_leaves.start, b_leaves.stop - b_leaves.start
        side_a = _side(plan, bits, a_leaves, columns)
        side_b = _side(plan, bits, b_leaves, columns)
        # every product r_a r_b of the node positive (none rounds to zero): logarithms exist
        by_logs = bool(side_a[1].min(initial=1.0) * side_b[1].min(initial=1.0) > 0.0)
        slopes = _block_slopes if by_logs else _direct_slopes
        if by_logs:
            # rows first: each pair's matrix products run over a long block of rows
            per_pair_row = max(len(columns), n_q)
            row_step = max(1, min(n, block // per_pair_row))
            # (pairs, rows, features or nodes) temporaries, and the pairs' own (pairs, features, nodes)
            pairs_fit = max(1, min(block // (per_pair_row * row_step), block // (len(columns) * n_q)))
            b_step = max(1, min(n_b, pairs_fit))
            a_step = max(1, min(n_a, pairs_fit // b_step))
        else:  # temporaries of (features, pairs x rows, nodes)
            per_b = len(columns) * n_q
            b_step = max(1, min(n_b, block // per_b))
            a_step = max(1, min(n_a, block // (per_b * b_step)))
            row_step = max(1, block // (per_b * b_step * a_step))
        for r0 in range(0, n, row_step):
            rows = slice(r0, min(n, r0 + row_step))
            weight = None if w_quad is None else w_quad[rows]
            for a0 in range(0, n_a, a_step):
                a = slice(a0, a0 + a_step)
                for b0 in range(0, n_b, b_step):
                    b = slice(b0, b0 + b_step)
                    part = slopes(side_a, side_b, rows, a, b, n_q, weight)
                    if w_quad is None:
                        out[rows, columns] += part.T
                    else:
                        out[columns] += part
    return out


def _side(plan: PairPlan, bits: np.ndarray, leaves: slice, columns: np.ndarray):
    """One side of a node: its leaves' pass bits ``(A, n, Kc)``, covers ``(A, Kc)`` and values.

    Leaf-major and contiguous, so that a block's bits are one run per leaf (the gather that picks
    the columns leaves them feature-major)."""
    side_bits = np.ascontiguousarray(bits[:, leaves][:, :, columns].transpose(1, 0, 2))
    return side_bits, plan.cover[leaves][:, columns], plan.value[leaves]


def _block_slopes(side_a, side_b, rows, a, b, n_q, weight) -> np.ndarray:
    """Integrated slopes ``sum_pairs 2 v_a v_b (p_a p_b - r_a r_b) prod_{j != k} F_j`` of one block:
    ``(Kc,)`` weighted by rows (``weight``) or ``(Kc, rows)``.

    Given its bit, ``F_k`` is ``F1 = q + (1 - q) rr`` or ``F0 = (1 - q) rr`` (``rr = r_a r_b``,
    ``1`` off both paths), so a pair's product is ``prod_k F0_k`` times ``F1_k / F0_k`` over the
    features whose bit is 1: one matrix product of the bits with the logarithms, then one
    exponential, where prefix and suffix products took about six passes over every (feature,
    pair, row, node).  The slope along ``k`` is the product times ``b / F_k``: ``-1 / (1 - q)``
    at bit 0 for every feature, ``(1 - rr) / F1`` at bit 1, between ``-1 / (1 - q)`` and ``1 / q``
    (no digits lost by dividing).  Summed over rows (``weight``), every feature's slope is the
    bit-0 slope, shared by all features, plus its bit times the step to the bit-1 slope: the bits
    enter through one matrix product per pair, bits by product, and no ``(pairs, rows, features)``
    array of slopes is formed (per row the slopes are picked by bit: adding the step there cancels
    digits of the slopes far below the largest).  A pair with a zero cover fraction has
    ``F0 = 0`` and no logarithm: its node takes :func:`_direct_slopes`.
    """
    bits_a, cover_a, value_a = side_a
    bits_b, cover_b, value_b = side_b
    q, gl = gauss_legendre(n_q)
    coef = 2.0 * (value_a[a][:, None] * value_b[b][None, :]).ravel()  # (pairs,)
    if weight is None:
        return _per_row_slopes(bits_a[a, rows], bits_b[b, rows], cover_a[a], cover_b[b], coef, q, gl)
    at_zero = -1.0 / (1.0 - q)  # every feature's slope at bit 0, over b / F_k
    gain, f1, rr = _log_gains(cover_a[a], cover_b[b], q)
    both = _joint_bits(bits_a[a, rows], bits_b[b, rows])
    n_pairs, n_rows, n_k = both.shape[0], both.shape[1], both.shape[2] - 1
    product = np.exp(np.matmul(both, gain), out=np.empty((n_pairs, n_rows, len(q))))  # (pairs, n, Q)
    # summed over rows: the bit-0 slope for every feature, plus each feature's bit times the step
    # to its bit-1 slope; the bits (and the ones, for the bit-0 part) enter by one matrix product
    product *= weight[:, None] * gl
    by_bits = np.matmul(both.transpose(0, 2, 1), product)  # (pairs, Kc + 1, Q): sum_rows bit x product
    shared = coef @ (by_bits[:, n_k] @ at_zero)
    steps = by_bits[:, :n_k]
    steps *= np.divide((1.0 - rr)[:, :, None], f1, out=f1) - at_zero  # the slope at bit 1 minus at bit 0
    return coef @ steps.sum(axis=2) + shared


def _per_row_slopes(bits_a, bits_b, cover_a, cover_b, coef, q, gl) -> np.ndarray:
    """:func:`_block_slopes` per row, ``(Kc, rows)``: each row's slopes picked by its bits (adding
    the step to the bit-1 slope instead, as summed over rows, cancels digits of slopes far below
    the largest)."""
    gain, f1, rr = _log_gains(cover_a, cover_b, q)
    n_k = rr.shape[1]
    (n_a, n_rows, _), n_b = bits_a.shape, bits_b.shape[0]
    joint = np.empty((n_a, n_b, n_rows, n_k))  # both bits, as floats for the matrix products
    np.logical_and(bits_a[:, None], bits_b[None], out=joint)
    joint = joint.reshape(n_a * n_b, n_rows, n_k)  # (pairs, n, Kc)
    log_product = np.matmul(joint, gain[:, :n_k])  # (pairs, n, Q)
    log_product += (gain[:, n_k] + np.log(gl))[:, None, :]  # the quadrature weights (all > 0) in
    product = np.exp(log_product, out=log_product)
    at_one = np.divide((1.0 - rr)[:, :, None], f1, out=f1)  # (pairs, Kc, Q)
    at_zero = product @ (-1.0 / (1.0 - q))  # (pairs, n): every feature's slope at bit 0
    # two masked sums over the pairs, of the bit-1 slopes where the bit is 1 and of the bit-0
    # slope where it is 0: the same terms as picking each (pair, row, feature)'s slope by its bit
    # and summing, without that (pairs, n, Kc) selection (np.where with a broadcast operand ran
    # at 3.5 ns an element, four times the matrix product that makes the bit-1 slopes)
    slopes = np.matmul(product, at_one.transpose(0, 2, 1))  # (pairs, n, Kc)
    slopes *= joint  # times 0 or 1: exact
    at_ones = (coef @ slopes.reshape(len(coef), -1)).reshape(n_rows, n_k)
    not_joint = np.subtract(1.0, joint, out=joint)
    at_zeros = np.einsum("pn,pnk->nk", coef[:, None] * at_zero, not_joint)
    return (at_ones + at_zeros).T


def _log_gains(cover_a: np.ndarray, cover_b: np.ndarray, q: np.ndarray):
    """``(pairs, Kc + 1, Q)`` logarithms that a pair's bits (and a one) multiply, ``F1`` and ``rr``.

    Row ``k < Kc`` is ``log F1_k - log F0_k``, from one logarithm per entry (``log F0 = log r_a +
    log r_b + log(1 - q)``); the last row is ``sum_k log F0_k``, from each leaf's own sum.  These
    row-independent passes set the cost of few rows.
    """
    log_a, log_b = np.log(cover_a), np.log(cover_b)  # all covers > 0
    rr = (cover_a[:, None, :] * cover_b[None, :, :]).reshape(-1, cover_a.shape[1])  # (pairs, Kc)
    n_pairs, n_k = rr.shape
    f1 = rr[:, :, None] * (1.0 - q)  # (pairs, Kc, Q)
    f1 += q
    gain = np.empty((n_pairs, n_k + 1, len(q)))
    per_feature = gain[:, :n_k]
    np.log(f1, out=per_feature)
    per_feature -= (log_a[:, None, :] + log_b[None, :, :]).reshape(n_pairs, n_k, 1)
    per_feature -= np.log1p(-q)
    gain[:, n_k] = (log_a.sum(axis=1)[:, None] + log_b.sum(axis=1)[None, :]).reshape(-1, 1) + n_k * np.log1p(-q)
    return gain, f1, rr


def _joint_bits(bits_a: np.ndarray, bits_b: np.ndarray) -> np.ndarray:
    """Both sides' bits ``(A, n, Kc)`` and ``(B, n, Kc)`` as floats ``(pairs, n, Kc + 1)`` for the
    matrix products, with a last column of ones."""
    (n_a, n_rows, n_k), n_b = bits_a.shape, bits_b.shape[0]
    both = np.empty((n_a, n_b, n_rows, n_k + 1))
    np.logical_and(bits_a[:, None], bits_b[None], out=both[..., :n_k])
    both[..., n_k] = 1.0
    return both.reshape(n_a * n_b, n_rows, n_k + 1)


def _direct_slopes(side_a, side_b, rows, a, b, n_q, weight) -> np.ndarray:
    """Integrated slopes ``sum_pairs 2 v_a v_b (p_a p_b - r_a r_b) prod_{j != k} F_j`` of one block:
    ``(Kc,)`` weighted by rows (``weight``) or ``(Kc, rows)``."""
    q, gl = gauss_legendre(n_q)
    bits_a, cover_a, value_a = side_a
    bits_b, cover_b, value_b = side_b
    rr = cover_a[a][:, None, :] * cover_b[b][None, :, :]  # (A, B, Kc)
    both = bits_a[a, rows].transpose(1, 0, 2)[:, :, None, :] & bits_b[b, rows].transpose(1, 0, 2)[:, None, :, :]
    n_k = rr.shape[-1]  # both: (n, A, B, Kc)
    # features first, then (row, pair): the running products below are long contiguous passes
    rr_t = np.moveaxis(rr, -1, 0)[:, None]  # (Kc, 1, A, B)
    both_t = np.moveaxis(both, -1, 0)  # (Kc, n, A, B)
    slope = (both_t - rr_t).reshape(n_k, -1)
    rr_flat = np.broadcast_to(rr_t, both_t.shape).reshape(n_k, -1)
    factor = rr_flat[..., None] + slope[..., None] * q  # (Kc, m, Q)
    before = np.empty_like(factor)
    before[0] = 1.0
    for k in range(1, n_k):
        np.multiply(before[k - 1], factor[k - 1], out=before[k])
    after = np.ones(factor.shape[1:])
    others = np.empty(slope.shape)
    for k in range(n_k - 1, -1, -1):
        others[k] = (before[k] * after) @ gl
        after *= factor[k]
    others *= slope
    coef = 2.0 * value_a[a][:, None] * value_b[b][None, :]  # (A, B)
    per_row = others.reshape(n_k, both.shape[0], -1) @ coef.ravel()  # (Kc, n)
    return per_row if weight is None else per_row @ weight
