"""Item values and weighted slopes on the cells of a range of items, tabulated by bit combination.

An item with ``w`` bit-dependent factors takes one of ``2^w`` values on a row, one per
combination of the pass bits its factors read.  On deep trees nearly every combination
occurs among the rows (91-97% of them for the cross items of depth 6-8 XGBoost trees on
1000 rows), so the items of such a *dense* width are tabulated on all combinations:
products built by doubling, ``2 * 2^w * Q`` multiplications per item, where a product cell
by cell gathers and multiplies ``w * Q`` factors.  Their slopes are the reverse sweep of the
same doubling.  Widths whose combinations are mostly absent (wide leaves seen by few rows)
keep the cell-by-cell products of ``kernels.lca_cells``.

A cell's *slot* is its row in the range's table: its item's block plus its combination in
a dense width, its own row in a sparse one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tuning import DEFAULT_TUNING, Tuning
from .lca_cells import BLOCK, Factors, rows_of, scatter_features, weighted_all_but_one
from .lca_plan import TreePlan
from .sparse import OneHot

__all__ = ["Layout"]


@dataclass(frozen=True)
class _Width:
    """The cells of one width: their positions among the range's cells, their items (each once),
    and the width's rows of the table."""

    width: int
    dense: bool
    cells: np.ndarray
    items: np.ndarray
    offset: int
    size: int


class Layout:
    """Slots of the cells of a range of items (``rows``: each cell's item, the cells of an item
    consecutive; ``code``: each cell's masked leaf code), grouped by width."""

    def __init__(self, plan: TreePlan, rows: np.ndarray, code: np.ndarray, tuning: Tuning = DEFAULT_TUNING):
        self.rows, self.code = rows, code
        width = plan.item_n_var[rows]
        order = np.argsort(width, kind="stable")
        ordered = width[order]
        self.slot = np.empty(len(rows), dtype=np.int64)
        self.widths: list[_Width] = []
        offset = 0
        for w in np.unique(ordered).tolist():
            start, stop = np.searchsorted(ordered, [w, w + 1])
            cells = order[start:stop]
            item = rows[cells]
            first = _first_of_item(item)
            n_items = int(first.sum())
            # a dense table costs about 2^w per item, the cell-by-cell products w per cell
            dense = w == 0 or (
                w <= tuning.max_dense_width
                and n_items << w <= tuning.dense_ratio * w * len(cells)
                and (n_items << w) * plan.n_q <= tuning.max_dense_elements
            )
            if dense:
                rank = np.cumsum(first) - 1
                self.slot[cells] = offset + (rank << w) + _combination(plan, item, code[cells], w)
                size = n_items << w
            else:
                self.slot[cells] = offset + np.arange(len(cells))
                size = len(cells)
            self.widths.append(_Width(w, dense, cells, item[first], offset, size))
            offset += size
        self.size = offset

    def values(self, plan: TreePlan, factors: Factors) -> np.ndarray:
        """Each cell's item value (its bit-free part included) at the quadrature nodes ``(C, Q)``."""
        n_q = factors.value.shape[1]
        table = np.empty((self.size, n_q))
        for group, block, part in self._blocks(table):
            w = group.width
            if group.dense:
                items = group.items[block]
                part[:] = _prefix_tables(factors, items, _factor_values(factors, items, w)[0])[-1].reshape(-1, n_q)
            else:
                item, code = self._cells(group, block)
                part[:] = rows_of(factors.constant, item) * np.prod(factors.varying(plan, item, code, w)[0], axis=0)
        return rows_of(table, self.slot)

    def weighted_slopes(self, plan: TreePlan, factors: Factors, weight: np.ndarray) -> np.ndarray:
        """Per-feature ``sum_cells sum_q weight * d item / d q_f`` ``(K,)``."""
        table = np.zeros((self.size, weight.shape[1]))
        OneHot.picks(self.slot, self.size).add_transposed(weight, table)  # slots are distinct
        out = np.zeros(plan.n_features)
        for group, block, part in self._blocks(table):
            w = group.width
            if group.dense:
                items = group.items[block]
                integrated, total = _dense_slopes(factors, items, w, part.reshape(len(items), 1 << w, -1))
                out += scatter_features(plan, plan.fac_feat[items, :w], integrated)
                out += _bit_free_slopes(plan, factors, items, total)
                continue
            item, code = self._cells(group, block)
            values, slopes = factors.varying(plan, item, code, w)
            varying, integrated = weighted_all_but_one(values, part * rows_of(factors.constant, item))
            out += scatter_features(plan, plan.fac_feat[item, :w], (integrated * slopes).T)
            # the bit-free factors are the same on every cell of an item: sum per item first
            first = np.flatnonzero(_first_of_item(item))
            out += _bit_free_slopes(plan, factors, item[first], np.add.reduceat(part * varying, first, axis=0))
        return out

    def _blocks(self, table: np.ndarray):
        """``(width, block, rows of the table)``: blocks of items of the dense widths, of cells of
        the sparse ones, each small enough for the cache."""
        n_q = table.shape[1]
        for group in self.widths:
            part = table[group.offset : group.offset + group.size]
            w = group.width
            if group.dense:
                for block in _item_blocks(len(group.items), w, n_q):
                    yield group, block, part[block.start << w : block.stop << w]
            else:
                for block in _cell_blocks(len(group.cells), w, n_q):
                    yield group, block, part[block]

    def _cells(self, group: _Width, block: slice) -> tuple[np.ndarray, np.ndarray]:
        cells = group.cells[block]
        return self.rows[cells], self.code[cells]


