"""Global values of the LCA kernel: a :class:`~shap_rsq.kernels.lca.plan.TreePlan` on rows, weighted and summed.

For one tree the per-feature Shapley values of the tree game are

    phi_j = int_0^1 sum_i [ w_quad_i d/dq_j M_i(q) + w_lin_i d/dq_j mu_i(q) ] dq,

with ``M`` the multilinear extension of the squared conditional expectation and
``mu`` that of the conditional expectation (see ``kernels.lca.plan``).  The integrand is a
polynomial of degree below ``2 * n_q`` in ``q``, so Gauss-Legendre quadrature
with ``n_q`` nodes is exact.  Slopes come from the log-derivative, summed per block of items
(``kernels.batching.blocks``), where a factor that is zero somewhere has no slope and is never
divided by, so zero cover fractions are safe.

A row reaches the kernel only through its leaf codes, and an item only through
the bits its bit-dependent factors read (its *view* of the code).  Items are
evaluated once per distinct ``(view, masked code)`` *cell* (``kernels.batching.cells``, or on all
bit combinations where most of them occur, ``kernels.batching.chunks``); rows then
gather their groups' side sums from the cells and scatter their cotangents back,
and in the global mode the row weights are first accumulated per cell.
"""

from __future__ import annotations

import itertools

import numpy as np

from ...tuning import DEFAULT_TUNING, Tuning
from ..batching.blocks import ChunkBlocks, plan_blocks
from ..batching.cells import Cells, scatter_features
from ..batching.chunks import Chunk
from ..batching.sparse import OneHot, offsets, ranges
from ..quadrature import gauss_legendre
from .plan import LIN, TreePlan

__all__ = ["leaf_codes", "weighted_gradient"]


def leaf_codes(plan: TreePlan, left: np.ndarray) -> np.ndarray:
    """``(n, L)`` pass-bit codes: bit ``j`` of leaf ``l`` is 1 when the row passes every split
    on feature ``j`` of that leaf's path."""
    # depth by depth on (n, L) arrays: a reduction along a short last axis of an (n, L, D) array
    # ran 3.5x slower (its inner loop is D long); in the narrowest type that holds a code, one
    # byte a leaf up to 8 bits, 3x faster than int64 on depth-8 trees
    dtype = _code_type(int(plan.code_size.max(initial=0)))
    bit = plan.path_pow.astype(dtype)
    failed = np.zeros((left.shape[0], plan.path_split.shape[0]), dtype=dtype)
    for d in range(plan.path_split.shape[1]):
        failed |= (left[:, plan.path_split[:, d]] != plan.path_left[:, d]) * bit[:, d]
    return plan.full_code & ~failed.astype(np.int64)


