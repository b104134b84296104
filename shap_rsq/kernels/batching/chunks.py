"""One chunk of items of a compiled tree: where each item's table sits, and its values.

The kernel walks a tree's items in chunks of consecutive groups (each side of a group stays
inside one), and a chunk in *parts*: the rows read and write one part's tables at a time, small
enough to stay in cache.  Inside a chunk the tables are laid out part by part, then by *class*
(dense tables of one width, or tables per cell of one width), then by block
(``kernels.batching.blocks``): a part's entries are contiguous for the rows, while a class's values
and slopes are computed for all parts at once, with few NumPy calls.  The caller keeps its own
order of the items (the order its row sums need) and finds an item's table at ``base[item]``.
"""

from __future__ import annotations

import numpy as np

from ...tuning import DEFAULT_TUNING, Tuning
from ..lca.plan import TreePlan
from .cells import Cells, rows_of
from .sparse import offsets, ranges

__all__ = ["Chunk", "ChunkPart", "factor_values"]


def factor_values(plan: TreePlan, items: np.ndarray, width: int, q: np.ndarray) -> np.ndarray:
    """The first ``width`` factors of ``items`` at both bits: ``(n, width, 2, Q)``."""
    a = np.stack([plan.fac_a0[items, :width], plan.fac_a1[items, :width]], axis=2)
    b = np.stack([plan.fac_b0[items, :width], plan.fac_b1[items, :width]], axis=2)
    return a[..., None] + b[..., None] * q


