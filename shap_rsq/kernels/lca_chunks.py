"""One chunk of items of a compiled tree: where each item's table sits, and its values.

The kernel walks a tree's items chunk by chunk (consecutive groups, so that each side of a
group stays inside one chunk), and every table of a chunk (values, cotangents) is small enough
to stay in cache while all rows read and write it.  Inside a chunk the items are laid out by
*class* (dense tables of one width, or tables per cell of one width) and, within a class, by
block (``kernels.lca_blocks``): a class's values are computed together, straight into their
place, and a block's items are adjacent with tables of one size, so that its slopes are summed
without moving anything.  The caller keeps its own order of the items (the order its row sums
need) and finds an item's table at ``base[item]``.
"""

from __future__ import annotations

import numpy as np

from .lca_cells import BLOCK, Cells, rows_of
from .lca_plan import TreePlan

__all__ = ["Chunk", "factor_values"]


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
    values : ndarray, shape (entries, Q)
        Every item's value on every entry of its table.
    """

    def __init__(self, plan: TreePlan, cells: Cells, items: np.ndarray, q: np.ndarray, block: int = BLOCK):
        self.items = items
        self.block = block  # float64 elements of one temporary
        view = plan.item_view[items]
        self.view = view
        self.size = cells.size[view]
        dense = cells.dense[view]
        width = plan.item_n_var[items]
        self.order = np.lexsort((plan.item_block[items], width, ~dense))
        placed = self.size[self.order]
        self.base = np.empty(len(items), dtype=np.int64)
        self.base[self.order] = np.cumsum(placed) - placed
        self.n_entries = int(placed.sum())
        self.values = np.empty((self.n_entries, len(q)))
        key = (width * 2 + dense)[self.order]
        edges = np.flatnonzero(np.diff(key)) + 1
        # (start, stop, dense, width): ranges of table-order positions with one kind of table
        self.classes = []
        for start, stop in zip(np.r_[0, edges], np.r_[edges, len(items)], strict=True):
            members = self.order[start:stop]
            w = int(width[members[0]])
            if dense[members[0]]:
                self._dense_values(plan, members, w, q)
            else:
                self._cell_values(plan, cells, members, w, q)
            self.classes.append((int(start), int(stop), bool(dense[members[0]]), w))

    def _dense_values(self, plan: TreePlan, members: np.ndarray, w: int, q: np.ndarray) -> None:
        """Products by doubling on all ``2^w`` combinations (bit ``f`` is factor ``f``'s), written
        into the members' consecutive tables."""
        n_q = len(q)
        start = self.base[members[0]]
        step = max(1, self.block // ((2 << w) * n_q))
        for first in range(0, len(members), step):
            block = members[first : first + step]
            items = self.items[block]
            table = _constants(plan, items, q)[:, None, :]
            if w:
                value = factor_values(plan, items, w, q)
                for f in range(w):
                    table = (value[:, f, :, None, :] * table[:, None]).reshape(len(items), -1, n_q)
            offset = start + (first << w)
            self.values[offset : offset + (len(block) << w)] = table.reshape(-1, n_q)

    def _cell_values(self, plan: TreePlan, cells: Cells, members: np.ndarray, w: int, q: np.ndarray) -> None:
        """Products factor by factor on the cells each member's view has (gathered by bit)."""
        n_q = len(q)
        items = self.items[members]
        constant = _constants(plan, items, q)
        value = factor_values(plan, items, w, q).reshape(-1, n_q)  # row (member * w + f) * 2 + bit
        entry_member = np.repeat(np.arange(len(members)), self.size[members])
        comb = cells.entry_combinations(self.view[members])
        start = self.base[members[0]]
        step = max(1, self.block // (2 * max(1, w) * n_q))
        for first in range(0, len(comb), step):
            member = entry_member[first : first + step]
            code = comb[first : first + step]
            product = rows_of(constant, member)
            for f in range(w):
                product *= rows_of(value, (member * w + f) * 2 + ((code >> f) & 1))
            self.values[start + first : start + first + len(code)] = product

    def blocks(self, plan: TreePlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chunk's blocks in table order: ``(block, first, count)``, each block's first position
        in :attr:`order` and its number of items there (adjacent, with tables of one size)."""
        block = plan.item_block[self.items[self.order]]
        first = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
        return block[first], first, np.diff(np.r_[first, len(block)])
