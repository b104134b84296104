"""Numerics of the Q-SHAP kernel: evaluate a :class:`~shap_rsq._plan.TreePlan` on rows.

For one tree the per-feature Shapley values of the tree game are

    phi_j = int_0^1 sum_i [ w_quad_i d/dq_j M_i(q) + w_lin_i d/dq_j mu_i(q) ] dq,

with ``M`` the multilinear extension of the squared conditional expectation and
``mu`` that of the conditional expectation (see ``_plan``).  The integrand is a
polynomial of degree below ``2 * n_q`` in ``q``, so Gauss-Legendre quadrature
with ``n_q`` nodes is exact.  Products "all factors but one" are built from
prefix and suffix products, never by division, so zero cover fractions are safe.

A row reaches the kernel only through its leaf codes.  Tables are evaluated
once per distinct ``(leaf, code)`` *cell*; rows then gather from them, and in
the global mode the row weights are first accumulated per cell.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import sparse

from ._plan import LIN, TreePlan

__all__ = ["gauss_legendre", "leaf_codes", "pattern_gradients", "weighted_gradient"]

# Upper bound on the float64 elements of one temporary array (about 64 MB).
_BLOCK = 1 << 23


@lru_cache(maxsize=64)
def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of the ``n``-point Gauss-Legendre rule on ``[0, 1]``."""
    x, w = np.polynomial.legendre.leggauss(n)
    return (x + 1.0) / 2.0, w / 2.0


def split_decisions(plan: TreePlan, X: np.ndarray, dtype: np.dtype | None = None, rows=None) -> np.ndarray:
    """``(n, n_splits + 1)`` booleans: row goes left at each split; the last column pads paths.

    Only the split columns (of ``rows``, when given) are gathered and cast to the
    model's ``dtype``, never all of ``X``.
    """
    x = X[:, plan.split_feature] if rows is None else X[np.ix_(rows, plan.split_feature)]
    x = x if dtype is None else x.astype(dtype)
    left = np.where(np.isnan(x), plan.split_default_left, x <= plan.split_threshold)
    return np.concatenate([left, np.ones((x.shape[0], 1), dtype=bool)], axis=1)


def leaf_codes(plan: TreePlan, left: np.ndarray) -> np.ndarray:
    """``(n, L)`` pass-bit codes: bit ``j`` of leaf ``l`` is 1 when the row passes every split
    on feature ``j`` of that leaf's path."""
    fails = left[:, plan.path_split] != plan.path_left
    failed = np.bitwise_or.reduce(np.where(fails, plan.path_pow, 0), axis=2)
    return plan.full_code & ~failed


def reached_leaf(plan: TreePlan, left: np.ndarray) -> np.ndarray:
    """``(n,)`` index of the leaf each row reaches: the one whose path it passes entirely."""
    on_path = left[:, plan.path_split] == plan.path_left  # (n, L, D)
    return np.argmax(np.all(on_path, axis=2), axis=1)


class _Cells:
    """Distinct ``(leaf, code)`` pairs among the rows and the tables of the items on them."""

    def __init__(self, plan: TreePlan, codes: np.ndarray):
        offset = np.concatenate([[0], np.cumsum(np.int64(1) << plan.code_size)])
        keys = codes + offset[:-1]
        if offset[-1] <= max(1 << 22, 4 * keys.size):
            seen = np.zeros(int(offset[-1]), dtype=bool)
            seen[keys] = True
            real = np.flatnonzero(seen)
            rank = np.cumsum(seen) - 1
            self.row_real = rank[keys]
        else:
            real, inverse = np.unique(keys, return_inverse=True)
            self.row_real = inverse.reshape(keys.shape)
        self.real_leaf = np.searchsorted(offset, real, side="right") - 1
        self.real_code = real - offset[self.real_leaf]
        counts = np.bincount(self.real_leaf, minlength=len(plan.code_size))
        self.leaf_first = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.leaf_count = counts

    def item_cells(self, plan: TreePlan, items: slice):
        """Cells of a range of items: ``(cell_item, cell_real, row_cell)`` with ``row_cell[u, i]``
        the cell of item ``i`` for row ``u``."""
        leaf = plan.item_leaf[items]
        count = self.leaf_count[leaf]
        start = np.concatenate([[0], np.cumsum(count)[:-1]])
        cell_item = np.repeat(np.arange(len(leaf)), count)
        within = np.arange(len(cell_item)) - start[cell_item]
        cell_real = self.leaf_first[leaf[cell_item]] + within
        row_cell = start + self.row_real[:, leaf] - self.leaf_first[leaf]
        return cell_item, cell_real, row_cell