def _constants(plan: TreePlan, items: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``(n, Q)``: each item's coefficient times its bit-free factors."""
    columns = np.arange(plan.fac_pos.shape[1])
    free = (columns >= plan.item_n_var[items, None]) & (columns < plan.item_n_fac[items, None])
    a = np.where(free, plan.fac_a0[items], 1.0)
    b = np.where(free, plan.fac_b0[items], 0.0)
    return plan.item_coef[items, None] * np.prod(a[:, :, None] + b[:, :, None] * q, axis=1)


def _doubled(value: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``(2^w, n, Q)`` products of ``start (n, Q)`` and factors ``value (n, w, 2, Q)`` on every
    combination of their bits (entry ``k`` takes factor ``f`` at bit ``(k >> f) & 1``), by
    doubling: factor ``f`` multiplies the table of the factors before it at either bit.

    Combination-major: each doubling is a ``(2, 1, n, Q)`` by ``(1, k, n, Q)`` product whose
    operands are contiguous over ``(n, Q)``, one loop of ``n x Q`` elements per (bit, entry).  Laid
    out ``(n, 2^w, Q)`` the factor was broadcast along the entries and every loop ran over the
    ``Q`` (4-8) nodes alone: 2x slower on the tables of XGBoost depth 8 (0.30 s against 0.15 s
    of a call on 1,000 rows of 100 features, global or per row).
    """
    n, w, _, n_q = value.shape
    by_factor = np.ascontiguousarray(value.transpose(1, 2, 0, 3))  # (w, 2, n, Q)
    table = start[None]
    for f in range(w):
        table = (by_factor[f][:, None] * table[None]).reshape(-1, n, n_q)
    return table


class Chunk:
    """Tables of ``items`` (plan item indices, in the caller's order) on the cells of a call.

    Attributes
    ----------
    base : ndarray of int
        Where each item's table starts (caller's order).
    size : ndarray of int
        Entries of each item's table.
    order : ndarray of int
        The items' positions (caller's order) in table order.
    q : ndarray, shape (Q,)
        The quadrature nodes the tables are evaluated at.
    values : ndarray, shape (entries, Q)
        Every item's value on every entry of its table.
    part : ndarray of int
        Which *part* of the chunk each item belongs to (caller's order): rows walk a chunk part by
        part (:meth:`part_of`), and a part's entries are consecutive.
    scale : ndarray, shape (items, Q), or None
        Per item (caller's order), a factor on every entry of its table at each node, or none.
    classes : list of (ndarray, bool, int)
        Per kind of table, the table-order positions of its items (all parts), whether the tables
        are dense and their width; a chunk of at most ``tuning.mixed_cells`` entries is one class
        of mixed widths (``False``, the widest width).
    """

    def __init__(
        self,
        plan: TreePlan,
        cells: Cells,
        items: np.ndarray,
        q: np.ndarray,
        tuning: Tuning = DEFAULT_TUNING,
        part: np.ndarray | None = None,
        scale: np.ndarray | None = None,
    ):
        self.items = items
        self.q = q
        self.scale = scale
        self.block = tuning.block_elements_within  # float64 elements of one temporary
        view = plan.item_view[items]
        self.view = view
        self.size = cells.size[view]
        dense = cells.dense[view]
        width = plan.item_n_var[items]
        self.part = np.zeros(len(items), dtype=np.int64) if part is None else part
        # part by part (rows walk a part's entries, contiguous), then by class, then by block
        self.order = np.lexsort((plan.item_block[items], width, ~dense, self.part))
        placed = self.size[self.order]
        self.base = np.empty(len(items), dtype=np.int64)
        self.base[self.order] = np.cumsum(placed) - placed
        self.n_entries = int(placed.sum())
        self.values = np.empty((self.n_entries, len(q)))
        # (positions, dense, width): the table-order positions of each kind of table, all parts
        # together, so that its values (and later its slopes) take one pass of NumPy calls
        self.classes = []
        if self.n_entries <= tuning.mixed_cells:
            # a small chunk is one class of mixed widths: fewer NumPy calls than exact work saved
            positions = np.arange(len(items))
            w = int(width.max(initial=0))
            self._cell_values(plan, cells, self.order, w, q)
            self.classes.append((positions, False, w))
            return
        key = (width * 2 + dense)[self.order]
        by_class = np.argsort(key, kind="stable")
        edges = np.flatnonzero(np.diff(key[by_class])) + 1
        for positions in np.split(by_class, edges):
            members = self.order[positions]
            w = int(width[members[0]])
            if dense[members[0]]:
                self._dense_values(plan, members, w, q)
            else:
                self._cell_values(plan, cells, members, w, q)
            self.classes.append((positions, bool(dense[members[0]]), w))

    def _constants(self, plan: TreePlan, members: np.ndarray, q: np.ndarray) -> np.ndarray:
        """``(members, Q)``: each member's coefficient times its bit-free factors, and its scale."""
        constant = _constants(plan, self.items[members], q)
        if self.scale is not None:
            constant *= self.scale[members]
        return constant

    def _dense_values(self, plan: TreePlan, members: np.ndarray, w: int, q: np.ndarray) -> None:
        """Products by doubling on all ``2^w`` combinations (bit ``f`` is factor ``f``'s), written
        into the members' tables."""
        n_q = len(q)
        step = max(1, self.block // ((2 << w) * n_q))
        for first in range(0, len(members), step):
            block = members[first : first + step]
            items = self.items[block]
            table = _doubled(factor_values(plan, items, w, q), self._constants(plan, block, q))
            rows = (np.arange(1 << w)[:, None] + self.base[block]).ravel()  # the table is combination-major
            self.values[rows] = table.reshape(-1, n_q)

    def _cell_values(self, plan: TreePlan, cells: Cells, members: np.ndarray, w: int, q: np.ndarray) -> None:
        """Products factor by factor on the entries each member's view has (gathered by bit); ``w``
        is the widest member's width, a narrower member's further factors count as 1."""
        n_q = len(q)
        items = self.items[members]
        constant = self._constants(plan, members, q)
        value = factor_values(plan, items, w, q)
        value[np.arange(w) >= plan.item_n_var[items, None]] = 1.0  # its bit-free factors are in the constant
        size = self.size[members]
        entry = ranges(self.base[members], size)
        comb = cells.entry_combinations(self.view[members])
        low = w // 2
        halves = (1 << low) + (1 << (w - low))
        if len(members) * halves + 3 * len(comb) < w * len(comb):
            self._split_products(members, value, constant, size, entry, comb, low)
            return
        value = value.reshape(-1, n_q)  # row (member * w + f) * 2 + bit
        entry_member = np.repeat(np.arange(len(members)), size)
        step = max(1, self.block // (2 * max(1, w) * n_q))
        for first in range(0, len(comb), step):
            member = entry_member[first : first + step]
            code = comb[first : first + step]
            product = rows_of(constant, member)
            for f in range(w):
                product *= rows_of(value, (member * w + f) * 2 + ((code >> f) & 1))
            self.values[entry[first : first + step]] = product

    def _split_products(self, members, value, constant, size, entry, comb, low: int) -> None:
        """:meth:`_cell_values` for wide tables with many cells: each member's products over its
        low ``low`` bits and over the others, on all their combinations by doubling, then one
        product of two gathered rows per cell, where factor by factor took ``w`` passes over the
        cells (the cell tables of a fully grown tree: w = 10-20)."""
        n_q = value.shape[-1]
        w = value.shape[1]
        n_low, n_high = 1 << low, 1 << (w - low)
        step = max(1, self.block // ((n_low + n_high) * n_q))
        start = offsets(size)
        span = max(1, self.block // n_q)  # cells per product
        for first in range(0, len(members), step):
            last = min(len(members), first + step)
            # combination-major tables: row ``combination x m + member`` of ``m`` members
            m = last - first
            lower = _doubled(value[first:last, :low], constant[first:last]).reshape(-1, n_q)
            upper = _doubled(value[first:last, low:], np.ones((m, n_q))).reshape(-1, n_q)
            member = np.repeat(np.arange(last - first), size[first:last])
            begin, end = int(start[first]), int(start[last])
            for a in range(begin, end, span):
                b = min(end, a + span)
                code, who = comb[a:b], member[a - begin : b - begin]
                product = rows_of(lower, (code & (n_low - 1)) * m + who)
                product *= rows_of(upper, (code >> low) * m + who)
                self.values[entry[a:b]] = product

    def blocks(self, plan: TreePlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chunk's blocks in table order: ``(block, first, count)``, each block's first position
        in :attr:`order` and its number of items there (adjacent, with tables of one size).  A block
        whose items fall in two parts counts as two."""
        return _runs(plan.item_block[self.items[self.order]], self.part[self.order])

    def part_of(self, start: int, stop: int) -> ChunkPart:
        """The items at caller positions ``start .. stop`` (one part), for the per-row kernel."""
        inside = (self.order >= start) & (self.order < stop)
        return ChunkPart(self.items[start:stop], self.order[inside] - start)


class ChunkPart:
    """Some consecutive items of a :class:`Chunk` (one part): ``order`` are their positions in
    table order, counted from the part's first item."""

    def __init__(self, items: np.ndarray, order: np.ndarray):
        self.items = items
        self.order = order

    def blocks(self, plan: TreePlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """As :meth:`Chunk.blocks`."""
        return _runs(plan.item_block[self.items[self.order]], np.zeros(len(self.order), dtype=np.int64))


def _runs(block: np.ndarray, part: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of equal (part, block) in ``block``: each run's block, first position and length."""
    new = np.concatenate(([True], (block[1:] != block[:-1]) | (part[1:] != part[:-1])))
    first = np.flatnonzero(new)
    return block[first], first, np.diff(np.append(first, len(block)))
