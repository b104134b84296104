"""Per-row values of one tree through the LCA kernel: each row's gradients of ``m_S^2`` and ``m_S``.

Row ``u``'s Shapley values of the tree game are ``w_quad_u G_quad[u] + w_lin_u G_lin[u]``,
so the kernel returns both gradients with unit weights.  The linear one is TreeSHAP's
path-dependent SHAP value; the quadratic one weights every cross item's slopes by the row's
own cotangent ``C_g(q) * (the other side's sum)``.

Slopes come from the log-derivative (``kernels.batching.blocks``): per row, ``z = cotangent x value``
of every item, summed over the items of each block, gives every factor's slope as
``sum_q z rho(bit)`` with the row's own bit.  Per row that is one multiply-add per item and
quadrature node, one per (block, bit-dependent factor, node) and one per (block, factor): no
product of "all factors but one" and no ``(rows, items, factors)`` array is formed.  The single
items (linear and diagonal) have no cotangent, so their slopes are summed over the nodes once per
entry of their tables and each row reads one number per (item, factor).
"""

from __future__ import annotations

import numpy as np

from ...tuning import DEFAULT_TUNING, Tuning
from ..batching.blocks import ChunkBlocks, plan_blocks
from ..batching.cells import Cells
from ..batching.chunks import Chunk
from ..batching.sparse import OneHot, offsets, weighted_sums
from ..quadrature import gauss_legendre
from ..row_patterns import ranked_keys
from .global_values import _blocks, _chunks, _log_slope
from .plan import LIN, TreePlan

__all__ = ["pattern_gradients"]


def pattern_gradients(
    plan: TreePlan, codes: np.ndarray, tuning: Tuning = DEFAULT_TUNING
) -> tuple[np.ndarray, np.ndarray]:
    """Per-row gradients with unit weights: ``(G_quad, G_lin)``, each ``(n, K)``.

    ``codes`` are the leaf codes ``(n, L)`` of distinct rows; row ``i``'s Shapley values of the
    tree game are ``w_quad_i G_quad[i] + w_lin_i G_lin[i]``.
    """
    cells = Cells(plan, codes, tuning)
    blocks = plan_blocks(plan)
    n = codes.shape[0]
    bits = _PassBits(plan, codes)
    # accumulated transposed (features, rows), one sparse product per block of rows adding into
    # it: the quadratic gradients in rows 0 .. K, the linear ones in rows K + 1 .. 2K + 1
    both = np.zeros((2 * (plan.n_features + 1), n))
    g_quad, g_lin = both[: plan.n_features + 1], both[plan.n_features + 1 :]
    # single items in one chunk: the linear ones write to the second half
    q, gl = gauss_legendre(plan.single_q)
    single = np.arange(plan.n_single)
    chunk = Chunk(plan, cells, single, q, tuning)
    chunk_blocks = ChunkBlocks(plan, blocks, chunk, q)
    linear = plan.item_kind[chunk.items[chunk.order[chunk_blocks.first]]] == LIN  # per block
    offset = np.where(linear, plan.n_features + 1, 0)
    n_factors = int(plan.item_n_fac[single].max(initial=0))
    if n_factors * chunk.n_entries <= tuning.block_elements_within:  # the table of every entry's slopes
        _single_slopes(plan, cells, chunk, chunk_blocks, blocks, n_factors, gl, offset, both, tuning)
    else:
        row_slopes = _RowSlopes(chunk_blocks, chunk, plan.n_features, bits, offset)
        entries = cells.item_entry_reader(plan, plan.item_view[single], chunk.base)
        values = np.ascontiguousarray(chunk.values.T) * gl[:, None]  # (Q, entries), quadrature weights in
        for rows in _blocks(n, 3 * len(single) * len(q), tuning.block_elements_within):
            z = np.take(values, entries(rows), axis=1)  # (Q, items, rows)
            row_slopes.add(z, rows, both[:, rows])
    if len(plan.item_leaf) > plan.n_single:
        _cross(plan, cells, blocks, bits, n, g_quad, tuning)
    return g_quad[:-1].T.copy(), g_lin[:-1].T.copy()


