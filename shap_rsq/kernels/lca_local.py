"""Per-row values of one tree through the LCA kernel: each row's gradients of ``m_S^2`` and ``m_S``.

Row ``u``'s Shapley values of the tree game are ``w_quad_u G_quad[u] + w_lin_u G_lin[u]``,
so the kernel returns both gradients with unit weights.  The linear one is TreeSHAP's
path-dependent SHAP value; the quadratic one needs every cross item's slope, weighted by
the row's cotangent ``C_g(q) * (the other side's sum)``, which depends on the row through
every item of the other side.  That is ``rows x items x factors x Q`` multiply-adds, the
part of per-row values that global values never do (they sum the cotangents per cell
first).

The items of one leaf share its factors' *slots* (the position of each feature on the
leaf's path, ``fac_pos``), so each cell's slopes are kept in slot order and every row's
contributions are summed per ``(row, leaf, slot)`` by one weighted sparse product over
the cells (``kernels.sparse.weighted_sums``): no ``(rows, items, factors, Q)`` array is
formed.  One more sparse product per tree maps the slots to the tree's features.
"""

from __future__ import annotations

import numpy as np

from .lca import _group_coefficients, _side_sums, gauss_legendre
from .lca_cells import Cells, Factors, cell_tables, rows_of
from .lca_plan import LIN, TreePlan
from .sparse import OneHot, weighted_sums

__all__ = ["pattern_gradients"]