def _code_type(bits: int) -> np.dtype:
    """The narrowest unsigned type of ``bits`` bits, int64 past 32 (codes are int64 downstream)."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if bits <= np.iinfo(dtype).bits:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def _blocks(n: int, per_item: int, block: int):
    step = max(1, block // max(1, per_item))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def _group_coefficients(plan: TreePlan, q: np.ndarray, groups: slice = slice(None)) -> np.ndarray:
    """``C_g(q) = 2 prod_{k in T_g} q(1-q)`` ``(G, Q)`` of ``groups``."""
    expanded = np.count_nonzero(plan.group_T[groups] < plan.n_features, axis=1)
    return 2.0 * (q * (1.0 - q))[None, :] ** expanded[:, None]


def _log_slope(q: np.ndarray) -> np.ndarray:
    """``(Q,)`` the slope of ``log C_g`` along each feature ``T_g`` expands, ``(1 - 2q) / (q (1 - q))``:
    ``dC_g / dq_k = C_g x`` this, so a sum that carries ``C_g`` gives ``C_g``'s slopes."""
    return (1.0 - 2.0 * q) / (q * (1.0 - q))


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
    which views are tabulated densely and how large a chunk is (results do not depend on it).
    """
    cells = Cells(plan, codes, tuning)
    blocks = plan_blocks(plan)
    # single items: every row adds its weight (w_lin or w_quad) to the entry it reads
    single = np.arange(plan.n_single)
    weight = np.where(plan.item_kind[single] == LIN, w_lin[:, None], w_quad[:, None])
    joined = _joins_singles(plan, cells, tuning)
    if joined:
        out = np.zeros(plan.n_features)
    else:
        q = gauss_legendre(plan.single_q)[0]
        chunk = Chunk(plan, cells, single, q, tuning)
        z = _single_weights(plan, cells, chunk, single, weight) * chunk.values
        out = ChunkBlocks(plan, blocks, chunk, q).global_slopes(chunk, cells, z, plan.n_features)
    if len(plan.item_leaf) == plan.n_single:
        return out

    # cross items, chunk by chunk of groups: the cotangent of a left item is C_g sum_u w_u B_g (of a
    # right item C_g sum_u w_u A_g); the right items' tables carry C_g and the quadrature weights
    # (``_chunks``), so B_g comes with them and a right item's z = (sum_u w_u A_g) x its value does too
    per_group = np.zeros(len(plan.group_T))  # sum_q log-slope x sum_u w_u C_g A_g B_g: the slopes of C_g
    for k, (chunk, parts) in enumerate(_chunks(plan, cells, tuning, joined)):
        q = chunk.q
        if k == 0 and joined:  # the single items' entries take their rows' weights, the others 0
            hist = _single_weights(plan, cells, chunk, len(chunk.items) - plan.n_single + single, weight)
        else:
            hist = np.zeros_like(chunk.values)
        for groups, start, stop, seg_starts in parts:
            entries = cells.entry_reader(plan, plan.item_view[chunk.items[start:stop]], chunk.base[start:stop])
            shape = (len(codes), stop - start)
            for rows, gather, sums in _side_sums(chunk, entries, shape, seg_starts, groups, len(q), 1, tuning):
                # each side's cotangent is the other side's sums times w_u: written in place, side
                # by side, with no weighted copy of both sides and no reversed strided pass
                cotangent = np.empty_like(sums)
                np.multiply(sums[:, 1], w_quad[rows, None, None], out=cotangent[:, 0])
                np.multiply(sums[:, 0], w_quad[rows, None, None], out=cotangent[:, 1])
                gather.add_transposed(cotangent.reshape(-1, len(q)), hist)
        z = hist * chunk.values
        out += ChunkBlocks(plan, blocks, chunk, q).global_slopes(chunk, cells, z, plan.n_features)
        _add_coefficient_slopes(plan, chunk, parts, z, per_group)
    out += scatter_features(plan, plan.group_T, np.where(plan.group_T < plan.n_features, per_group[:, None], 0.0))
    return out


def _joins_singles(plan: TreePlan, cells: Cells, tuning: Tuning) -> bool:
    """Whether the single items' tables ride on the first chunk of cross items, on its quadrature
    nodes (the most of any group: a rule of more nodes than needed is exact too), so that a small
    tree makes one chunk's tables and slopes, not two: when the nodes it adds to their entries
    are at most ``Tuning.join_single_work``."""
    if len(plan.item_leaf) == plan.n_single or plan.group_q[0] < plan.single_q:
        return False
    entries = int(cells.size[plan.item_view[: plan.n_single]].sum())
    return entries * int(plan.group_q[0] - plan.single_q) <= tuning.join_single_work


def _single_weights(plan: TreePlan, cells: Cells, chunk: Chunk, at: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``(entries, Q)``: the rows' weights summed on each entry of the single items (at positions
    ``at`` of the chunk), times the chunk's quadrature weights; 0 on the chunk's other entries."""
    entry = cells.row_entries(plan, plan.item_view[chunk.items[at]], chunk.base[at])
    per_entry = np.bincount(entry.ravel(), weights=weight.ravel(), minlength=chunk.n_entries)
    return per_entry[:, None] * gauss_legendre(len(chunk.q))[1]