def _single_slopes(
    plan, cells, chunk, chunk_blocks, blocks, n_factors: int, gl, offset, out: np.ndarray, tuning: Tuning
) -> None:
    """Add the single items' slopes into ``out (outputs, n)``, read per row from a table of entries.

    A single item's per-row slope along factor ``f`` is ``sum_q gl V(q) rho_f(q, bit)``, and
    its value ``V`` and the bit are those of the row's entry: no cotangent of the row enters.
    So the slopes are summed over the nodes once per entry of the items' tables, ``slopes
    (n_factors, entries)``, and every row gathers one number per (item, factor with a slope) and
    adds it to the factor's feature, where each row took its own sums over the nodes of every
    factor (:class:`_RowSlopes`): per-row shares of XGBoost depth 6 took 1.1x less time.
    """
    cb = chunk_blocks  # every single item is a block of its own, in table order
    slopes = cb.entry_slopes(chunk, cells, gl, n_factors)
    # the factors with a slope: one gathered number per row each, added to its feature's output
    item = chunk.order  # the caller position of each block's item
    c, f = np.nonzero(blocks.carry[chunk.items[item]][:, :n_factors])
    features = cb.feat[c, f] + offset[c]
    where = chunk.base[item[c]] + f * chunk.n_entries  # factor f of an item reads row f of the table
    entries = cells.item_entry_reader(plan, plan.item_view[chunk.items[item[c]]], where)
    scatter = OneHot.picks(features, out.shape[0])
    table = slopes.ravel()
    row_blocks = list(_blocks(out.shape[1], 2 * len(c), tuning.block_elements_within))
    # each block's indices and slopes written into two buffers reused block by block: fresh
    # temporaries of their size (megabytes) were mapped and zeroed by the system block after block
    most = len(c) * max((rows.stop - rows.start for rows in row_blocks), default=0)
    index, picked = np.empty(most, dtype=np.intp), np.empty(most)
    for rows in row_blocks:
        shape = (len(c), rows.stop - rows.start)
        at = index[: shape[0] * shape[1]].reshape(shape)
        np.copyto(at, entries(rows))  # a 1-D take by narrow indices ran 3x slower than casting them first
        # the indices are in range: mode="clip" only spares the buffer the default mode copies through
        slope = np.take(table, at, out=picked[: at.size].reshape(shape), mode="clip")
        scatter.add_transposed(slope, out[:, rows])


def _cross(plan, cells, blocks, bits: _PassBits, n: int, g_quad: np.ndarray, tuning: Tuning) -> None:
    """Add the cross items' gradients into ``g_quad (K + 1, n)``: their slopes weighted by each row's
    cotangents, and the slopes of the group coefficients ``C_g`` (in their expanded features).

    The right items' tables carry ``C_g`` and the quadrature weights (``_chunks``), so a left
    item's cotangent is the right side's sum as it is, and a right item's value already holds
    them: ``z = value x (the other side's sum)`` for both."""
    for chunk, parts in _chunks(plan, cells, tuning):
        q = chunk.q
        values = np.ascontiguousarray(chunk.values.T)  # (Q, entries): rows gather node-major stacks
        log_slope = _log_slope(q)
        for groups, start, stop, seg_starts in parts:
            part = chunk.part_of(start, stop)
            chunk_blocks = ChunkBlocks(plan, blocks, part, q)
            row_slopes = _RowSlopes(chunk_blocks, part, plan.n_features, bits)
            entries = cells.item_entry_reader(plan, plan.item_view[part.items], chunk.base[start:stop])
            n_groups = groups.stop - groups.start
            n_items = stop - start
            segment = np.repeat(np.arange(len(seg_starts)), np.diff(np.append(seg_starts, n_items)))
            side, group = np.divmod(segment, n_groups)
            partner = (1 - side) * n_groups + group
            # each side of each group summed, node by node: one product on the (Q x items) stack
            sides = OneHot(np.append(seg_starts, n_items), np.arange(n_items), n_items).tiled(len(q))
            # the slopes of C_g, in the features T_g expands (most groups expand none): per (group,
            # feature) of T_g the sides' product contracted with the log-slope, one sparse product
            active_g, active_t = np.nonzero(plan.group_T[groups] < plan.n_features)
            expanded = OneHot.picks(plan.group_T[groups][active_g, active_t], plan.n_features + 1)
            for rows in _blocks(n, 4 * n_items * len(q), tuning.block_elements_within):
                value = np.take(values, entries(rows), axis=1)  # (Q, items, rows)
                n_rows = value.shape[2]
                sums = sides.sums(value.reshape(-1, n_rows)).reshape(len(q), -1, n_rows)  # (Q, 2 groups, rows)
                # the block's gradients, contiguous: the sparse products add into it directly, where
                # each one into the strided ``g_quad[:, rows]`` went through a temporary of its own
                block = np.zeros((g_quad.shape[0], n_rows))
                if len(active_g):
                    both = np.take(sums, active_g, axis=1)  # (Q, pairs, rows): A_g x C_g B_g
                    both *= np.take(sums, n_groups + active_g, axis=1)
                    per_pair = (log_slope @ both.reshape(len(q), -1)).reshape(len(active_g), n_rows)
                    expanded.add_transposed(per_pair, block)
                value *= np.take(sums, partner, axis=1)
                row_slopes.add(value, rows, block)
                g_quad[:, rows] += block


