"""Numerics of the Q-SHAP kernel: evaluate a :class:`~shap_rsq._plan.TreePlan` on rows.

For one tree the per-feature Shapley values of the tree game are

    phi_j = int_0^1 sum_i [ w_quad_i d/dq_j M_i(q) + w_lin_i d/dq_j mu_i(q) ] dq,

with ``M`` the multilinear extension of the squared conditional expectation and
``mu`` that of the conditional expectation (see ``_plan``).  The integrand is a
polynomial of degree below ``2 * n_q`` in ``q``, so Gauss-Legendre quadrature
with ``n_q`` nodes is exact.  Products "all factors but one" are built from
prefix and suffix products, never by division, so zero cover fractions are safe.

A row reaches the kernel only through its leaf codes, and an item only through
the bits its bit-dependent factors read (its *view* of the code).  Tables are
evaluated once per distinct ``(view, masked code)`` *cell*; rows then gather from
them, and in the global mode the row weights are first accumulated per cell.
Factors that read no bit are the same on every cell of an item: their product
and slopes are computed once per item.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np
from scipy import sparse

from ._plan import LIN, TreePlan

__all__ = ["gauss_legendre", "leaf_codes", "pattern_gradients", "weighted_gradient"]

# Upper bound on the float64 elements of one temporary array (4 MB).  The
# kernel's passes are memory-bound elementwise products: blocks that stay in
# cache ran 1.2-1.3x faster than 64 MB ones (depth-6 XGBoost, LightGBM).
_BLOCK = 1 << 19
# Cross cells (both sides of consecutive groups) whose value and cotangent tables every row block
# reads and writes at random: 2^13 cells x 8 nodes x 2 tables x 8 bytes stay within a core's L2.
_CHUNK_CELLS = 1 << 13


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


def _dedupe(keys: np.ndarray, n_slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct ``keys`` (all in ``[0, n_slots)``) and each key's rank among them."""
    if n_slots <= max(1 << 22, 4 * keys.size):
        seen = np.zeros(n_slots, dtype=bool)
        seen[keys] = True
        return np.flatnonzero(seen), (np.cumsum(seen) - 1)[keys]
    real, inverse = np.unique(keys, return_inverse=True)
    return real, inverse.reshape(keys.shape)


class _Cells:
    """Distinct ``(view, masked code)`` pairs among the rows: the cells items are tabulated on.

    Rows are first reduced to distinct ``(leaf, code)`` pairs; each view then reads the
    codes of its leaf through its mask, so rows that differ only in bits a view ignores
    share its cell.
    """

    def __init__(self, plan: TreePlan, codes: np.ndarray):
        offset = np.concatenate([[0], np.cumsum(np.int64(1) << plan.code_size)])
        leaf_cells, self.row_leaf_cell = _dedupe(codes + offset[:-1], int(offset[-1]))
        cell_leaf = np.searchsorted(offset, leaf_cells, side="right") - 1
        cell_code = leaf_cells - offset[cell_leaf]
        leaf_count = np.bincount(cell_leaf, minlength=len(plan.code_size))
        self.leaf_first = np.cumsum(leaf_count) - leaf_count

        # one "pair" per (view, leaf cell of the view's leaf)
        pairs = leaf_count[plan.view_leaf]
        self.pair_first = np.cumsum(pairs) - pairs
        pair_view = np.repeat(np.arange(len(pairs)), pairs)
        within = np.arange(len(pair_view)) - self.pair_first[pair_view]
        masked = cell_code[self.leaf_first[plan.view_leaf[pair_view]] + within] & plan.view_mask[pair_view]
        bits = int(plan.code_size.max())
        if len(pairs).bit_length() + bits <= 62:
            real, self.pair_cell = _dedupe((pair_view << bits) | masked, len(pairs) << bits)
            self.cell_view, self.cell_code = real >> bits, real & ((np.int64(1) << bits) - 1)
        else:
            real, self.pair_cell = np.unique(np.stack([pair_view, masked], axis=1), axis=0, return_inverse=True)
            self.pair_cell = self.pair_cell.ravel()
            self.cell_view, self.cell_code = real[:, 0], real[:, 1]
        self.view_count = np.bincount(self.cell_view, minlength=len(pairs))
        self.view_first = np.cumsum(self.view_count) - self.view_count
        # (rows x items) index arrays dominate the memory traffic of deep trees: keep them narrow
        self.index = np.int32 if max(len(pair_view), codes.size) < 2**31 else np.int64
        self.row_leaf_cell = self.row_leaf_cell.astype(self.index)
        self.pair_within = (self.pair_cell - self.view_first[pair_view]).astype(self.index)

    def item_cells(self, plan: TreePlan, items: slice):
        """Cells of a range of items, ordered by item: ``(cell_item, cell_real, first)`` with
        ``first[i]`` the first cell of item ``i`` (the number of cells last)."""
        view = plan.item_view[items]
        count = self.view_count[view]
        first = np.concatenate([[0], np.cumsum(count)])
        cell_item = np.repeat(np.arange(len(view)), count)
        cell_real = self.view_first[view[cell_item]] + np.arange(len(cell_item)) - first[cell_item]
        return cell_item, cell_real, first

    def row_cells(self, plan: TreePlan, items: slice, base: np.ndarray, columns: np.ndarray | None = None):
        """``(n, len(columns))`` the cell of every row in items ``columns`` of the range (all by
        default), numbered from each item's ``base``."""
        index = np.arange(items.start, items.stop) if columns is None else items.start + columns
        view, leaf = plan.item_view[index], plan.item_leaf[index]
        cell = self.row_leaf_cell[:, leaf]
        cell += (self.pair_first[view] - self.leaf_first[leaf]).astype(self.index)
        cell = self.pair_within[cell]
        cell += base.astype(self.index)
        return cell


