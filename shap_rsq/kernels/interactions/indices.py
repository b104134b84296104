"""Shapley interaction indices of one tree's game: mixed second slopes of leaf-pair products.

The Shapley interaction index of players ``j != k`` in a game ``v`` is the integral along the
diagonal of the mixed second derivative of its multilinear extension ``g``
(Grabisch & Roubens 1999; Owen 1972):

    I_jk = int_0^1 d^2 g / dq_j dq_k (q, ..., q) dq.

A tree's game ``w_quad m_S^2 + w_lin m_S`` has the multilinear extension
``w_quad sum_{a, b} v_a v_b prod_k F^ab_k + w_lin sum_a v_a prod_k h^a_k`` over ordered leaf pairs,
with ``F^ab_k = q p_ak p_bk + (1 - q) r_ak r_bk`` and ``h^a_k = q p_ak + (1 - q) r_ak``
(``p``: the row passes every split on ``k`` of the leaf's path; ``r``: the product of their cover
fractions; both 1 off the path).  Every factor is linear in its own coin, so the mixed slope of a
product is ``s_j s_k prod_{m != j, k} F_m`` with ``s = dF/dq``, and it is a polynomial of degree
below the number of factors minus one: ``ceil((W - 1) / 2)`` Gauss-Legendre nodes integrate a
product of ``W`` factors exactly.

Every term is an *entry* here: a cross pair ``(a, b)`` of leaves meeting at a split (both orders:
coefficient ``2 v_a v_b``), a leaf with itself (``v_a^2``, factors ``q p + (1 - q) r^2``) and a
leaf alone for the linear part (``v_a``, paired with a phantom leaf whose bits and covers are 1).
An entry reads only the players on the union of its two paths (at most ``W``, padded with a
column whose factor is 1), so its work is ``W (W - 1) / 2`` products per row and node; all the
entries of a tree are evaluated together.  Grouped features work unchanged: the columns are the
tree's players (``TreeTable.player``), and a group's splits multiply into one factor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...models.forest import TreeTable
from ...tuning import DEFAULT_TUNING, Tuning
from ..lca.pairs import PairPlan, compile_pairs, passes
from ..quadrature import exact_nodes, gauss_legendre

__all__ = ["Entries", "InteractionPlan", "compile_interactions", "pattern_interactions"]


@dataclass(frozen=True)
class Entries:
    """The entries of one width: ``slice`` of the plan's entries that read exactly ``width`` columns."""

    rows: slice
    width: int


@dataclass(frozen=True)
class InteractionPlan:
    """Row-independent tables of the entries of one tree (leaves in depth-first order).

    ``pairs`` holds the routing fields, covers ``(L, K)`` and values of the leaves; entry ``e``
    pairs leaf ``a[e]`` with leaf ``b[e]`` (``L``: the phantom leaf of the linear part) and reads
    the tree-local players ``columns[e]`` (``K`` pads).  Entries are sorted by how many columns
    they read (``widths``), so that no entry pays for another's width.
    """

    pairs: PairPlan
    a: np.ndarray  # (E,)
    b: np.ndarray  # (E,)
    coef: np.ndarray  # (E,) 2 v_a v_b, v_a^2 or v_a
    quad: np.ndarray  # (E,) True for entries of m^2 (weighted by w_quad), False for m (w_lin)
    columns: np.ndarray  # (E, W)
    widths: tuple[Entries, ...]
    cover: np.ndarray  # (L + 1, K + 1) the leaves' covers with the phantom leaf and the pad column (1)

    @property
    def features(self) -> np.ndarray:
        """``(K,)`` the players of the tree: what its local columns stand for."""
        return self.pairs.features