class _RowSlopes:
    """The slopes of one chunk's items for every row, as sparse products per block of rows.

    ``z`` is first summed per block (over its items) and per stream (over its carriers), node
    by node: one product on the ``(Q x items, rows)`` stack.  A factor's slope on a row is
    ``sum_q Z rho_0 + bit x sum_q Z (rho_1 - rho_0)``, with ``Z`` its block's (or stream's) ``z``
    summed over the items that carry it.  The first part adds up over all factors of a feature.
    A factor with a slope is ``q p + (1 - q) R``: ``rho_0`` is ``-1 / (1 - q)`` whatever ``R``
    (``ChunkBlocks.unit_rho0``), or 0 where ``R`` is 0.  So each sum ``Z`` is contracted with
    ``-1 / (1 - q)`` once, and the factors add those up: one product ``(features, sums)``.  The
    second part depends on the row only through one pass bit of the block's leaf, so it is summed
    per (leaf, bit) first, one product ``(leaf bits, sums x Q)``, and then multiplied by the rows'
    bits.
    """

    def __init__(
        self, chunk_blocks: ChunkBlocks, chunk, n_features: int, bits: _PassBits, offset: np.ndarray | None = None
    ):
        cb = chunk_blocks
        n_q = len(cb.q)
        n_blocks = len(cb.feat)
        c, f = np.nonzero(cb.uniform)
        # each block's factors write to rows feature + offset of the output (K + 1 rows a kind)
        offset = np.zeros(n_blocks, dtype=np.int64) if offset is None else offset
        # blocks of one item (no streams then: a stream is some of a block's items) read ``z``
        # itself, item by item: summing them first was a copy of ``z`` through a sparse product
        self.sources = None
        if np.all(cb.count == 1):
            source = chunk.order[cb.first][c]
            self.n_sources = len(chunk.order)
        else:
            # z summed per block (over all its items), then per stream (over its carriers): one product
            carriers = chunk.order[cb.stream_positions()]
            indptr = np.concatenate([offsets(cb.count), len(chunk.order) + cb.stream_ptr[1:]])
            self.sources = OneHot(indptr, np.concatenate([chunk.order, carriers]), len(chunk.order)).tiled(n_q)
            # every factor summed: the blocks' sums first (one per block), then the streams'
            source = np.concatenate((c, n_blocks + np.arange(len(cb.stream_c))))
            self.n_sources = n_blocks + len(cb.stream_c)
        factor_c = np.concatenate((c, cb.stream_c))
        factor_f = np.concatenate((f, cb.stream_f))
        rho = cb.rho[factor_c, factor_f]  # (factors, 2, Q)
        # the factors without unit_rho0 have R = 0: rho_0 = 0, nothing in the first part
        unit = cb.unit_rho0[factor_c, factor_f]
        self.rho0 = -1.0 / (1.0 - cb.q)
        rho[unit, 0] = self.rho0  # b / phi, without the rounding of phi
        feat = cb.feat[factor_c, factor_f] + offset[factor_c]
        self.n_out = n_features + 1 + int(offset.max(initial=0))
        columns = source[:, None] + np.arange(n_q) * self.n_sources  # (factors, Q): node-major, as the sums
        self.first = _csr(feat[unit], source[unit, None], np.ones((int(unit.sum()), 1)), self.n_out)
        # the bit-dependent factors, summed per (leaf, bit) of the rows' codes
        dependent = factor_f < cb.width[factor_c]
        # (output block, row of the bit table): a leaf's linear and diagonal singles write to
        # different rows; the table's rows are in (leaf, bit) order, a small range of keys to rank
        n_bit_rows = len(bits.table)
        row = bits.row(cb.leaf[factor_c[dependent]], cb.bit[factor_c, factor_f][dependent])
        key = offset[factor_c[dependent]] * n_bit_rows + row
        pairs, pair = ranked_keys(key, (int(offset.max(initial=0)) + 1) * n_bit_rows)
        self.bit_rows = pairs % n_bit_rows
        pair_feature = np.zeros(len(pairs), dtype=np.int64)
        pair_feature[pair] = feat[dependent]
        self.to_features = OneHot.picks(pair_feature, self.n_out)
        delta = rho[dependent, 1] - rho[dependent, 0]
        self.second = _csr(pair, columns[dependent], delta, len(pairs))
        self.bits = bits

    def add(self, z: np.ndarray, rows: slice, out: np.ndarray) -> None:
        """Add every factor's slope on ``rows`` to ``out (K + 1, rows)`` (a view of the accumulator),
        from ``z (Q, items, rows)`` in the chunk's item order."""
        n_q, n_items, n_rows = z.shape
        sums = z.reshape(n_q * n_items, n_rows)  # (Q x sources, rows)
        if self.sources is not None:
            sums = self.sources.sums(sums)
        # a contiguous ``out`` takes the products as it is; a strided view goes through a temporary
        direct = out.flags.c_contiguous
        result = out if direct else np.zeros((self.n_out, n_rows))
        contracted = (self.rho0 @ sums.reshape(n_q, -1)).reshape(self.n_sources, n_rows)
        weighted_sums(*self.first, contracted, result)
        per_pair = np.zeros((len(self.bit_rows), n_rows))
        weighted_sums(*self.second, sums, per_pair)
        per_pair *= self.bits.table[self.bit_rows, rows]
        self.to_features.add_transposed(per_pair, result)
        if not direct:
            out += result


