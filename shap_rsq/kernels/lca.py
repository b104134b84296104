"""Numerics of the Q-SHAP kernel: evaluate a :class:`~shap_rsq.kernels.lca_plan.TreePlan` on rows.

For one tree the per-feature Shapley values of the tree game are

    phi_j = int_0^1 sum_i [ w_quad_i d/dq_j M_i(q) + w_lin_i d/dq_j mu_i(q) ] dq,

with ``M`` the multilinear extension of the squared conditional expectation and
``mu`` that of the conditional expectation (see ``kernels.lca_plan``).  The integrand is a
polynomial of degree below ``2 * n_q`` in ``q``, so Gauss-Legendre quadrature
with ``n_q`` nodes is exact.  Products "all factors but one" are built from
prefix and suffix products, never by division, so zero cover fractions are safe.

A row reaches the kernel only through its leaf codes, and an item only through
the bits its bit-dependent factors read (its *view* of the code).  Items are
evaluated once per distinct ``(view, masked code)`` *cell* (``kernels.lca_cells``, or on all
bit combinations where most of them occur, ``kernels.lca_tables``); rows then
gather their groups' side sums from the cells and scatter their cotangents back,
and in the global mode the row weights are first accumulated per cell.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

from ..models.forest import goes_left
from ..tuning import DEFAULT_TUNING, Tuning
from .lca_cells import (
    BLOCK,
    Cells,
    Factors,
    rows_of,
    scatter_features,
)
from .lca_plan import LIN, TreePlan
from .lca_tables import Layout
from .sparse import OneHot

__all__ = ["gauss_legendre", "leaf_codes", "weighted_gradient"]

_CHUNK_CELLS = DEFAULT_TUNING.chunk_cells  # cross cells of one chunk (see Tuning.chunk_cells)


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
    left = goes_left(x, plan.split_threshold, plan.split_default_left)
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


def _blocks(n: int, per_item: int):
    step = max(1, BLOCK // max(1, per_item))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


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


def _segment_indptr(n_rows: int, n_items: int, seg_starts: np.ndarray, dtype) -> np.ndarray:
    """Row pointers of :func:`_segment_matrix` for up to ``n_rows`` rows: the first ``m * segments + 1``
    serve any block of ``m`` rows (``seg_starts[0]`` is 0), so a chunk builds them once."""
    return (np.arange(n_rows + 1, dtype=dtype)[:, None] * n_items + seg_starts[None, :].astype(dtype)).ravel()


def _segment_matrix(row_cell: np.ndarray, indptr: np.ndarray, n_segments: int, n_cells: int) -> OneHot:
    """One-hot ``(rows * segments, cells)``: row ``(u, s)`` picks the cells of the items of
    segment ``s`` for row ``u``, so its ``sums`` of a cell table sum each side of each group."""
    return OneHot(indptr[: row_cell.shape[0] * n_segments + 1], row_cell.ravel(), n_cells)


def weighted_gradient(
    plan: TreePlan, codes: np.ndarray, w_quad: np.ndarray, w_lin: np.ndarray, tuning: Tuning = DEFAULT_TUNING
) -> np.ndarray:
    """Shapley values of the tree game summed over rows, per local feature ``(K,)``.

    ``codes`` are leaf codes of distinct rows with their aggregated weights; ``tuning`` says
    which widths of items are tabulated densely (results do not depend on it).
    """
    q, gl = gauss_legendre(plan.n_q)
    cells = Cells(plan, codes)
    factors = Factors(plan, q)

    single = slice(0, plan.n_single)
    cell_item, cell_real, first = cells.item_cells(plan, single)
    row_cell = cells.row_cells(plan, single, first[:-1])
    weight = np.where(plan.item_kind[single] == LIN, w_lin[:, None], w_quad[:, None])
    per_cell = np.bincount(row_cell.ravel(), weights=weight.ravel(), minlength=len(cell_item))
    layout = Layout(plan, np.arange(single.start, single.stop)[cell_item], cells.cell_code[cell_real], tuning)
    out = layout.weighted_slopes(plan, factors, per_cell[:, None] * gl)

    n_items = len(plan.item_leaf)
    if n_items == plan.n_single:
        return out
    cross = slice(plan.n_single, n_items)
    cell_item, cell_real, first = cells.item_cells(plan, cross)
    layout = Layout(plan, np.arange(cross.start, cross.stop)[cell_item], cells.cell_code[cell_real], tuning)
    value = layout.values(plan, factors)
    coef, dcoef = _group_coefficients(plan, q)
    # the cotangent of a left item is C_g sum_u w_u B_g (of a right item C_g sum_u w_u A_g): the
    # group's coefficient, the same for every row, multiplies the histograms once at the end
    hist = np.zeros((len(cell_item), len(q)))
    both = np.zeros_like(coef)  # sum_u w_u A_g B_g
    for groups, _, chunk, _, block, gather, sums in _side_sums(plan, cells, first, value, codes.shape[0], 1):
        partner = sums[:, ::-1] * w_quad[block, None, None, None]
        chunk_hist = np.zeros((gather.shape[1], len(q)))
        gather.add_transposed(partner.reshape(-1, len(q)), chunk_hist)
        _add_to_spans(hist, chunk, chunk_hist)
        both[groups] += np.einsum("ugq,ugq->gq", sums[:, 0], partner[:, 0])
    hist *= rows_of(coef * gl, plan.item_group[cell_item])
    out += layout.weighted_slopes(plan, factors, hist)
    out += scatter_features(plan, plan.group_T, np.einsum("gq,gtq,q->gt", both, dcoef, gl))
    return out


def _side_sums(plan: TreePlan, cells: Cells, first: np.ndarray, value: np.ndarray, n_rows: int, per_q: int):
    """Each group's side sums for each row, chunk by chunk of groups (``_group_chunks``) and block
    by block of rows: ``(groups, items, chunk, row_cell, rows, gather, sums)`` with ``chunk`` the
    chunk's two spans of cells (``_group_chunks``), ``row_cell`` the rows' cells numbered within
    it, ``gather`` their one-hot segment matrix and ``sums`` ``(rows, 2, groups, Q)``.  ``per_q``
    scales the row blocks for callers with wider temporaries."""
    cross = slice(plan.n_single, len(plan.item_leaf))
    n_q = value.shape[1]
    for groups, items, base, chunk, seg_starts in _group_chunks(plan, first):
        # the chunk's cells renumbered from 0: its value and cotangent tables stay in cache
        chunk_cell = cells.row_cells(plan, cross, base, items)
        chunk_value = _rows_of_spans(value, chunk)
        blocks = list(_blocks(n_rows, len(items) * n_q * per_q))
        indptr = _segment_indptr(blocks[0].stop, len(items), seg_starts, chunk_cell.dtype)
        for rows in blocks:
            gather = _segment_matrix(chunk_cell[rows], indptr, len(seg_starts), len(chunk_value))
            sums = gather.sums(chunk_value).reshape(-1, 2, groups.stop - groups.start, n_q)
            yield groups, items, chunk, chunk_cell[rows], rows, gather, sums


def _group_chunks(plan: TreePlan, first: np.ndarray):
    """Consecutive groups whose cross cells number about ``_CHUNK_CELLS``.

    Per chunk: its groups (a slice), its item columns (the left sides' items, then the right
    sides'), where each of them starts in the chunk's own numbering of its cells, those cells
    (two slices: the left sides' cells, then the right sides'), and the chunk's segment starts
    within its columns.
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
        spans = tuple(slice(first_cell[a], first_cell[b]) for a, b in sides)
        base = first[items] - np.repeat([first_cell[ga], first_cell[n_groups + ga] - n_left_cells], n_items)
        seg_starts = np.concatenate(
            [
                plan.seg_starts[ga:gb] - bounds[ga],
                plan.seg_starts[n_groups + ga : n_groups + gb] - bounds[n_groups + ga] + n_items[0],
            ]
        )
        yield slice(ga, gb), items, base, spans, seg_starts


# A chunk's cells are two ranges of the cell tables: slices, not index arrays (a fancy-indexed
# ``+=`` of the cotangent histogram cost 9% of depth-8 XGBoost).
def _rows_of_spans(table: np.ndarray, spans: tuple[slice, slice]) -> np.ndarray:
    return np.concatenate([table[span] for span in spans])


def _add_to_spans(table: np.ndarray, spans: tuple[slice, slice], part: np.ndarray) -> None:
    start = 0
    for span in spans:
        stop = start + span.stop - span.start
        table[span] += part[start:stop]
        start = stop
