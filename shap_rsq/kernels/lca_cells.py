"""Per-cell tables of a compiled tree (:class:`~shap_rsq.kernels.lca_plan.TreePlan`) on a set of rows.

A row reaches an item only through the bits of its leaf code that the item's
bit-dependent factors read (its *view*).  :class:`Cells` finds the distinct
``(view, masked code)`` cells among the rows and which cell each row falls in;
:class:`Factors` holds every factor of every item at both values of its bit, at
the quadrature nodes.  The functions below evaluate items cell by cell: their
products and slopes from prefix and suffix products (never dividing, so zero
cover fractions are safe).  ``kernels.lca_tables`` tabulates the items whose bit
combinations mostly occur on all of them instead.
"""

from __future__ import annotations

import numpy as np

from ..tuning import DEFAULT_TUNING
from .lca_plan import TreePlan

__all__ = [
    "BLOCK",
    "Cells",
    "Factors",
    "cell_tables",
    "rows_of",
    "scatter_features",
    "weighted_all_but_one",
]

BLOCK = DEFAULT_TUNING.block_elements  # float64 elements of one temporary (see Tuning.block_elements)


def rows_of(table: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``table[index]`` along the first axis.  For tables of rows (``(N, Q)`` and wider) ``np.take``
    copies each row at once: 3-4x faster than fancy indexing, which is one of the kernel's largest
    costs on deep trees.  (For 1-D tables and column gathers it was not faster.)"""
    return np.take(table, index, axis=0)


def _dedupe(keys: np.ndarray, n_slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct ``keys`` (all in ``[0, n_slots)``) and each key's rank among them."""
    if n_slots <= max(1 << 22, 4 * keys.size):
        seen = np.zeros(n_slots, dtype=bool)
        seen[keys] = True
        return np.flatnonzero(seen), (np.cumsum(seen) - 1)[keys]
    real, inverse = np.unique(keys, return_inverse=True)
    return real, inverse.reshape(keys.shape)


class Cells:
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
        # items of one view share their cells: find each view's once (3-5 items per view)
        views, column_view = np.unique(plan.item_view[index], return_inverse=True)
        leaf = plan.view_leaf[views]
        cell = self.row_leaf_cell[:, leaf]
        cell += (self.pair_first[views] - self.leaf_first[leaf]).astype(self.index)
        cell = self.pair_within[cell][:, column_view]
        cell += base.astype(self.index)
        return cell


class Factors:
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
        return rows_of(self.value, index), self.slope[index]


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


def weighted_all_but_one(factors: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
        step = max(1, BLOCK // (2 * max(1, int(w)) * n_q))
        for first in range(start, stop, step):
            yield order[first : min(stop, first + step)], int(w)


def cell_tables(plan: TreePlan, items: slice, cells: Cells, factors: Factors):
    """Per cell of the items in ``items``: value ``(C, Q)`` and slopes ``(C, F, Q)``, with each
    item's first cell (``first``, as from :meth:`Cells.item_cells`)."""
    cell_item, cell_real, first = cells.item_cells(plan, items)
    rows = np.arange(items.start, items.stop)[cell_item]
    code = cells.cell_code[cell_real]
    constant = rows_of(factors.constant, rows)
    varying = np.ones_like(constant)
    slope = rows_of(factors.constant_slope, rows)
    for block, width in _var_blocks(plan, rows, constant.shape[1]):
        if width == 0:
            continue
        values, slopes = factors.varying(plan, rows[block], code[block], width)
        varying[block], others = _all_but_one(values)
        slope[block, :width] = np.moveaxis(others * slopes[:, :, None], 0, 1) * constant[block, None]
        slope[block, width:] *= varying[block, None, :]
    return first, constant * varying, slope


def scatter_features(plan: TreePlan, feat: np.ndarray, amount: np.ndarray) -> np.ndarray:
    return np.bincount(feat.ravel(), weights=amount.ravel(), minlength=plan.n_features + 1)[:-1]