class _PassBits:
    """Every row's pass bits, one row of the table per (leaf, bit of its code): a block of rows
    reads its factors' bits as one gather, not as shifts of the codes per chunk."""

    def __init__(self, plan: TreePlan, codes: np.ndarray):
        size = plan.code_size
        self.first = offsets(size)
        self.table = np.empty((int(self.first[-1]), codes.shape[0]), dtype=bool)  # (leaf bits, n)
        widest = int(size.max(initial=0))
        # each leaf's codes in one run, in the narrowest type that holds them (fewer bytes to shift)
        by_leaf = codes.T.astype(np.min_scalar_type((1 << widest) - 1))
        for bit in range(widest):
            leaves = np.flatnonzero(size > bit)
            self.table[self.first[leaves] + bit] = (by_leaf[leaves] >> bit) & 1

    def row(self, leaf: np.ndarray, bit: np.ndarray) -> np.ndarray:
        """Table rows of the given (leaf, bit) pairs."""
        return self.first[leaf] + bit


def _csr(rows: np.ndarray, columns: np.ndarray, data: np.ndarray, n_rows: int):
    """``(indptr, indices, data)`` of a CSR matrix whose row ``rows[i]`` holds ``data[i, k]`` at
    columns ``columns[i, k]`` (rows in any order): sorting the ``rows`` alone, not every entry."""
    # a stable sort of 8- or 16-bit keys is a radix sort: 4x faster on 2,000 rows of 100 features
    order = np.argsort(rows.astype(np.min_scalar_type(n_rows)), kind="stable")
    indptr = offsets(np.bincount(rows, minlength=n_rows) * columns.shape[1])
    return indptr, columns[order].ravel().astype(np.int64), data[order].ravel()
