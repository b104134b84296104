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

from ..models.forest import TreeTable
from .lca import gauss_legendre
from .pairs import PairPlan, compile_pairs, passes

__all__ = ["InteractionPlan", "compile_interactions", "pattern_interactions"]


@dataclass(frozen=True)
class InteractionPlan:
    """Row-independent tables of the entries of one tree (leaves in depth-first order).

    ``pairs`` holds the routing fields, covers ``(L, K)`` and values of the leaves; entry ``e``
    pairs leaf ``a[e]`` with leaf ``b[e]`` (``L``: the phantom leaf of the linear part) and reads
    the tree-local players ``columns[e]`` (``K`` pads).
    """

    pairs: PairPlan
    a: np.ndarray  # (E,)
    b: np.ndarray  # (E,)
    coef: np.ndarray  # (E,) 2 v_a v_b, v_a^2 or v_a
    quad: np.ndarray  # (E,) True for entries of m^2 (weighted by w_quad), False for m (w_lin)
    columns: np.ndarray  # (E, W)

    @property
    def features(self) -> np.ndarray:
        """``(K,)`` the players of the tree: what its local columns stand for."""
        return self.pairs.features

    @property
    def n_q(self) -> int:
        return max(1, -(-(self.columns.shape[1] - 1) // 2))


def compile_interactions(tree: TreeTable) -> InteractionPlan:
    """The entries of a tree with at least one split."""
    internal = tree.left >= 0
    plan = compile_pairs(tree, internal)
    n_leaves, n_k = plan.cover.shape
    has = np.zeros((n_leaves + 1, n_k + 1), dtype=bool)  # row L: the phantom leaf reads nothing
    leaves = np.arange(n_leaves)
    for d in range(plan.path_kid.shape[1]):
        has[leaves, plan.path_kid[:, d]] = True
    has[:, n_k] = False
    cross_a, cross_b = [], []
    for a_leaves, b_leaves, _ in plan.nodes:
        a, b = np.meshgrid(np.arange(a_leaves.start, a_leaves.stop), np.arange(b_leaves.start, b_leaves.stop))
        cross_a.append(a.ravel())
        cross_b.append(b.ravel())
    cross_a, cross_b = np.concatenate(cross_a), np.concatenate(cross_b)
    a = np.concatenate([cross_a, leaves, leaves])
    b = np.concatenate([cross_b, leaves, np.full(n_leaves, n_leaves)])
    value = plan.value
    coef = np.concatenate([2.0 * value[cross_a] * value[cross_b], value * value, value])
    quad = np.concatenate([np.ones(len(cross_a) + n_leaves, dtype=bool), np.zeros(n_leaves, dtype=bool)])
    reads = has[a] | has[b]
    width = max(2, int(reads.sum(axis=1).max()))
    order = np.argsort(~reads, axis=1, kind="stable")[:, :width]  # the columns read, first
    columns = np.where(np.take_along_axis(reads, order, axis=1), order, n_k)
    return InteractionPlan(plan, a, b, coef, quad, columns)


def pattern_interactions(
    plan: InteractionPlan,
    X: np.ndarray,
    w_quad: np.ndarray | None,
    w_lin: np.ndarray | None,
    block: int,
    dtype=None,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Interaction indices of the tree's game on rows ``X`` (one per distinct row pattern).

    With row weights, ``(K + 1, K + 1)``: ``sum_i I_jk`` of the games
    ``w_quad[i] m_S^2 + w_lin[i] m_S`` at tree-local players ``j < k`` (the upper triangle; the
    last row and column pad).  Without (``None``), the indices of ``m_S^2`` and of ``m_S`` for
    each row, two ``(n, K + 1, K + 1)`` arrays.  Temporaries hold about ``block`` floats.
    """
    n = X.shape[0]
    n_k = plan.pairs.n_features
    size = (n_k + 1) ** 2
    local = w_quad is None
    out = (np.zeros((n, size)), np.zeros((n, size))) if local else np.zeros(size)
    n_e, width = plan.columns.shape
    step = max(1, block // (n_e * width * plan.n_q))
    for start in range(0, n, step):
        rows = slice(start, min(n, start + step))
        bits = _extended_bits(plan, X[rows], dtype)
        if local:
            for part, kind in zip(out, (True, False), strict=True):
                weight = np.where(plan.quad == kind, plan.coef, 0.0)
                part[rows] += _entry_slopes(plan, bits, weight[None, :], summed=False)
        else:
            weight = np.where(plan.quad[None, :], w_quad[rows, None], w_lin[rows, None]) * plan.coef
            out += _entry_slopes(plan, bits, weight, summed=True)
    if local:
        return tuple(part.reshape(n, n_k + 1, n_k + 1) for part in out)
    return out.reshape(n_k + 1, n_k + 1)


def _extended_bits(plan: InteractionPlan, X: np.ndarray, dtype) -> np.ndarray:
    """``(n, L + 1, K + 1)`` pass bits with the phantom leaf and the pad column (all passed)."""
    bits = passes(plan.pairs, X, dtype)
    n, n_leaves, n_k = bits.shape
    extended = np.ones((n, n_leaves + 1, n_k + 1), dtype=bool)
    extended[:, :n_leaves, :n_k] = bits
    return extended


def _entry_slopes(plan: InteractionPlan, bits: np.ndarray, weight: np.ndarray, summed: bool) -> np.ndarray:
    """Integrated mixed slopes of every entry, weighted by ``weight`` (``(n, E)`` or ``(1, E)``) and
    added up by column pair: ``((K + 1)^2,)`` summed over rows, or ``(n, (K + 1)^2)``."""
    n_k = plan.pairs.n_features
    cover = np.ones((bits.shape[1], n_k + 1))
    cover[: plan.pairs.cover.shape[0], :n_k] = plan.pairs.cover
    cols = plan.columns
    both = bits[:, plan.a[:, None], cols] & bits[:, plan.b[:, None], cols]  # (n, E, W)
    rest = cover[plan.a[:, None], cols] * cover[plan.b[:, None], cols]  # (E, W)
    q, gl = gauss_legendre(plan.n_q)
    # factor F = rest + slope q; features first so that each running product is one contiguous pass
    slope = np.moveaxis(both - rest, -1, 0)  # (W, n, E)
    factor = rest.T[:, None, :, None] + slope[..., None] * q  # (W, n, E, Q)
    width = factor.shape[0]
    after = np.empty_like(factor)  # after[k] = prod_{m > k} F_m
    after[-1] = 1.0
    for k in range(width - 2, -1, -1):
        np.multiply(after[k + 1], factor[k + 1], out=after[k])
    size = (n_k + 1) ** 2
    out = np.zeros(size) if summed else np.zeros((bits.shape[0], size))
    before = np.ones(factor.shape[1:])  # prod_{m < j} F_m
    for j in range(width - 1):
        run = before.copy()  # prod_{m < k, m != j} F_m
        for k in range(j + 1, width):
            value = (run * after[k]) @ gl  # (n, E)
            value *= slope[j] * slope[k]
            value *= weight
            key = cols[:, j] * (n_k + 1) + cols[:, k]
            if summed:
                out += np.bincount(key, weights=value.sum(axis=0), minlength=size)
            else:
                out += value @ _onehot(key, size)
            run *= factor[k]
        before *= factor[j]
    return out


def _onehot(key: np.ndarray, size: int) -> sp.csr_matrix:
    """``(E, size)`` sparse map of each entry to its column pair."""
    return sp.csr_matrix((np.ones(len(key)), (np.arange(len(key)), key)), shape=(len(key), size))
