"""Rows that read the same entries on one side of a group: each side's *patterns* of decisions.

An item of a compiled tree (:class:`~shap_rsq.kernels.lca.plan.TreePlan`) reads a row only
through the pass bits of its view, and a leaf's pass bit of a feature only through the row's
decisions at the splits of that feature on the leaf's path.  So the items of one side of one
group (a *segment*) read a row only through its decisions at the splits behind their views' bits
(the segment's *splits*): rows that decide alike there read the same entries and have the same
side sum.  Where a segment has few splits, its side sums are taken once per distinct pattern of
decisions and each row reads its pattern's sum; the cotangents go back the same way.  The gather
and its scatter then cost ``patterns x items + rows`` instead of ``rows x items``.  The patterns
of a side sum the same entries in the same order as its rows did: the sums are the same numbers.
"""

from __future__ import annotations

import numpy as np

from ..lca.plan import TreePlan
from .cells import Cells, _dedupe
from .sparse import OneHot, offsets, ranges, weighted_sums

__all__ = ["SidePatterns", "entries_at"]


class SidePatterns:
    """The splits of every segment of a plan, and the distinct patterns of the rows on the segments
    that have few of them.

    ``decisions`` are the rows' split decisions ``(m, n_splits + 1)`` (the rows the codes of a
    kernel call were made from).  A segment's patterns are found when it has at least
    ``min_items`` items and at most ``log2(m) + extra_bits`` splits (and at most ``max_bits``):
    more splits leave most rows distinct, and the patterns would cost more than they save.  They
    are found for the whole plan at once, one product and one table of keys: per part of the
    kernel that was a tenth of the tree's time.
    """

    def __init__(
        self, plan: TreePlan, decisions: np.ndarray, extra_bits: float, max_bits: int, min_items: int, dense_slots: int
    ):
        n_groups = len(plan.seg_starts) // 2
        cross = np.arange(plan.n_single, len(plan.item_leaf))
        segment = plan.item_side * n_groups + plan.item_group
        leaf = plan.item_leaf[cross]
        reads = (plan.path_pow[leaf] & plan.view_mask[plan.item_view[cross]][:, None]) != 0  # (items, D)
        item, depth = np.nonzero(reads)
        n_splits = plan.n_splits
        pairs = np.unique(segment[item] * n_splits + plan.path_split[leaf[item], depth])
        n_bits = np.bincount(pairs // n_splits, minlength=2 * n_groups)
        n_rows = decisions.shape[0]
        limit = min(max_bits, int(np.log2(max(n_rows, 1)) + extra_bits))
        items = np.bincount(segment, minlength=2 * n_groups)
        found = (n_bits <= limit) & (items >= min_items)
        self.found = np.full(2 * n_groups, -1, dtype=np.int64)  # each segment's rank among the found, or -1
        self.found[found] = np.arange(int(found.sum()))
        self.n_found = int(found.sum())
        if not self.n_found:
            return
        bits = n_bits[found]
        split = (pairs % n_splits)[np.repeat(found, n_bits)]
        needed, local = np.unique(split, return_inverse=True)
        columns = np.ascontiguousarray(decisions[:, needed].T, dtype=float)  # (splits, m)
        # each segment's key: its splits' decisions as the bits of one integer, read as floats (exact)
        keys = np.zeros((self.n_found, n_rows))
        weighted_sums(offsets(bits), local.astype(np.int64).ravel(), np.ldexp(1.0, ranges(0, bits)), columns, keys)
        slot_first = offsets(np.int64(1) << bits)
        real, pattern = _dedupe(keys.astype(np.int64) + slot_first[:-1, None], int(slot_first[-1]), dense_slots)
        self.pattern_segment = np.searchsorted(slot_first, real, side="right") - 1  # among the found
        self.pattern_first = offsets(np.bincount(self.pattern_segment, minlength=self.n_found))
        self.representative = np.empty(len(real), dtype=np.int64)
        self.representative[pattern] = np.arange(n_rows)  # any row of the pattern: they read alike
        self.pattern = pattern  # (found, m), numbered across the found segments

    def of_part(self, segments: np.ndarray, item_first: np.ndarray, item_count: np.ndarray, reader, n_entries: int):
        """The patterns of the part's segments that have them, or ``None`` when none has.

        ``segments`` are the part's segments (plan numbering) in its order, their items at part
        positions ``item_first .. item_first + item_count``; ``reader(rows, positions)``
        (:func:`entries_at`) gives the entries of those rows at those item positions, in a table
        of ``n_entries``.  Returns ``(chosen, pattern, matrix)``: the positions among ``segments``
        that take patterns, each row's pattern in each of them ``(m, chosen)`` (numbered across
        them from 0), and the one-hot ``(patterns, entries)`` matrix of each pattern's items.
        """
        if not self.n_found:
            return None
        rank = self.found[segments]
        chosen = np.flatnonzero(rank >= 0)
        if not len(chosen):
            return None
        rank = rank[chosen]
        first, stop = self.pattern_first[rank], self.pattern_first[rank + 1]
        count = stop - first
        shift = offsets(count)[:-1] - first  # from the plan's numbering to the part's
        pattern = self.pattern[rank].T + shift
        ids = ranges(first, count)
        per_pattern = np.repeat(item_count[chosen], count)
        positions = ranges(np.repeat(item_first[chosen], count), per_pattern)
        entries = reader(np.repeat(self.representative[ids], per_pattern), positions).astype(np.int64)
        return chosen, pattern, OneHot(offsets(per_pattern), entries, n_entries)


def entries_at(cells: Cells, plan: TreePlan, views: np.ndarray, base: np.ndarray):
    """``reader(rows, positions)``: the entry row ``rows[k]`` reads in view ``views[positions[k]]``,
    plus ``base[positions[k]]`` (:meth:`Cells.entry_reader`, pair by pair)."""
    leaf = plan.view_leaf[views]
    shift = cells.pair_first[views] - cells.leaf_first[leaf]

    def reader(rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return cells.pair_index[cells.row_leaf_cell[rows, leaf[positions]] + shift[positions]] + base[positions]

    return reader