class _Factors:
    """Every factor of every item of a plan at both values of its bit, at the quadrature nodes.

    ``value[(i * F + f) * 2 + bit]`` is ``(Q,)``, ``slope[...]`` its derivative in ``q``; the
    per-item *constant part* is ``coef`` times the bit-free factors, with its slopes.
    """

    def __init__(self, plan: TreePlan, q: np.ndarray):
        a = np.stack([plan.fac_a0, plan.fac_a1], axis=2)
        b = np.stack([plan.fac_b0, plan.fac_b1], axis=2)
        self.width = plan.fac_pos.shape[1]
        self.value = (a[..., None] + b[..., None] * q).reshape(-1, len(q))
        self.slope = b.ravel()
        position = np.arange(self.width)
        free = (position >= plan.item_n_var[:, None]) & (position < plan.item_n_fac[:, None])
        factors = np.where(free[:, :, None], a[:, :, :1] + b[:, :, :1] * q, 1.0)  # (I, F, Q)
        product, others = _all_but_one(np.moveaxis(factors, 1, 0))
        coef = plan.item_coef[:, None]
        self.constant = coef * product  # (I, Q)
        self.constant_slope = np.moveaxis(others, 0, 1) * (coef * np.where(free, b[:, :, 0], 0.0))[:, :, None]

    def varying(self, plan: TreePlan, rows: np.ndarray, code: np.ndarray, width: int):
        """The first ``width`` factors of items ``rows`` at leaf codes ``code``: ``(width, C, Q)``
        values and ``(width, C)`` slopes."""
        bit = (code >> plan.fac_pos[rows, :width].T) & 1
        index = (rows * self.width + np.arange(width)[:, None]) * 2 + bit
        return self.value[index], self.slope[index]


