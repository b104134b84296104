"""Blocks of items and their slopes by the log-derivative.

Every factor of an item (``kernels.lca.plan``) is affine in ``q`` given its pass bit,
``phi = a_bit + q b_bit``, and an item's value is ``V = coef x prod phi``.  The slope of ``V``
along the coin of factor ``f`` is ``b_f x prod_{f' != f} phi_f' = V x rho_f(bit)`` with
``rho = b / phi``, so the weighted slopes of all of an item's factors come from one table
``z = cotangent x V`` and, per factor, the sums of ``z`` over the cells where its bit is 0 and
where it is 1.  A factor that is zero somewhere is zero for every ``q`` (a zero cover fraction,
or ``d = p - r`` with ``r`` = 1): its slope ``b`` is zero as well, ``rho`` is set to 0 there,
and every cell where it vanishes has ``z = 0``.  Nothing is ever divided by zero, and no
product of "all factors but one" is formed.  Because ``rho`` stays between ``-1 / (1 - q)``
and ``1 / q``, dividing costs no precision: ``V x rho`` is a product of the same numbers.

A *block* is the items of one leaf at one split (``TreePlan.item_block``): its coupled
features expanded over subsets ``T``.  They read the same bits (one view) and have the same
factors except at the coupled ones, where an item has ``h`` (``T`` leaves the feature out: a
slope) or ``d = p - r`` (``T`` holds it: no slope).  So ``z`` is summed over a block's items
first, and each factor's bit sums are taken once per block: the sum over all its items for the
factors they share (*uniform* factors), the sum over the items with a slope for the others.
A single item (linear or diagonal) is a block of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lca.plan import TreePlan
from .sparse import OneHot, offsets, ranges, segment_sums

__all__ = ["Blocks", "ChunkBlocks", "plan_blocks", "slope_ratios"]


@dataclass(frozen=True)
class Blocks:
    """Row-independent block tables of a plan (``B`` blocks, factor columns ``F`` as in the plan).

    Attributes
    ----------
    carry : ndarray of bool, shape (I, F)
        Whether factor ``f`` of item ``i`` has a slope (``b != 0`` at either bit).
    uniform : ndarray of bool, shape (B, F)
        Whether every item of the block carries factor ``f`` (or none does).
    coef : ndarray, shape (B, F, 4)
        ``(a0, b0, a1, b1)`` of factor ``f`` in the block's items that carry it.
    width : ndarray of int, shape (B,)
        Bit-dependent factors of the block's items (the first ``width`` columns).
    feat : ndarray of int, shape (B, F)
        Tree-local feature of each factor (``K``: no feature).
    leaf : ndarray of int, shape (B,)
        The block's leaf.
    bit : ndarray of int, shape (B, F)
        The leaf-code bit each factor reads.
    view : ndarray of int, shape (B,)
        The block's view (``TreePlan.view_leaf`` / ``view_mask``).
    """

    carry: np.ndarray
    uniform: np.ndarray
    coef: np.ndarray
    width: np.ndarray
    feat: np.ndarray
    leaf: np.ndarray
    bit: np.ndarray
    view: np.ndarray

    @property
    def n_blocks(self) -> int:
        return len(self.width)


def plan_blocks(plan: TreePlan) -> Blocks:
    """The block tables of ``plan``: every item of a block shares its view and factor layout."""
    block = plan.item_block
    n_blocks = int(block.max(initial=-1)) + 1
    columns = np.arange(plan.fac_pos.shape[1])
    has_factor = columns < plan.item_n_fac[:, None]
    carry = has_factor & ((plan.fac_b0 != 0.0) | (plan.fac_b1 != 0.0))
    # items of a block share their layout: any item gives it (the last one written wins, all agree)
    width = np.zeros(n_blocks, dtype=np.int64)
    width[block] = plan.item_n_var
    view = np.zeros(n_blocks, dtype=np.int64)
    view[block] = plan.item_view
    leaf = np.zeros(n_blocks, dtype=np.int64)
    leaf[block] = plan.item_leaf
    feat = np.zeros((n_blocks, len(columns)), dtype=np.int64)
    feat[block] = plan.fac_feat  # K marks the padding factors
    bit = np.zeros((n_blocks, len(columns)), dtype=np.int64)
    bit[block] = plan.fac_pos
    i, f = np.nonzero(carry)
    at = block[i] * len(columns) + f  # (block, factor) of each carried factor, flat
    coef = np.zeros((n_blocks * len(columns), 4))
    for k, table in enumerate((plan.fac_a0, plan.fac_b0, plan.fac_a1, plan.fac_b1)):
        coef[at, k] = table[i, f]
    carriers = np.bincount(at, minlength=n_blocks * len(columns)).reshape(n_blocks, len(columns))
    items = np.bincount(block, minlength=n_blocks)
    uniform = (carriers == 0) | (carriers == items[:, None])
    coef = coef.reshape(n_blocks, len(columns), 4)
    return Blocks(carry, uniform, coef, width, feat, leaf, bit, view)


def slope_ratios(blocks: Blocks, q: np.ndarray, block: np.ndarray | None = None) -> np.ndarray:
    """``rho (B, F, 2, Q)``: each block factor's ``b / phi`` at both bits (0 where ``phi`` is zero,
    which makes ``b`` zero too); only for the blocks ``block``, in its order, when given."""
    coef = blocks.coef if block is None else blocks.coef[block]
    b = coef[:, :, 1::2, None]
    phi = coef[:, :, 0::2, None] + b * q
    rho = np.zeros_like(phi)
    np.divide(b, phi, out=rho, where=phi != 0.0)
    return rho


def _table_sums(base: np.ndarray, size: np.ndarray, ptr: np.ndarray, n_columns: int) -> OneHot:
    """Rows ``(r, k)``, ``k < size[r]``, each summing columns ``base[i] + k`` for the items
    ``i`` in ``ptr[r] .. ptr[r + 1]``: the tables, of one size per ``r``, of some items summed
    entry by entry."""
    n_items = np.diff(ptr)
    n_rows = int(size.sum())
    row_r = np.repeat(np.arange(len(size)), size)
    row_k = ranges(0, size)
    per_row = n_items[row_r]
    item = ranges(ptr[row_r], per_row)
    at = np.repeat(np.arange(n_rows), per_row)
    return OneHot(offsets(per_row), (base[item] + row_k[at]).astype(np.int64), n_columns)


class ChunkBlocks:
    """The blocks of a chunk's items (``kernels.batching.chunks.Chunk``), and what their slopes need.

    Block ``c`` holds the items at table-order positions ``first[c] .. first[c] + count[c]``.
    Its factor ``f`` is summed over all those items where every one of them carries it
    (``uniform``); where only some do (a coupled factor), the carriers make a *stream* of their
    own (``stream_c``, ``stream_f``, carriers ``stream_items[stream_ptr[s]:stream_ptr[s + 1]]``,
    positions within the block).  A factor no item of the chunk carries contributes nothing.
    """

    def __init__(self, plan: TreePlan, blocks: Blocks, chunk, q: np.ndarray):
        block, first, count = chunk.blocks(plan)
        self.first, self.count = first, count
        carry = blocks.carry[chunk.items[chunk.order]]
        some = np.logical_or.reduceat(carry, first, axis=0)
        self.uniform = np.logical_and.reduceat(carry, first, axis=0)
        self.rho = slope_ratios(blocks, q, block)  # (C, F, 2, Q) at the chunk's quadrature nodes
        self.q = q
        # every factor kind with a slope is q p + (1 - q) R, b0 = -a0 (``kernels.lca.plan._TABLE``):
        # where its bit is 0, rho = -1 / (1 - q) whatever R, or 0 when R = 0 (tested); per-row
        # kernels contract the former with one weight vector
        a0, b0 = blocks.coef[block, :, 0], blocks.coef[block, :, 1]
        self.unit_rho0 = (a0 == -b0) & (a0 != 0.0)
        self.feat = blocks.feat[block]
        self.width = blocks.width[block]
        self.leaf = blocks.leaf[block]
        self.bit = blocks.bit[block]
        self.stream_c, self.stream_f = np.nonzero(some & ~self.uniform)
        sc = self.stream_c
        member = np.repeat(np.arange(len(sc)), count[sc])
        j = ranges(0, count[sc])
        keep = carry[first[sc[member]] + j, self.stream_f[member]]
        self.stream_ptr = offsets(np.bincount(member[keep], minlength=len(sc)))
        self.stream_items = j[keep]

    def stream_positions(self) -> np.ndarray:
        """Table-order position of every stream's carriers, stream after stream."""
        return np.repeat(self.first[self.stream_c], np.diff(self.stream_ptr)) + self.stream_items

    def entry_slopes(self, chunk, cells, weights: np.ndarray, n_factors: int) -> np.ndarray:
        """``(n_factors, entries)``: each entry's item's slope along each of its first ``n_factors``
        factors at the entry's bits, ``sum_q weights V(q) rho_f(q, bit)``, for a chunk whose blocks
        hold one item each (the single items) and whose values are ``V``.

        Where a factor is ``q p + (1 - q) R`` its bit-0 ratio is taken as ``-1 / (1 - q)``, without
        the rounding of ``phi``, as the per-row kernel does.
        """
        rho = self.rho[:, :n_factors].copy()
        rho[:, :, 0][self.unit_rho0[:, :n_factors]] = -1.0 / (1.0 - self.q)
        rho = rho.reshape(-1, len(self.q))  # row (block x n_factors + f) x 2 + bit
        size = chunk.size[chunk.order]
        block = np.repeat(np.arange(len(size)), size)  # each entry's block: table order is block order
        comb = cells.entry_combinations(chunk.view[chunk.order])
        width = self.width[block]
        weighted = chunk.values * weights
        slopes = np.empty((n_factors, chunk.n_entries))
        for f in range(n_factors):
            bit = np.where(f < width, (comb >> f) & 1, 0)
            slopes[f] = np.einsum("eq,eq->e", weighted, np.take(rho, (block * n_factors + f) * 2 + bit, axis=0))
        return slopes

    def global_slopes(self, chunk, cells, z: np.ndarray, n_features: int) -> np.ndarray:
        """``(K,)`` slopes of the chunk's items weighted by ``z = cotangent x value`` on its entries."""
        out = np.zeros(n_features + 1)
        position_class = np.empty(len(chunk.order), dtype=np.int64)
        for k, (positions, _, _) in enumerate(chunk.classes):
            position_class[positions] = k
        block_class = position_class[self.first]
        stream_class = block_class[self.stream_c]
        for k, (_, dense, w) in enumerate(chunk.classes):
            cs = np.flatnonzero(block_class == k)
            ss = np.flatnonzero(stream_class == k)
            sums = (self._dense_sums if dense else self._cell_sums)(chunk, cells, z, w, cs, ss)
            total, ones, s_total, s_ones = sums
            rho = self.rho[cs]
            slope = np.einsum("bq,bfq->bf", total, rho[:, :, 0])
            slope[:, :w] += np.einsum("bfq,bfq->bf", ones, rho[:, :w, 1] - rho[:, :w, 0])
            uniform = self.uniform[cs]
            out += np.bincount(self.feat[cs][uniform], weights=slope[uniform], minlength=n_features + 1)
            if not len(ss):
                continue
            f = self.stream_f[ss]
            r = self.rho[self.stream_c[ss], f]
            slope = np.einsum("sq,sq->s", s_total, r[:, 0])
            bitwise = f < w
            slope[bitwise] += np.einsum("sq,sq->s", s_ones[bitwise], r[bitwise, 1] - r[bitwise, 0])
            out += np.bincount(self.feat[self.stream_c[ss], f], weights=slope, minlength=n_features + 1)
        return out[:n_features]

    def _item_bases(self, chunk, cs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The table bases of the items of blocks ``cs``, block after block, and their pointers."""
        positions = ranges(self.first[cs], self.count[cs])
        return chunk.base[chunk.order[positions]], offsets(self.count[cs])

    def _stream_bases(self, chunk, ss: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The table bases of the carriers of streams ``ss``, stream after stream, and their pointers."""
        count = np.diff(self.stream_ptr)[ss]
        carriers = ranges(self.stream_ptr[ss], count)
        positions = np.repeat(self.first[self.stream_c[ss]], count) + self.stream_items[carriers]
        return chunk.base[chunk.order[positions]], offsets(count)

    def _dense_sums(self, chunk, cells, z, w, cs, ss):
        """Per block of a dense class: ``z`` summed over its items and entries ``(nb, Q)`` and over the
        entries where bit ``f`` is 1 ``(nb, w, Q)``; the same for its streams (own bit only)."""
        n_q = z.shape[1]
        size = 1 << w
        base, ptr = self._item_bases(chunk, cs)
        zall = _table_sums(base, np.full(len(cs), size), ptr, len(z)).sums(z).reshape(len(cs), size, n_q)
        total, ones = _halving_sums(zall)
        if not len(ss):
            return total, ones, None, None
        base, ptr = self._stream_bases(chunk, ss)
        zs = _table_sums(base, np.full(len(ss), size), ptr, len(z)).sums(z).reshape(len(ss), size, n_q)
        f = self.stream_f[ss]
        bits = _bit_matrix(w)
        s_ones = np.einsum("skq,sk->sq", zs, bits[:, np.minimum(f, max(w - 1, 0))].T) if w else zs.sum(axis=1)
        return total, ones, zs.sum(axis=1), s_ones

    def _cell_sums(self, chunk, cells, z, w, cs, ss):
        """:meth:`_dense_sums` for a class of per-cell tables (each block's view has its own cells)."""
        lead = chunk.order[self.first[cs]]
        size = chunk.size[lead]
        base, ptr = self._item_bases(chunk, cs)
        zall = _table_sums(base, size, ptr, len(z)).sums(z)
        starts = np.cumsum(size) - size
        comb = cells.entry_combinations(chunk.view[lead])
        total = segment_sums(zall, starts)
        ones = _bit_sums(zall, comb, size, w)
        if not len(ss):
            return total, ones, None, None
        c = np.searchsorted(cs, self.stream_c[ss])  # each stream's block among cs
        base, ptr = self._stream_bases(chunk, ss)
        zs = _table_sums(base, size[c], ptr, len(z)).sums(z)
        s_starts = np.cumsum(size[c]) - size[c]
        s_comb = comb[ranges(starts[c], size[c])]
        f = self.stream_f[ss]
        s_bit = (s_comb >> np.repeat(np.minimum(f, 62), size[c])) & 1
        return total, ones, segment_sums(zs, s_starts), segment_sums(zs * s_bit[:, None], s_starts)


def _halving_sums(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of dense tables ``(B, 2^w, Q)`` (entry ``k`` the combination whose bit ``f`` is
    ``(k >> f) & 1``): the sums over all entries ``(B, Q)`` and over those where bit ``f`` is 1
    ``(B, w, Q)``.

    The top bit splits a table into halves: its sum is the upper half's, and the two halves
    added make the table of the other bits.  About ``2 x 2^w`` additions a table, where the
    product with the ``(2^w, w)`` bit matrix took ``w x 2^w`` and a transposed copy (a third of
    the global slopes of a fully grown tree).
    """
    n_tables, size, n_q = table.shape
    w = size.bit_length() - 1
    ones = np.empty((n_tables, w, n_q))
    for f in range(w - 1, -1, -1):
        halves = table.reshape(n_tables, 2, 1 << f, n_q)
        ones[:, f] = halves[:, 1].sum(axis=1)
        table = halves[:, 0] + halves[:, 1]
    return table[:, 0], ones


def _bit_sums(table: np.ndarray, comb: np.ndarray, size: np.ndarray, w: int) -> np.ndarray:
    """Per run of ``size`` rows of ``table (cells, Q)``, the sums of the rows whose combination
    ``comb`` has bit ``f`` set: ``(runs, w, Q)``.

    A pass per bit, masked, took more than half the global slopes of a fully grown tree.  Runs
    of many cells are summed into two dense tables, over their low and their high bits, whose bit
    sums come by halving; others take one sparse product with an entry per set bit.
    """
    n_q = table.shape[1]
    low = w // 2
    n_low, n_high = 1 << low, 1 << (w - low)
    if w >= 4 and len(size) * (n_low + n_high) <= len(comb):
        run = np.repeat(np.arange(len(size), dtype=np.int64), size)
        halves = []
        for index, n_entries in ((run * n_low + (comb & (n_low - 1)), n_low), (run * n_high + (comb >> low), n_high)):
            dense = np.zeros((len(size) * n_entries, n_q))
            OneHot.picks(index.astype(np.int64), len(dense)).add_transposed(table, dense)
            halves.append(_halving_sums(dense.reshape(len(size), n_entries, n_q))[1])
        return np.concatenate(halves, axis=1)
    out = np.zeros((len(size) * w, n_q))
    if w and len(comb):
        set_bits = ((comb[:, None] >> np.arange(w, dtype=comb.dtype)) & 1).astype(bool)  # (cells, w)
        cell, f = np.nonzero(set_bits)
        run = np.repeat(np.arange(len(size), dtype=np.int64), size)
        columns = run[cell] * w + f
        indptr = offsets(np.bincount(cell, minlength=len(comb)))  # 2-4x faster than counting along rows
        OneHot(indptr, columns, len(out)).add_transposed(table, out)
    return out.reshape(len(size), w, n_q)


def _bit_matrix(w: int) -> np.ndarray:
    """``(2^w, w)``: bit ``f`` of each combination, as floats."""
    return ((np.arange(1 << w)[:, None] >> np.arange(w)) & 1).astype(float)