def _value_and_slopes(plan: TreePlan, rows: np.ndarray, code: np.ndarray, q: np.ndarray, width: int | None = None):
    """Item value ``(C, Q)`` and d value / d q of each factor ``(F, C, Q)`` for items ``rows``
    evaluated at leaf codes ``code``; all-but-one products come from prefix and suffix products.
    Only the first ``width`` factors are used (the rest are padding)."""
    width = plan.fac_pos.shape[1] if width is None else width
    coef = plan.item_coef[rows]
    slopes, values = [], []
    for f in range(width):
        bit = (code >> plan.fac_pos[rows, f]) & 1 == 1
        a = np.where(bit, plan.fac_a1[rows, f], plan.fac_a0[rows, f])
        b = np.where(bit, plan.fac_b1[rows, f], plan.fac_b0[rows, f])
        slopes.append(b * coef)
        values.append(a[:, None] + b[:, None] * q)
    before = [np.ones_like(values[0])]
    for f in range(width - 1):
        before.append(before[-1] * values[f])
    slope = np.empty((width, len(rows), len(q)))
    after = np.ones_like(values[0])
    for f in range(width - 1, -1, -1):
        np.multiply(before[f], after, out=slope[f])
        slope[f] *= slopes[f][:, None]
        after = after * values[f]
    return after * coef[:, None], slope