def _first_of_item(item: np.ndarray) -> np.ndarray:
    """Marks the first of each run of equal items (the cells of an item are consecutive)."""
    return np.concatenate([[True], item[1:] != item[:-1]])


def _combination(plan: TreePlan, item: np.ndarray, code: np.ndarray, width: int) -> np.ndarray:
    """Bit ``f`` of a cell's combination is the pass bit its factor ``f`` reads."""
    combination = np.zeros(len(item), dtype=np.int64)
    for f in range(width):
        combination |= ((code >> plan.fac_pos[item, f]) & 1) << f
    return combination


def _item_blocks(n_items: int, width: int, n_q: int):
    step = max(1, BLOCK // ((2 << width) * n_q))
    for start in range(0, n_items, step):
        yield slice(start, min(n_items, start + step))


def _cell_blocks(n_cells: int, width: int, n_q: int):
    step = max(1, BLOCK // (2 * max(1, width) * n_q))
    for start in range(0, n_cells, step):
        yield slice(start, min(n_cells, start + step))


def _factor_values(factors: Factors, items: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``width`` factors of ``items`` at both bits: values ``(n, w, 2, Q)``, slopes ``(n, w, 2)``."""
    n_q = factors.value.shape[1]
    value = rows_of(factors.value.reshape(-1, factors.width, 2, n_q), items)[:, :width]
    slope = rows_of(factors.slope.reshape(-1, factors.width, 2), items)[:, :width]
    return value, slope


def _prefix_tables(factors: Factors, items: np.ndarray, value: np.ndarray) -> list[np.ndarray]:
    """``tables[f] (n, 2^f, Q)``: each item's bit-free part times its factors ``0..f-1`` (``value``,
    from :func:`_factor_values`) on every combination of their bits (bit ``f'`` is factor ``f'``'s)."""
    tables = [rows_of(factors.constant, items)[:, None, :]]
    for f in range(value.shape[1]):
        tables.append((value[:, f, :, None, :] * tables[-1][:, None]).reshape(len(items), -1, value.shape[-1]))
    return tables


def _dense_slopes(factors: Factors, items: np.ndarray, width: int, weight: np.ndarray):
    """For ``weight (n, 2^w, Q)`` on every combination of the items: per factor ``(n, w)`` the
    summed ``weight * slope * (the item without that factor)``, and ``(n, Q)`` the summed
    ``weight * (product of the bit-dependent factors)``.

    Factors are contracted from the highest bit down: after factor ``f`` the weight table holds,
    for each combination of the bits below ``f``, the weights times the factors above.
    """
    value, slope = _factor_values(factors, items, width)
    tables = _prefix_tables(factors, items, value)
    n, n_q = len(items), weight.shape[2]
    integrated = np.empty((n, width))
    for f in range(width - 1, -1, -1):
        pair = weight.reshape(n, 2, -1, n_q)  # axis 1 is bit f
        per_bit = np.einsum("nbrq,nrq->nb", pair, tables[f])
        integrated[:, f] = np.einsum("nb,nb->n", per_bit, slope[:, f])
        weight = pair[:, 0] * value[:, f, 0, None, :]
        weight += pair[:, 1] * value[:, f, 1, None, :]
    return integrated, weight[:, 0]


def _bit_free_slopes(plan: TreePlan, factors: Factors, items: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Slopes of the bit-free factors from each item's ``sum weight * (bit-dependent product)``."""
    free = np.einsum("iq,ifq->if", total, rows_of(factors.constant_slope, items))
    return scatter_features(plan, plan.fac_feat[items], free)