def compile_interactions(tree: TreeTable) -> InteractionPlan:
    """The entries of a tree with at least one split."""
    plan = compile_pairs(tree, tree.left >= 0)
    n_leaves, n_k = plan.cover.shape
    has = np.zeros((n_leaves + 1, n_k + 1), dtype=bool)  # row L: the phantom leaf reads nothing
    leaves = np.arange(n_leaves)
    for d in range(plan.path_kid.shape[1]):
        has[leaves, plan.path_kid[:, d]] = True
    has[:, n_k] = False
    cross = [np.meshgrid(np.arange(a.start, a.stop), np.arange(b.start, b.stop)) for a, b, _, _ in plan.nodes]
    cross_a = np.concatenate([a.ravel() for a, _ in cross])
    cross_b = np.concatenate([b.ravel() for _, b in cross])
    a = np.concatenate([cross_a, leaves, leaves])
    b = np.concatenate([cross_b, leaves, np.full(n_leaves, n_leaves)])
    value = plan.value
    coef = np.concatenate([2.0 * value[cross_a] * value[cross_b], value * value, value])
    quad = np.concatenate([np.ones(len(cross_a) + n_leaves, dtype=bool), np.zeros(n_leaves, dtype=bool)])
    reads = has[a] | has[b]
    count = reads.sum(axis=1)
    by_width = np.argsort(count, kind="stable")
    a, b, coef, quad, reads, count = (x[by_width] for x in (a, b, coef, quad, reads, count))
    order = np.argsort(~reads, axis=1, kind="stable")[:, : max(1, int(count.max()))]  # columns read, first
    columns = np.where(np.take_along_axis(reads, order, axis=1), order, n_k)
    edges = np.flatnonzero(np.diff(count)) + 1
    starts, stops = np.concatenate([[0], edges]), np.concatenate([edges, [len(count)]])
    widths = tuple(
        Entries(slice(lo, hi), int(count[lo])) for lo, hi in zip(starts, stops, strict=True) if count[lo] >= 2
    )
    cover = np.ones((n_leaves + 1, n_k + 1))
    cover[:n_leaves, :n_k] = plan.cover
    return InteractionPlan(plan, a, b, coef, quad, columns, widths, cover)