def pattern_gradients(plan: TreePlan, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row gradients with unit weights: ``(G_quad, G_lin)``, each ``(n, K)``.

    ``codes`` are the leaf codes ``(n, L)`` of distinct rows; row ``i``'s Shapley values of the
    tree game are ``w_quad_i G_quad[i] + w_lin_i G_lin[i]``.
    """
    q, gl = gauss_legendre(plan.n_q)
    cells = Cells(plan, codes)
    factors = Factors(plan, q)
    n, n_leaves = codes.shape
    # every item's cell tables at once (single items first): fewer calls for small trees
    first, value, slope = cell_tables(plan, slice(0, len(plan.item_leaf)), cells, factors)
    slopes = _slot_slopes(plan, first, slope)
    del slope
    split = first[plan.n_single]  # the first cross cell
    slot_quad, slot_lin = _single_slots(plan, cells, first[: plan.n_single + 1], slopes[:split], gl)
    slot_feature = _slot_features(plan, n_leaves)
    g_lin = _in_features(slot_lin, slot_feature, plan.n_features)
    g_quad = np.zeros((n, plan.n_features))
    if len(plan.item_leaf) > plan.n_single:
        cross = first[plan.n_single :] - split, value[split:], slopes[split:]
        _cross_slots(plan, cells, cross, q, gl, slot_quad, g_quad)
    g_quad += _in_features(slot_quad, slot_feature, plan.n_features)
    return g_quad, g_lin


def _slot_features(plan: TreePlan, n_leaves: int) -> np.ndarray:
    """``(L * D,)`` the tree feature of each leaf's slot (``K`` for padding slots).

    Read from the linear items, whose factors are the leaf's path features, none of them padding.
    """
    width = plan.fac_pos.shape[1]
    linear = np.flatnonzero(plan.item_kind[: plan.n_single] == LIN)
    feature = np.full((n_leaves, width), plan.n_features)
    feature[plan.item_leaf[linear, None], plan.fac_pos[linear]] = plan.fac_feat[linear]
    return feature.ravel()


def _in_features(slots: np.ndarray, feature: np.ndarray, n_features: int) -> np.ndarray:
    """``(n, K)`` per-row sums of ``slots (n, ...)`` by the feature of each slot (``K`` drops).

    A sparse product, not a matmul with a one-hot matrix: BLAS on two threads took 1 ms for
    a (759, 120) x (120, 13) product on the shared machine, ten times one thread.
    """
    n = slots.shape[0]
    out = np.zeros((n_features + 1, n))
    OneHot.picks(feature.astype(np.int64), n_features + 1).add_transposed(slots.reshape(n, -1).T, out)
    return out[:n_features].T


def _slot_slopes(plan: TreePlan, first: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """Cell slopes ``(C, F, Q)`` of all items reordered by slot: ``(C, D, Q)``, slot ``j`` the
    leaf's ``j``-th path feature."""
    factor_of_slot = np.argsort(plan.fac_pos, axis=1)
    per_cell = np.repeat(factor_of_slot, np.diff(first), axis=0)
    return np.take_along_axis(slope, per_cell[:, :, None], axis=1)


def _single_slots(plan: TreePlan, cells: Cells, first: np.ndarray, slopes: np.ndarray, gl: np.ndarray):
    """``(n, L, D)`` slot gradients of the diagonal items (of ``m_S^2``) and of the linear items,
    from the single items' first cells and slot slopes."""
    single = slice(0, plan.n_single)
    integrated = np.einsum("cdq,q->cd", slopes, gl)
    row_cell = cells.row_cells(plan, single, first[:-1])
    linear = plan.item_kind[single] == LIN
    # one linear and one diagonal item per leaf: each part's columns in leaf order are its leaves
    slots = []
    for part in (~linear, linear):
        columns = np.flatnonzero(part)[np.argsort(plan.item_leaf[single][part])]
        slots.append(rows_of(integrated, row_cell[:, columns]))
    return slots[0], slots[1]


def _cross_slots(plan, cells, tables, q, gl, slot_quad: np.ndarray, g_quad: np.ndarray) -> None:
    """Add the cross items' slot gradients into ``slot_quad (n, L, D)``, and the gradients of the
    group coefficients ``C_g`` (in their expanded features) into ``g_quad (n, K)``; ``tables`` are
    the cross items' first cells, values ``(C, Q)`` and slot slopes ``(C, D, Q)``."""
    n, n_leaves, width = slot_quad.shape
    first, value, slopes = tables
    slopes = np.ascontiguousarray(slopes.transpose(2, 0, 1))  # (Q, C, D): one table per node
    coef, dcoef = _group_coefficients(plan, q)
    coef = coef * gl
    dcoef = dcoef * gl
    chunk = None
    # row blocks a third of rsq's: each holds an index, a cotangent and an output array per item
    # (1 and 8 were 5-35% slower on XGBoost depth 6 and 8)
    for groups, items, spans, row_cell, rows, _, sums in _side_sums(plan, cells, first, value, n, 3):
        if chunk is None or chunk.groups != groups:
            chunk = _Chunk(plan, groups, items, spans, slopes, len(q), n_leaves)
        n_rows = len(row_cell)
        # one sparse product per quadrature node: rows (row, leaf) sum their leaf's items' slot
        # slopes at the row's cells, each times the row's cotangent of the item
        index = np.take(row_cell, chunk.by_leaf, axis=1).ravel()
        indptr = chunk.indptr(n_rows, index.dtype)
        # the coefficient multiplies the side sums, fewer than the items that take them
        sides = (sums * coef[groups]).reshape(n_rows, -1)  # (rows, 2 groups x Q)
        out = np.zeros((n_rows * n_leaves, width))
        for k in range(len(q)):
            weighted_sums(indptr, index, np.take(sides, chunk.partner + k, axis=1).ravel(), chunk.slopes[k], out)
        slot_quad[rows] += out.reshape(n_rows, n_leaves, width)
        both = sums[:, 0] * sums[:, 1]
        expanded = np.empty((n_rows, groups.stop - groups.start, plan.group_T.shape[1]))
        for t in range(expanded.shape[2]):
            expanded[:, :, t] = np.einsum("ugq,gq->ug", both, dcoef[groups, t])
        g_quad[rows] += _in_features(expanded, plan.group_T[groups].ravel(), plan.n_features)


class _Chunk:
    """What the rows of one chunk of groups (``kernels.lca._side_sums``) share: its items in leaf
    order, each item's partner side, and its cells' slot slopes ``(Q, cells, D)``."""

    def __init__(self, plan, groups: slice, items, spans, slopes, n_q: int, n_leaves: int):
        self.groups = groups
        leaf = plan.item_leaf[plan.n_single + items]
        self.by_leaf = np.argsort(leaf, kind="stable")
        group = plan.item_group[items][self.by_leaf]
        side = plan.item_side[items][self.by_leaf]
        # each item's partner side sum at the first quadrature node, in the rows' (2 groups x Q) sums
        self.partner = ((1 - side) * (groups.stop - groups.start) + group - groups.start) * n_q
        self.leaf_start = np.concatenate([[0], np.cumsum(np.bincount(leaf, minlength=n_leaves))[:-1]])
        self.n_items = len(items)
        self.slopes = np.ascontiguousarray(np.concatenate([slopes[:, span] for span in spans], axis=1))

    def indptr(self, n_rows: int, dtype) -> np.ndarray:
        """Row pointers of the ``(row, leaf)`` rows over the chunk's items in leaf order."""
        starts = (np.arange(n_rows)[:, None] * self.n_items + self.leaf_start).ravel()
        return np.append(starts, n_rows * self.n_items).astype(dtype)