def _all_but_one(factors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``factors (F, ...)``: their product and, per factor, the product of the others
    ``(F, ...)``, from prefix and suffix products (never dividing: zero factors are safe)."""
    others = np.empty_like(factors)
    others[0] = 1.0
    for f in range(1, len(factors)):
        np.multiply(others[f - 1], factors[f - 1], out=others[f])
    after = np.ones_like(factors[0])
    for f in range(len(factors) - 1, -1, -1):
        others[f] *= after
        after *= factors[f]
    return after, others


def _weighted_all_but_one(factors: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``factors (F, C, Q)``: their product ``(C, Q)`` and ``sum_q weight * (product of the
    others)`` ``(F, C)``, without forming the ``(F, C, Q)`` products of the others."""
    before = np.empty_like(factors)
    before[0] = 1.0
    for f in range(1, len(factors)):
        np.multiply(before[f - 1], factors[f - 1], out=before[f])
    tail = weight.copy()
    integrated = np.empty(factors.shape[:2])
    for f in range(len(factors) - 1, -1, -1):
        integrated[f] = np.einsum("cq,cq->c", before[f], tail)
        tail *= factors[f]
    return before[-1] * factors[-1], integrated


def _var_blocks(plan: TreePlan, rows: np.ndarray, n_q: int):
    """Cells grouped by their item's number of bit-dependent factors, in blocks of bounded size."""
    width = plan.item_n_var[rows]
    order = np.argsort(width, kind="stable")
    ordered = width[order]
    for w in np.unique(ordered):
        start, stop = np.searchsorted(ordered, [w, w + 1])
        step = max(1, _BLOCK // (2 * max(1, int(w)) * n_q))
        for first in range(start, stop, step):
            yield order[first : min(stop, first + step)], int(w)


def _varying(plan: TreePlan, factors: _Factors, rows: np.ndarray, code: np.ndarray, weight: np.ndarray | None = None):
    """Product of the bit-dependent factors of each cell ``(C, Q)``; with ``weight (C, Q)``
    also ``sum_q weight * d product / d q_f`` per bit-dependent factor ``(C, F)``."""
    n_q = factors.value.shape[1]
    value = np.ones((len(rows), n_q))
    integrated = None if weight is None else np.zeros((len(rows), factors.width))
    for block, width in _var_blocks(plan, rows, n_q):
        if width == 0:
            continue
        values, slopes = factors.varying(plan, rows[block], code[block], width)
        if weight is None:
            value[block] = np.prod(values, axis=0)
            continue
        value[block], others = _weighted_all_but_one(values, weight[block])
        integrated[block, :width] = (others * slopes).T
    return value, integrated


def _weighted_slopes(plan: TreePlan, factors: _Factors, rows: np.ndarray, code: np.ndarray, weight: np.ndarray):
    """Per-feature ``sum_cells sum_q weight * d item / d q_f`` ``(K,)`` for cells of items ``rows``
    (the cells of each item consecutive)."""
    varying, integrated = _varying(plan, factors, rows, code, weight * factors.constant[rows])
    # the bit-free factors are the same on every cell of an item: sum weight * varying per item first
    first = np.flatnonzero(np.concatenate([[True], rows[1:] != rows[:-1]]))
    items = rows[first]
    per_item = np.add.reduceat(weight * varying, first, axis=0)
    free = np.einsum("iq,ifq->if", per_item, factors.constant_slope[items])
    by_cell = _scatter_features(plan, plan.fac_feat[rows], integrated)
    return by_cell + _scatter_features(plan, plan.fac_feat[items], free)


def _cell_tables(plan: TreePlan, items: slice, cells: _Cells, factors: _Factors):
    """Per cell of the items in ``items``: value ``(C, Q)`` and slopes ``(C, F, Q)``."""
    cell_item, cell_real, first = cells.item_cells(plan, items)
    row_cell = cells.row_cells(plan, items, first[:-1])
    rows = np.arange(items.start, items.stop)[cell_item]
    code = cells.cell_code[cell_real]
    constant = factors.constant[rows]
    varying = np.ones_like(constant)
    slope = factors.constant_slope[rows]
    for block, width in _var_blocks(plan, rows, constant.shape[1]):
        if width == 0:
            continue
        values, slopes = factors.varying(plan, rows[block], code[block], width)
        varying[block], others = _all_but_one(values)
        slope[block, :width] = np.moveaxis(others * slopes[:, :, None], 0, 1) * constant[block, None]
        slope[block, width:] *= varying[block, None, :]
    return cell_item, row_cell, constant * varying, slope


def _blocks(n: int, per_item: int):
    step = max(1, _BLOCK // max(1, per_item))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


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


_ONES = np.ones(0)


def _ones(n: int) -> np.ndarray:
    """``n`` ones from a shared buffer that only grows (the one-hot matrices never write their data)."""
    global _ONES
    ones = _ONES
    if ones.size < n:
        ones = _ONES = np.ones(max(n, 2 * ones.size))
    return ones[:n]


def _segment_matrix(row_cell: np.ndarray, seg_starts: np.ndarray, n_cells: int) -> sparse.csr_matrix:
    """One-hot ``(rows * segments, cells)``: row ``(u, s)`` selects the cells of the items of
    segment ``s`` for row ``u``, so ``matrix @ values`` sums each side of each group."""
    n_rows, n_items = row_cell.shape
    index = np.int64 if row_cell.size >= 2**31 else np.int32
    indptr = np.empty(n_rows * len(seg_starts) + 1, dtype=index)
    indptr[:-1] = (np.arange(n_rows, dtype=index)[:, None] * n_items + seg_starts[None, :]).ravel()
    indptr[-1] = n_rows * n_items
    data = _ones(row_cell.size)
    shape = (len(indptr) - 1, n_cells)
    return sparse.csr_matrix((data, row_cell.ravel().astype(index, copy=False), indptr), shape=shape, copy=False)


def _cross_sums(plan: TreePlan, value: np.ndarray, row_cell: np.ndarray) -> np.ndarray:
    """Side sums ``S (n, 2, G, Q)`` of every cross group for each row."""
    gather = _segment_matrix(row_cell, plan.seg_starts, value.shape[0])
    return (gather @ value).reshape(row_cell.shape[0], 2, -1, value.shape[1])


def weighted_gradient(plan: TreePlan, codes: np.ndarray, w_quad: np.ndarray, w_lin: np.ndarray) -> np.ndarray:
    """Shapley values of the tree game summed over rows, per local feature ``(K,)``.

    ``codes`` are leaf codes of distinct rows with their aggregated weights.
    """
    q, gl = gauss_legendre(plan.n_q)
    cells = _Cells(plan, codes)
    factors = _Factors(plan, q)

    single = slice(0, plan.n_single)
    cell_item, cell_real, first = cells.item_cells(plan, single)
    row_cell = cells.row_cells(plan, single, first[:-1])
    rows = np.arange(single.start, single.stop)[cell_item]
    weight = np.where(plan.item_kind[single] == LIN, w_lin[:, None], w_quad[:, None])
    per_cell = np.bincount(row_cell.ravel(), weights=weight.ravel(), minlength=len(cell_item))
    out = _weighted_slopes(plan, factors, rows, cells.cell_code[cell_real], per_cell[:, None] * gl)

    n_items = len(plan.item_leaf)
    if n_items == plan.n_single:
        return out
    cross = slice(plan.n_single, n_items)
    cell_item, cell_real, first = cells.item_cells(plan, cross)
    rows = np.arange(cross.start, cross.stop)[cell_item]
    code = cells.cell_code[cell_real]
    value = factors.constant[rows] * _varying(plan, factors, rows, code)[0]
    coef, dcoef = _group_coefficients(plan, q)
    hist = np.zeros((len(cell_item), len(q)))
    both = np.zeros_like(coef)
    for groups, items, base, chunk, seg_starts in _group_chunks(plan, first):
        # the chunk's cells renumbered from 0: its value and cotangent tables stay in cache
        chunk_cell = cells.row_cells(plan, cross, base, items)
        chunk_value = value[chunk]
        chunk_hist = np.zeros_like(chunk_value)
        chunk_coef = coef[groups]
        for block in _blocks(codes.shape[0], len(items) * len(q)):
            gather = _segment_matrix(chunk_cell[block], seg_starts, len(chunk))
            sums = (gather @ chunk_value).reshape(-1, 2, len(chunk_coef), len(q))
            # the cotangent of a left item is w C_g B_g (and of a right item w C_g A_g)
            partner = sums[:, ::-1] * (w_quad[block, None, None, None] * chunk_coef)
            chunk_hist += gather.T @ partner.reshape(-1, len(q))
            both[groups] += np.einsum("ugq,ugq->gq", sums[:, 0], partner[:, 0])
        hist[chunk] += chunk_hist
    out += _weighted_slopes(plan, factors, rows, code, hist * gl)
    # both = sum_u w_u C_g A_g B_g; the coefficient's own derivative is dC/dq_k = C * dcoef_ratio
    out += _scatter_features(plan, plan.group_T, np.einsum("gq,gtq,q->gt", both, dcoef / coef[:, None, :], gl))
    return out


def _group_chunks(plan: TreePlan, first: np.ndarray):
    """Consecutive groups whose cross cells number about ``_CHUNK_CELLS``.

    Per chunk: its groups (a slice), its item columns (the left sides' items, then the right
    sides'), where each of them starts in the chunk's own numbering of its cells, those cells,
    and the chunk's segment starts within its columns.
    """
    n_groups = len(plan.seg_starts) // 2
    bounds = np.append(plan.seg_starts, len(plan.item_leaf) - plan.n_single)  # item bounds of the segments
    first_cell = first[bounds]  # cells are ordered by item
    seg_cells = np.diff(first_cell)
    cumulative = np.cumsum(seg_cells[:n_groups] + seg_cells[n_groups:])
    cuts = np.searchsorted(cumulative, np.arange(_CHUNK_CELLS, cumulative[-1], _CHUNK_CELLS), side="right")
    edges = np.unique(np.concatenate([[0], cuts, [n_groups]]))
    for ga, gb in itertools.pairwise(edges):
        sides = ((ga, gb), (n_groups + ga, n_groups + gb))  # segment ranges of the left and right sides
        n_items = [bounds[b] - bounds[a] for a, b in sides]
        n_left_cells = first_cell[gb] - first_cell[ga]
        items = np.concatenate([np.arange(bounds[a], bounds[b]) for a, b in sides])
        cells = np.concatenate([np.arange(first_cell[a], first_cell[b]) for a, b in sides])
        base = first[items] - np.repeat([first_cell[ga], first_cell[n_groups + ga] - n_left_cells], n_items)
        seg_starts = np.concatenate(
            [
                plan.seg_starts[ga:gb] - bounds[ga],
                plan.seg_starts[n_groups + ga : n_groups + gb] - bounds[n_groups + ga] + n_items[0],
            ]
        )
        yield slice(ga, gb), items, base, cells, seg_starts


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
    factors = _Factors(plan, q)

    single = slice(0, plan.n_single)
    _, row_cell, _, slope = _cell_tables(plan, single, cells, factors)
    integrated = slope @ gl
    feat = plan.fac_feat[single]
    is_lin = plan.item_kind[single] == LIN
    for rows in _blocks(n, row_cell.shape[1] * feat.shape[1]):
        amount = integrated[row_cell[rows]]
        g_lin[rows] += _scatter_rows(feat, amount * is_lin[None, :, None], width)
        g_quad[rows] += _scatter_rows(feat, amount * ~is_lin[None, :, None], width)

    if len(plan.item_leaf) > plan.n_single:
        cross = slice(plan.n_single, len(plan.item_leaf))
        _, row_cell, value, slope = _cell_tables(plan, cross, cells, factors)
        coef, dcoef = _group_coefficients(plan, q)
        feat = plan.fac_feat[cross]
        for rows in _blocks(n, row_cell.shape[1] * feat.shape[1] * len(q)):
            sums = _cross_sums(plan, value, row_cell[rows])
            cot = coef[plan.item_group] * sums[:, 1 - plan.item_side, plan.item_group]
            amount = np.einsum("uiq,uifq,q->uif", cot, slope[row_cell[rows]], gl)
            g_quad[rows] += _scatter_rows(feat, amount, width)
            both = sums[:, 0] * sums[:, 1]
            g_quad[rows] += _scatter_rows(plan.group_T, np.einsum("ugq,gtq,q->ugt", both, dcoef, gl), width)
    return g_quad[:, :-1], g_lin[:, :-1]