def _add_coefficient_slopes(plan: TreePlan, chunk: Chunk, parts, z: np.ndarray, per_group: np.ndarray) -> None:
    """Add into ``per_group`` each expanding group's ``sum_q log-slope x sum_u w_u A_g C_g B_g``.

    That sum is ``z`` summed over the entries of the group's left items (their cotangents carry
    ``C_g B_g``): one pass over those entries, not a product of every row's two sides."""
    left, group = [], []
    for groups, start, _, seg_starts in parts:
        expands = np.flatnonzero(np.any(plan.group_T[groups] < plan.n_features, axis=1))
        if not len(expands):
            continue
        count = seg_starts[expands + 1] - seg_starts[expands]  # the right sides follow the left ones
        left.append(ranges(start + seg_starts[expands], count))
        group.append(np.repeat(groups.start + expands, count))
    if not left:
        return
    left, group = np.concatenate(left), np.concatenate(group)
    size = chunk.size[left]
    per_item = OneHot(offsets(size), ranges(chunk.base[left], size), len(z)).sums(z) @ _log_slope(chunk.q)
    per_group += np.bincount(group, weights=per_item, minlength=len(per_group))


def _side_sums(
    chunk: Chunk, entries, shape: tuple[int, int], seg_starts: np.ndarray, groups: slice, n_q: int, per_q: int, tuning
):
    """Each group's side sums for each row of the chunk, block by block of rows: ``(rows, gather,
    sums)`` with ``gather`` the rows' one-hot segment matrix over the chunk's table and ``sums``
    ``(rows, 2, groups, Q)``.  ``entries(rows)`` gives the block's ``(rows, items)`` entries
    (``Cells.entry_reader``) of ``shape`` in all.  ``per_q`` scales the row blocks for callers
    with wider temporaries."""
    n_groups = groups.stop - groups.start
    n_rows, n_items = shape
    blocks = list(_blocks(n_rows, n_items * n_q * per_q, tuning.side_block_elements_within))
    indptr = None
    for rows in blocks:
        entry = entries(rows)
        if indptr is None:
            indptr = _segment_indptr(blocks[0].stop, n_items, seg_starts, entry.dtype)
        gather = _segment_matrix(entry, indptr, len(seg_starts), chunk.n_entries)
        yield rows, gather, gather.sums(chunk.values).reshape(-1, 2, n_groups, n_q)


def _chunks(plan: TreePlan, cells: Cells, tuning: Tuning, singles: bool = False):
    """The cross items in chunks of consecutive groups, each made of parts.

    A part's items' tables hold about ``tuning.chunk_cells`` entries (the tables rows walk at
    random stay in cache), a chunk's about ``tuning.tabulate_cells_within`` (its values and slopes are
    computed in one pass of NumPy calls).  A chunk's groups need the same quadrature nodes
    (``TreePlan.group_q``, decreasing from group to group): its tables are evaluated on them.
    Per chunk: its :class:`~shap_rsq.kernels.batching.chunks.Chunk` of items, part after part (each
    the left sides' items, then the right sides'), and per part ``(groups, start, stop,
    seg_starts)``: its groups, its items' positions in the chunk and its segment starts within
    them.  The right items' tables carry their group's coefficient ``C_g`` times the quadrature
    weights (``Chunk.scale``): every product of two sides, and every cotangent, then has them once,
    with no pass of its own over the rows.  With ``singles`` the first chunk also holds the single
    items, last, in a part of their own that no part of the list names.
    """
    n_groups = len(plan.seg_starts) // 2
    bounds = np.append(plan.seg_starts, len(plan.item_leaf) - plan.n_single)  # item bounds of the segments
    size = offsets(cells.size[plan.item_view[plan.n_single :]])
    seg_entries = np.diff(size[bounds])
    cumulative = np.cumsum(seg_entries[:n_groups] + seg_entries[n_groups:])
    part_edges = _cuts(cumulative, tuning.chunk_cells)
    chunk_edges = part_edges[np.unique(np.searchsorted(part_edges, _cuts(cumulative, tuning.tabulate_cells_within)))]
    group_items = np.diff(bounds[: n_groups + 1]) + np.diff(bounds[n_groups:])
    levels = _level_cuts(plan.group_q, group_items, chunk_edges, cells.row_leaf_cell.shape[0], tuning)
    part_edges, chunk_edges = np.union1d(part_edges, levels), np.union1d(chunk_edges, levels)
    chunk_q = _chunk_nodes(plan, chunk_edges)
    for (ca, cb), n_q in zip(itertools.pairwise(chunk_edges), chunk_q, strict=True):
        q, gl = gauss_legendre(n_q)
        items, parts, part, scale = [], [], [], []
        start = 0
        edges = part_edges[(part_edges >= ca) & (part_edges <= cb)]
        for k, (ga, gb) in enumerate(itertools.pairwise(edges)):
            sides = ((ga, gb), (n_groups + ga, n_groups + gb))  # segment ranges of the left and right sides
            n_left = bounds[gb] - bounds[ga]
            members = np.concatenate([np.arange(bounds[a], bounds[b]) for a, b in sides])
            seg_starts = np.concatenate(
                [
                    plan.seg_starts[ga:gb] - bounds[ga],
                    plan.seg_starts[n_groups + ga : n_groups + gb] - bounds[n_groups + ga] + n_left,
                ]
            )
            items.append(members)
            part.append(np.full(len(members), k))
            # the right items' tables carry their group's C_g and the quadrature weights
            right_count = np.diff(bounds[n_groups + ga : n_groups + gb + 1])
            weight = _group_coefficients(plan, q, slice(int(ga), int(gb))) * gl
            scale += [np.ones((n_left, n_q)), np.repeat(weight, right_count, axis=0)]
            parts.append((slice(int(ga), int(gb)), start, start + len(members), seg_starts))
            start += len(members)
        items = plan.n_single + np.concatenate(items)
        if singles and ca == 0:
            items = np.concatenate([items, np.arange(plan.n_single)])
            part.append(np.full(plan.n_single, len(parts)))
            scale.append(np.ones((plan.n_single, n_q)))
        yield Chunk(plan, cells, items, q, tuning, np.concatenate(part), np.concatenate(scale)), parts