def pattern_interactions(
    plan: InteractionPlan,
    X: np.ndarray,
    w_quad: np.ndarray | None,
    w_lin: np.ndarray | None,
    tuning: Tuning = DEFAULT_TUNING,
    dtype=None,
    rows: np.ndarray | None = None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Interaction indices of the tree's game on rows ``X`` (one per distinct row pattern), or on
    its rows ``rows``: only their split columns are read, never a full-width copy of them.

    With row weights, ``(K + 1, K + 1)``: ``sum_i I_jk`` of the games
    ``w_quad[i] m_S^2 + w_lin[i] m_S`` at tree-local players ``j < k`` (the upper triangle; the
    last row and column pad).  Without (``None``), the indices of ``m_S^2`` and of ``m_S`` for
    each row, two ``(n, K + 1, K + 1)`` arrays.  Pass bits are read in chunks of
    ``tuning.interaction_bits_within`` and temporaries hold about ``tuning.interaction_block_within``
    floats.
    """
    index = np.arange(X.shape[0]) if rows is None else rows
    n = len(index)
    n_k = plan.pairs.n_features
    size = (n_k + 1) ** 2
    local = w_quad is None
    out = np.zeros((n, 2 * size)) if local else np.zeros(size)
    step = max(1, tuning.interaction_bits_within // ((plan.pairs.cover.shape[0] + 1) * (n_k + 1)))
    for start in range(0, n, step):
        chunk = slice(start, min(n, start + step))
        bits = passes(plan.pairs, X, dtype, index[chunk], extended=True)  # with the phantom leaf, all passed
        for entries in plan.widths:
            if local:
                _add_local(plan, entries, bits, out[chunk], tuning)
            else:
                _add_summed(plan, entries, bits, w_quad[chunk], w_lin[chunk], out, tuning)
    if local:
        return out[:, :size].reshape(n, n_k + 1, n_k + 1), out[:, size:].reshape(n, n_k + 1, n_k + 1)
    return out.reshape(n_k + 1, n_k + 1)


def _entry_blocks(plan: InteractionPlan, entries: Entries, bits: np.ndarray, tuning: Tuning, local: bool):
    """Blocks of the entries of one width: ``(keys, entry, both, inverse, e)``.

    ``keys`` ``(E, P)`` are the flat ``(K + 1)^2`` positions of each entry's column pairs
    ``j < k`` (``np.triu_indices(W, 1)`` order, that of :func:`_mixed_slopes`).

    An entry reads a row only through its ``W`` pass bits (its code), so each distinct
    (entry, code) is evaluated once: ``both`` ``(M, W)`` are the bits of the ``M`` distinct ones,
    ``entry`` ``(M,)`` their entries within the block ``e``, and ``inverse`` ``(n, E)`` says which
    one each row has.  A tree's rows take few of the ``2^W`` codes (about 100 of 512 on depth-6
    XGBoost trees), so only those present are evaluated; they are found in a table of all codes
    while it has at most ``tuning.interaction_table_codes`` slots per row, otherwise by sorting.
    Codes wider than ``tuning.interaction_code_bits`` keep one per row.  A block of entries holds about
    ``tuning.interaction_block_within`` pass bits (and, with ``local``, values per row and column pair:
    the rows' values are gathered before they are summed).
    """
    n, width = bits.shape[0], entries.width
    n_k = plan.pairs.n_features
    j, k = np.triu_indices(width, 1)
    by_code = width <= tuning.interaction_code_bits
    per_entry = width * n * (_nodes(width) if local else 1)
    e_step = max(1, tuning.interaction_block_within // per_entry)
    for lo in range(entries.rows.start, entries.rows.stop, e_step):
        e = slice(lo, min(entries.rows.stop, lo + e_step))
        cols = plan.columns[e, :width]
        n_e = len(cols)
        keys = cols[:, j] * (n_k + 1) + cols[:, k]  # (E, P)
        if not by_code:
            both = bits[:, plan.a[e, None], cols] & bits[:, plan.b[e, None], cols]  # (n, E, W)
            inverse = np.arange(n * n_e).reshape(n, n_e)
            yield keys, np.tile(np.arange(n_e), n), both.reshape(n * n_e, width), inverse, e
            continue
        code_keys = _entry_codes(bits, plan.a[e], plan.b[e], cols) * n_e + np.arange(n_e)  # (n, E)
        by_table = (1 << width) <= tuning.interaction_table_codes * n
        distinct, inverse = _distinct(code_keys, n_e << width if by_table else None)
        codes = distinct // n_e
        yield keys, distinct % n_e, (codes[:, None] >> np.arange(width)) & 1 == 1, inverse, e


def _entry_codes(bits: np.ndarray, a: np.ndarray, b: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``(n, E)``: the integer whose bit ``w`` says that the row passes both leaves' splits on the
    entry's column ``w``, one column at a time (packing the bits of an ``(n, E, W)`` array along its
    short last axis took twice the time of gathering them)."""
    code = np.zeros((bits.shape[0], len(a)), dtype=np.int64)
    for w in range(cols.shape[1]):
        passed = bits[:, a, cols[:, w]] & bits[:, b, cols[:, w]]
        code |= passed.astype(np.int64) << w
    return code


def _distinct(keys: np.ndarray, table: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct ``keys`` and where each key is among them (``np.unique``'s
    ``return_inverse``), through a presence table of length ``table`` (no sort) when given."""
    if table is None:
        distinct, inverse = np.unique(keys, return_inverse=True)
        return distinct, inverse.reshape(keys.shape)
    seen = np.zeros(table, dtype=bool)
    seen[keys] = True
    rank = np.cumsum(seen, dtype=np.int32 if table < 2**31 else np.int64)
    rank -= 1
    return np.flatnonzero(seen), rank[keys]


def _add_summed(plan, entries, bits, w_quad, w_lin, out, tuning) -> None:
    """Add the rows' weighted indices of the entries of one width to ``out`` ``((K + 1)^2,)``."""
    for keys, entry, both, inverse, e in _entry_blocks(plan, entries, bits, tuning, local=False):
        weight = np.where(plan.quad[e][None, :], w_quad[:, None], w_lin[:, None]) * plan.coef[e]
        weight = np.bincount(inverse.ravel(), weights=weight.ravel(), minlength=len(entry))
        by_entry = sp.csr_matrix((weight, (np.arange(len(entry)), entry)), shape=(len(entry), keys.shape[0]))
        per_entry = np.zeros(keys.T.shape)  # (P, E)
        step = max(1, tuning.interaction_block_within // (entries.width * _nodes(entries.width)))
        for lo in range(0, len(entry), step):
            codes = slice(lo, lo + step)
            values = _mixed_slopes(plan, e, entry[codes], both[codes])  # (P, M)
            per_entry += (by_entry[codes].T @ values.T).T
        out += np.bincount(keys.T.ravel(), weights=per_entry.ravel(), minlength=len(out))


def _add_local(plan, entries, bits, out, tuning) -> None:
    """Add each row's indices of ``m^2`` and of ``m`` (unweighted) to ``out`` ``(n, 2 (K + 1)^2)``.

    A row's value of entry ``e`` at pair ``p`` is ``values[p, inverse[i, e]]``: the rows gather
    their ``(E, P)`` values, and one sparse map sends each (entry, pair) to its column pair, in the
    first half for entries of ``m^2`` and the second for those of ``m``.
    """
    size = out.shape[1] // 2
    for keys, entry, both, inverse, e in _entry_blocks(plan, entries, bits, tuning, local=True):
        values = _mixed_slopes(plan, e, entry, both)  # (P, M)
        target = keys + np.where(plan.quad[e], 0, size)[:, None]  # (E, P)
        columns, slot = np.unique(target, return_inverse=True)
        weight = np.repeat(plan.coef[e], keys.shape[1])
        onehot = sp.csr_matrix((weight, (np.arange(weight.size), slot.ravel())), shape=(weight.size, len(columns)))
        gathered = values.T[inverse].reshape(inverse.shape[0], -1)  # (n, E P)
        out[:, columns] += (onehot.T @ gathered.T).T


def _mixed_slopes(plan: InteractionPlan, e: slice, entry: np.ndarray, both: np.ndarray) -> np.ndarray:
    """``(P, M)``: for each column pair ``j < k`` of the entries ``e`` (``np.triu_indices`` order),
    the integral over ``q`` of ``s_j s_k prod_{m != j, k} F_m`` on each of ``M`` bit patterns
    ``both`` ``(M, W)`` of the entries ``entry`` ``(M,)``.

    The integrand has ``W - 2`` linear factors, so ``ceil((W - 1) / 2)`` Gauss-Legendre nodes are
    exact.  It is the whole product times the ratios ``rho = s / F`` of its two columns:
    ``F = (1 - q) r + q`` with ``rho = (1 - r) / F`` where the pattern's bit is 1, and
    ``F = (1 - q) r`` with ``rho = -1 / (1 - q)`` where it is 0, both within ``[-1 / (1 - q), 1 / q]``,
    so no digits are lost by dividing.  A factor that is 0 for every ``q`` (bit 0 and a zero cover
    fraction ``r``) has no ratio; its pattern's product, and every mixed slope of it (``s = 0``
    there), is 0.  Arrays are ``(W, Q, M)``, so that every pass runs along the patterns: one
    contraction over ``q`` per column ``j``, at about half the time of ``W^2 / 2`` running products
    "all factors but two" (``python benchmarks/interactions.py --only sweep --depths 8 --features 20 100``).
    """
    width = both.shape[1]
    cols = plan.columns[e, :width]
    rest = np.ascontiguousarray((plan.cover[plan.a[e, None], cols] * plan.cover[plan.b[e, None], cols])[entry].T)
    bit = np.ascontiguousarray(both.T)  # (W, M)
    dead = ~bit & (rest == 0.0)  # F = 0 for every q
    rest[dead] = 1.0  # any positive F: the pattern's product is set to 0 below
    q, gl = gauss_legendre(_nodes(width))
    factor = np.multiply(rest[:, None, :], (1.0 - q)[None, :, None])  # (W, Q, M)
    np.add(factor, q[None, :, None], out=factor, where=bit[:, None, :])
    ratio = np.subtract(bit, rest)[:, None, :] / factor  # -1 / (1 - q) where the bit is 0, up to rounding
    weighted = np.prod(factor, axis=0)  # (Q, M)
    weighted *= gl[:, None]
    weighted[:, dead.any(axis=0)] = 0.0
    values = np.empty((width * (width - 1) // 2, both.shape[0]))
    p = 0
    for j in range(width - 1):
        n_pairs = width - 1 - j
        np.einsum("qm,kqm->km", weighted * ratio[j], ratio[j + 1 :], out=values[p : p + n_pairs])
        p += n_pairs
    return values


def _nodes(width: int) -> int:
    """Gauss-Legendre nodes that integrate a product of ``width - 2`` linear factors exactly."""
    return exact_nodes(width - 1)