def _width_blocks(plan: TreePlan, rows: np.ndarray, n_q: int):
    """Cells grouped by their leaf's number of features, in blocks of bounded size: ``(cells, width)``."""
    width = plan.code_size[plan.item_leaf[rows]]
    order = np.argsort(width, kind="stable")
    ordered = width[order]
    for w in np.unique(ordered):
        start, stop = np.searchsorted(ordered, [w, w + 1])
        step = max(1, _BLOCK // (4 * max(1, int(w)) * n_q))
        for first in range(start, stop, step):
            yield order[first : min(stop, first + step)], max(1, int(w))


def _values(plan: TreePlan, rows: np.ndarray, code: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Item values ``(C, Q)`` of items ``rows`` at leaf codes ``code``."""
    value = np.empty((len(rows), len(q)))
    for block, width in _width_blocks(plan, rows, len(q)):
        r, c = rows[block], code[block]
        product = np.broadcast_to(plan.item_coef[r][:, None], (len(block), len(q))).copy()
        for f in range(width):
            bit = (c >> plan.fac_pos[r, f]) & 1 == 1
            product *= (
                np.where(bit, plan.fac_a1[r, f], plan.fac_a0[r, f])[:, None]
                + np.where(bit, plan.fac_b1[r, f], plan.fac_b0[r, f])[:, None] * q
            )
        value[block] = product
    return value


def _integrated_slopes(plan: TreePlan, rows: np.ndarray, code: np.ndarray, q: np.ndarray, weight: np.ndarray):
    """``(C, F)``: ``sum_q weight[c, q] d value_c / d q_f`` without forming the ``(F, C, Q)`` slopes."""
    out = np.zeros((len(rows), plan.fac_pos.shape[1]))
    for block, width in _width_blocks(plan, rows, len(q)):
        _, slope = _value_and_slopes(plan, rows[block], code[block], q, width)
        out[block, :width] = np.einsum("fcq,cq->cf", slope, weight[block])
    return out


def _blocks(n: int, per_item: int):
    step = max(1, _BLOCK // max(1, per_item))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def _cell_tables(plan: TreePlan, items: slice, cells: _Cells, q: np.ndarray):
    """Per cell of the items in ``items``: value ``(C, Q)`` and slopes ``(F, C, Q)``."""
    cell_item, cell_real, row_cell = cells.item_cells(plan, items)
    rows = np.arange(items.start, items.stop)[cell_item]
    value, slope = _value_and_slopes(plan, rows, cells.real_code[cell_real], q)
    return cell_item, row_cell, value, slope


def _scatter_features(plan: TreePlan, feat: np.ndarray, amount: np.ndarray) -> np.ndarray:
    return np.bincount(feat.ravel(), weights=amount.ravel(), minlength=plan.n_features + 1)[:-1]


def _group_coefficients(plan: TreePlan, q: np.ndarray):
    """``C_g(q) = 2 prod_{k in T_g} q(1-q)`` ``(G, Q)`` and dC/dq_k ``(G, T, Q)``."""
    present = plan.group_T < plan.n_features
    c = (q * (1.0 - q))[None, None, :]
    factor = np.where(present[:, :, None], c, 1.0)
    before = np.ones_like(factor)
    after = np.ones_like(factor)
    np.cumprod(factor[:, :-1], axis=1, out=before[:, 1:])
    np.cumprod(factor[:, :0:-1], axis=1, out=after[:, -2::-1])
    coef = 2.0 * before[:, -1] * factor[:, -1]
    dcoef = 2.0 * before * after * np.where(present[:, :, None], 1.0 - 2.0 * q, 0.0)
    return coef, dcoef


def _segment_matrix(row_cell: np.ndarray, seg_starts: np.ndarray, n_cells: int) -> sparse.csr_matrix:
    """One-hot ``(rows * segments, cells)``: row ``(u, s)`` selects the cells of the items of
    segment ``s`` for row ``u``, so ``matrix @ values`` sums each side of each group."""
    n_rows, n_items = row_cell.shape
    index = np.int64 if row_cell.size >= 2**31 else np.int32
    indptr = np.empty(n_rows * len(seg_starts) + 1, dtype=index)
    indptr[:-1] = (np.arange(n_rows, dtype=index)[:, None] * n_items + seg_starts[None, :]).ravel()
    indptr[-1] = n_rows * n_items
    data = np.ones(row_cell.size)
    shape = (len(indptr) - 1, n_cells)
    return sparse.csr_matrix((data, row_cell.ravel().astype(index), indptr), shape=shape, copy=False)


def _cross_sums(plan: TreePlan, value: np.ndarray, row_cell: np.ndarray) -> np.ndarray:
    """Side sums ``S (n, G, 2, Q)`` of every cross group for each row."""
    gather = _segment_matrix(row_cell, plan.seg_starts, value.shape[0])
    return (gather @ value).reshape(row_cell.shape[0], -1, 2, value.shape[1])


def weighted_gradient(plan: TreePlan, codes: np.ndarray, w_quad: np.ndarray, w_lin: np.ndarray) -> np.ndarray:
    """Shapley values of the tree game summed over rows, per local feature ``(K,)``.

    ``codes`` are leaf codes of distinct rows with their aggregated weights.
    """
    q, gl = gauss_legendre(plan.n_q)
    cells = _Cells(plan, codes)
    out = np.zeros(plan.n_features)

    single = slice(0, plan.n_single)
    cell_item, cell_real, row_cell = cells.item_cells(plan, single)
    rows = np.arange(single.start, single.stop)[cell_item]
    weight = np.where(plan.item_kind[single] == LIN, w_lin[:, None], w_quad[:, None])
    per_cell = np.bincount(row_cell.ravel(), weights=weight.ravel(), minlength=len(cell_item))
    slopes = _integrated_slopes(plan, rows, cells.real_code[cell_real], q, per_cell[:, None] * gl)
    out += _scatter_features(plan, plan.fac_feat[rows], slopes)

    n_items = len(plan.item_leaf)
    if n_items == plan.n_single:
        return out
    cross = slice(plan.n_single, n_items)
    cell_item, cell_real, row_cell = cells.item_cells(plan, cross)
    rows = np.arange(cross.start, cross.stop)[cell_item]
    code = cells.real_code[cell_real]
    value = _values(plan, rows, code, q)
    coef, dcoef = _group_coefficients(plan, q)
    hist = np.zeros((len(cell_item), len(q)))
    both = np.zeros_like(coef)
    for block in _blocks(codes.shape[0], row_cell.shape[1] * len(q)):
        gather = _segment_matrix(row_cell[block], plan.seg_starts, len(cell_item))
        sums = (gather @ value).reshape(-1, len(coef), 2, len(q))
        # the cotangent of a left item is C_g * B_g (and of a right item C_g * A_g)
        partner = sums[:, :, ::-1] * coef[:, None, :]
        partner *= w_quad[block, None, None, None]
        hist += gather.T @ partner.reshape(-1, len(q))
        both += np.einsum("ugq,ugq->gq", sums[:, :, 0], partner[:, :, 0])
    out += _scatter_features(plan, plan.fac_feat[rows], _integrated_slopes(plan, rows, code, q, hist * gl))
    # both = sum_u w_u C_g A_g B_g; the coefficient's own derivative is dC/dq_k = C * dcoef_ratio
    out += _scatter_features(plan, plan.group_T, np.einsum("gq,gtq,q->gt", both, dcoef / coef[:, None, :], gl))
    return out


def _scatter_rows(feat: np.ndarray, amount: np.ndarray, width: int) -> np.ndarray:
    """Sum ``amount (u, i, f)`` into ``(u, width)`` by feature index ``feat (i, f)``."""
    n_rows = amount.shape[0]
    keys = (np.arange(n_rows)[:, None, None] * width + feat[None]).ravel()
    return np.bincount(keys, weights=amount.ravel(), minlength=n_rows * width).reshape(n_rows, width)


def pattern_gradients(plan: TreePlan, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row gradients with unit weights: ``(G_quad, G_lin)``, each ``(n, K)``.

    Row ``i``'s Shapley values of the tree game are ``w_quad_i G_quad[i] + w_lin_i G_lin[i]``.
    """
    q, gl = gauss_legendre(plan.n_q)
    cells = _Cells(plan, codes)
    n = codes.shape[0]
    width = plan.n_features + 1
    g_quad = np.zeros((n, width))
    g_lin = np.zeros((n, width))

    single = slice(0, plan.n_single)
    _, row_cell, _, slope = _cell_tables(plan, single, cells, q)
    integrated = (slope @ gl).T
    feat = plan.fac_feat[single]
    is_lin = plan.item_kind[single] == LIN
    for rows in _blocks(n, row_cell.shape[1] * feat.shape[1]):
        amount = integrated[row_cell[rows]]
        g_lin[rows] += _scatter_rows(feat, amount * is_lin[None, :, None], width)
        g_quad[rows] += _scatter_rows(feat, amount * ~is_lin[None, :, None], width)

    if len(plan.item_leaf) > plan.n_single:
        cross = slice(plan.n_single, len(plan.item_leaf))
        _, row_cell, value, slope = _cell_tables(plan, cross, cells, q)
        coef, dcoef = _group_coefficients(plan, q)
        feat = plan.fac_feat[cross]
        for rows in _blocks(n, row_cell.shape[1] * feat.shape[1] * len(q)):
            sums = _cross_sums(plan, value, row_cell[rows])
            cot = coef[plan.item_group] * sums[:, plan.item_group, 1 - plan.item_side]
            amount = np.einsum("uiq,fuiq,q->uif", cot, slope[:, row_cell[rows]], gl)
            g_quad[rows] += _scatter_rows(feat, amount, width)
            both = sums[:, :, 0] * sums[:, :, 1]
            g_quad[rows] += _scatter_rows(plan.group_T, np.einsum("ugq,gtq,q->ugt", both, dcoef, gl), width)
    return g_quad[:, :-1], g_lin[:, :-1]