def _chunk_nodes(plan: TreePlan, edges: np.ndarray) -> list[int]:
    """Quadrature nodes of each chunk of groups ``edges[i] .. edges[i + 1]``: its first group's, or,
    when that group's split began in the chunk before, that chunk's.

    The expansion over coupled features raises each group's degree; only a split's groups summed
    (its pairs) have ``group_q``'s, so a rule is exact for them only if all of a split's groups
    are integrated by it.  A chunk cut by table size inside a split's groups, evaluated on fewer
    nodes than the chunk before, lost digits: 1e-8 of R² on a fully grown tree.
    """
    chunk_q: list[int] = []
    for start in edges[:-1]:
        continues = chunk_q and start > 0 and plan.group_node[start] == plan.group_node[start - 1]
        chunk_q.append(chunk_q[-1] if continues else int(plan.group_q[start]))
    return chunk_q


def _level_cuts(
    group_q: np.ndarray, group_items: np.ndarray, edges: np.ndarray, n_rows: int, tuning: Tuning
) -> np.ndarray:
    """Group edges where a new chunk starts on fewer quadrature nodes, beside the chunk ``edges``.

    A chunk is evaluated on the nodes of its first group, the most of its groups.  Cutting
    where fewer suffice saves ``rows x items x nodes`` of work; it pays when that saving
    exceeds ``tuning.level_work``, the cost of one more chunk (its tables, blocks and sparse
    maps are built again).
    """
    changes = np.flatnonzero(np.diff(group_q)) + 1
    chosen: list[int] = []
    for b in changes:
        k = np.searchsorted(edges, b, side="right")
        start = max(int(edges[k - 1]), chosen[-1] if chosen else 0)  # the chunk ``b`` falls in
        stop = int(edges[k]) if k < len(edges) else len(group_q)
        saved = n_rows * int(group_items[b:stop].sum()) * int(group_q[start] - group_q[b])
        if saved >= tuning.level_work and b not in edges:
            chosen.append(int(b))
    return np.array(chosen, dtype=np.int64)


def _cuts(cumulative: np.ndarray, step: int) -> np.ndarray:
    """Group edges (0 and the last included) every ``step`` of ``cumulative`` entries."""
    cuts = np.searchsorted(cumulative, np.arange(step, cumulative[-1], step), side="right")
    return np.unique(np.concatenate([[0], cuts, [len(cumulative)]]))
