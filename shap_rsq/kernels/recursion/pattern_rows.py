"""Per-pattern values of depth-4 heaps on the split patterns that occur: per-row shares.

Below the root, a node's ``A = E m`` and ``B = E m^2`` of the two-particle recursion
(:mod:`~shap_rsq.kernels.recursion.pattern_recursion`) depend only on the decisions inside its subtree: each
side of the root (a depth-3 heap) has ``2 x 8 x 8`` sub-patterns.  On every sub-pattern of each side
this module tabulates ``A``, ``B`` and their derivatives with respect to the ``q`` of each split of
the side, bottom-up in forward mode (per assignment of the conditioned players and quadrature
node).  The tables are row-independent: a unit computes them once.

A pattern that occurs is the root's decision and one sub-pattern of each side, and its gradients
are the chain rule through the root, read at its sub-patterns:

    dA / dq_n = P_a dA_side / dq_n,        dB / dq_n = P_b dB_side / dq_n + X dA_side / dq_n

with ``P_a = p [the pattern goes to the side] + (1 - p) r_side``, ``P_b`` the same with
``r_side^2``, and ``X = (1 - p) 2 r_L r_R A_other``; the root's own split has ``dA / dq = known -
mix`` when it is a coin.  Mixed over the assignments and integrated over ``q``, as in the recursion,
these are each pattern's Shapley values of ``m^2`` and ``m``: a few products per (pattern, split of
a side, assignment, node) instead of a reverse pass over every node per pattern.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..enumeration.split_patterns import HeapBatch
from ..quadrature import gauss_legendre
from .pattern_recursion import (
    _mixing_weights,
    _node_modes,
    _signed_weights,
    conditioned_players,
    known_probability,
    node_values,
)

__all__ = ["SideTables", "pattern_unit_gradients", "side_tables"]


@dataclass(frozen=True)
class SideTables:
    """The row-independent tables of a batch: each side of the root on every sub-pattern ``s``.

    ``a, b (T, 2 sides, s, S, Q)`` are the side's ``A``, ``B`` per assignment and quadrature node.
    ``lin, quad (T, 2, s, 2 decisions, J)`` are the root's ``dA / dq_n`` and the ``P_b`` part of its
    ``dB / dq_n``, mixed and integrated, for each decision of the root (0: right); ``cross (T, 2, s,
    J, S x Q)`` is ``dA_side / dq_n`` times ``(1 - p) 2 r_L r_R``, mixed and integrated: the ``X``
    part of ``dB / dq_n`` is its product with the other side's ``A``.  Column ``j`` is heap node
    ``columns[side, j]``.  The root's own factors: ``p (T, 1, S, Q)`` the probability its split is
    known and ``coin (T, 1, S, 1)`` whether it is a coin; ``weights (S, Q)`` mix and integrate,
    ``signed (R, S, Q)`` are their derivatives with respect to each conditioned player
    (``order (T, R)``), and ``players (T, N, K)`` maps heap nodes to players.
    """

    a: np.ndarray
    b: np.ndarray
    lin: np.ndarray
    quad: np.ndarray
    cross: np.ndarray
    columns: np.ndarray
    p: np.ndarray
    coin: np.ndarray
    weights: np.ndarray
    signed: np.ndarray
    order: np.ndarray
    players: np.ndarray

    @property
    def nbytes(self) -> int:
        return sum(table.nbytes for table in (self.a, self.b, self.lin, self.quad, self.cross))


def side_tables(batch: HeapBatch) -> SideTables:
    """The row-independent tables of a batch of heaps of one depth (at least 2)."""
    order, bit_of_player, assignments = conditioned_players(batch)
    q, gl = gauss_legendre(max(1, batch.depth))
    a, b, da, db, columns = _sides(batch, bit_of_player, assignments, q)
    n_trees, _, n_sub, n_columns, _ = da.shape
    mode = _node_modes(batch, bit_of_player, assignments, np.array([0]))  # (T, S, 1): the root's
    p = known_probability(mode, q)  # (T, S, Q)
    to_mix = 1.0 - p
    weights = (_mixing_weights(assignments, q) * gl).ravel()  # (S x Q): mixed and integrated
    decisions = np.array([0.0, 1.0])[:, None]  # decision 1 takes the left side
    lin, quad = [], []
    for side, takes in enumerate((decisions, 1.0 - decisions)):
        ratio = (batch.ratio_left if side == 0 else batch.ratio_right)[:, :1, None]  # (T, 1, 1)
        known, mixed = p.reshape(n_trees, 1, -1) * takes, to_mix.reshape(n_trees, 1, -1)
        p_a = (known + mixed * ratio) * weights  # (T, 2 decisions, S x Q)
        p_b = (known + mixed * ratio * ratio) * weights
        # (T, s x J, S x Q) @ (T, S x Q, 2) -> (T, s, 2 decisions, J)
        for table, derivative, coefficient in ((lin, da, p_a), (quad, db, p_b)):
            flat = derivative[:, side].reshape(n_trees, n_sub * n_columns, -1)
            table.append(np.matmul(flat, coefficient.swapaxes(1, 2)).reshape(n_trees, n_sub, n_columns, 2))
    cross = to_mix * 2.0 * batch.ratio_left[:, :1, None] * batch.ratio_right[:, :1, None]  # (T, S, Q)
    cross = da * (cross.reshape(n_trees, 1, 1, 1, -1) * weights)
    lin, quad = (np.stack(table, axis=1).swapaxes(3, 4).copy() for table in (lin, quad))
    signed = np.array([_signed_weights(assignments, r, q) * gl for r in range(assignments.shape[1])])
    players = (batch.local[:, :, None] == np.arange(batch.features.shape[1])).astype(float)  # (T, N, K)
    return SideTables(
        a,
        b,
        lin,
        quad,
        cross,
        columns,
        p[:, None],
        (mode == 0)[:, None],
        weights.reshape(p.shape[1:]),
        signed.reshape(-1, *p.shape[1:]),
        order,
        players,
    )


def _sides(batch: HeapBatch, bit_of_player, assignments, q):
    """Bottom-up to the root's two sides: ``A``, ``B`` ``(T, 2, s, S, Q)`` and their derivatives
    ``(T, 2, s, J, S x Q)`` on every sub-pattern, and the heap node of each column ``(2, J)``."""
    a = batch.leaf_value[:, None, None, :, None]  # (T, S, Q, nodes, sub-patterns): leaves have one
    b = a * a
    da = np.zeros((*a.shape, 0))
    db = np.zeros_like(da)
    columns = np.zeros((a.shape[3], 0), dtype=np.int64)
    for level in range(batch.depth - 1, 0, -1):
        nodes = np.arange((1 << level) - 1, (1 << (level + 1)) - 1)
        mode = _node_modes(batch, bit_of_player, assignments, nodes)[:, :, None, :]  # (T, S, 1, n)
        a, b, da, db = _level(batch, nodes, mode, q, a, b, da, db)
        # a node's columns: its own split, then its left side's, then its right side's
        columns = np.concatenate([nodes[:, None], columns[0::2], columns[1::2]], axis=1)
    n_trees, n_states, n_q, _, n_sub = a.shape
    full = (n_trees, n_states, n_q, 2, n_sub)
    a, b = (np.ascontiguousarray(np.broadcast_to(x, full).transpose(0, 3, 4, 1, 2)) for x in (a, b))
    shape = (n_trees, 2, n_sub, columns.shape[1], n_states * n_q)
    da, db = (np.ascontiguousarray(x.transpose(0, 3, 4, 5, 1, 2)).reshape(shape) for x in (da, db))
    return a, b, da, db, columns


def _level(batch, nodes, mode, q, a, b, da, db):
    """One level of the forward pass: ``A``, ``B`` of ``nodes`` on their sub-patterns ``(T, S, Q, n,
    2 s^2)`` (their decision, then each child's sub-pattern) and their derivatives ``(..., J)``
    with respect to the ``q`` of each split of their subtrees, from their children's."""
    p = known_probability(mode, q[None, None, :, None])[..., None, None, None]
    coin = (mode == 0)[..., None, None, None]  # (T, S, 1, n, 1, 1, 1)
    r_left = batch.ratio_left[:, nodes][:, None, None, :, None, None, None]
    r_right = batch.ratio_right[:, nodes][:, None, None, :, None, None, None]
    # (..., n, decision, left sub-pattern, right sub-pattern); decision 1 takes the left child
    a_l, a_r = a[:, :, :, 0::2, None, :, None], a[:, :, :, 1::2, None, None, :]
    b_l, b_r = b[:, :, :, 0::2, None, :, None], b[:, :, :, 1::2, None, None, :]
    da_l, da_r = da[:, :, :, 0::2, None, :, None], da[:, :, :, 1::2, None, None, :]
    db_l, db_r = db[:, :, :, 0::2, None, :, None], db[:, :, :, 1::2, None, None, :]
    goes_left = np.array([0.0, 1.0])[:, None, None]
    mix_a, mix_b, diff_a, diff_b = node_values(r_left, r_right, a_l, a_r, b_l, b_r, goes_left == 1.0)
    to_mix = 1.0 - p
    cross = to_mix * 2.0 * r_left * r_right
    shape = (*np.broadcast_shapes(diff_a.shape, p.shape), 1 + da_l.shape[-1] + da_r.shape[-1])
    new_da, new_db = np.empty(shape), np.empty(shape)
    width = da_l.shape[-1]
    new_da[..., 0] = coin * diff_a  # a coin split's value is mix + q (known - mix)
    new_db[..., 0] = coin * diff_b
    on_left, on_right = slice(1, 1 + width), slice(1 + width, None)
    takes_left, takes_right = p * goes_left, p * (1.0 - goes_left)
    new_da[..., on_left] = (takes_left + to_mix * r_left)[..., None] * da_l
    new_da[..., on_right] = (takes_right + to_mix * r_right)[..., None] * da_r
    # B also reads the other child's A through the 2 r_L r_R A_L A_R term
    new_db[..., on_left] = (takes_left + to_mix * r_left * r_left)[..., None] * db_l
    new_db[..., on_left] += (cross * a_r)[..., None] * da_l
    new_db[..., on_right] = (takes_right + to_mix * r_right * r_right)[..., None] * db_r
    new_db[..., on_right] += (cross * a_l)[..., None] * da_r
    a, b = mix_a + p * diff_a, mix_b + p * diff_b
    flat = (*a.shape[:4], -1)
    return a.reshape(flat), b.reshape(flat), new_da.reshape(*flat, shape[-1]), new_db.reshape(*flat, shape[-1])


def pattern_unit_gradients(batch: HeapBatch, tables: SideTables, patterns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(T, C, K)`` Shapley values of ``m_S^2`` and of ``m_S`` on patterns ``(T, C)`` (cube
    indices, :func:`~shap_rsq.kernels.enumeration.split_patterns.pattern_bits`) of each tree."""
    n_sub = tables.a.shape[2]
    decision = patterns // (n_sub * n_sub)
    sides = ((patterns // n_sub) % n_sub, patterns % n_sub)
    trees = np.arange(batch.n_trees)[:, None]
    a_l, a_r = tables.a[trees, 0, sides[0]], tables.a[trees, 1, sides[1]]  # (T, C, S, Q)
    b_l, b_r = tables.b[trees, 0, sides[0]], tables.b[trees, 1, sides[1]]
    p, weights = tables.p, tables.weights
    r_left = batch.ratio_left[:, :1, None, None]  # (T, 1, 1, 1)
    r_right = batch.ratio_right[:, :1, None, None]
    goes_left = (decision == 1)[:, :, None, None]
    mix_a, mix_b, diff_a, diff_b = node_values(r_left, r_right, a_l, a_r, b_l, b_r, goes_left)  # (T, C, S, Q)
    node_quad = np.zeros((*patterns.shape, batch.local.shape[1]))  # (T, C, N)
    node_lin = np.zeros_like(node_quad)
    # the root's own split, when it is a coin: dA / dq = known - mix
    node_lin[:, :, 0] = np.einsum("tcsq,sq->tc", tables.coin * diff_a, weights)
    node_quad[:, :, 0] = np.einsum("tcsq,sq->tc", tables.coin * diff_b, weights)
    for side, other in ((0, a_r), (1, a_l)):
        at = (trees, side, sides[side])
        columns = tables.columns[side]
        node_lin[:, :, columns] += tables.lin[(*at, decision)]
        node_quad[:, :, columns] += tables.quad[(*at, decision)]
        other = other.reshape(*patterns.shape, -1, 1)  # (T, C, S x Q, 1)
        node_quad[:, :, columns] += np.matmul(tables.cross[at], other)[..., 0]
    grad_quad, grad_lin = np.matmul(node_quad, tables.players), np.matmul(node_lin, tables.players)
    root_a, root_b = mix_a + p * diff_a, mix_b + p * diff_b
    # repeated players: the mixing weights are their only dependence on q
    for signed, player in zip(tables.signed, tables.order.T, strict=True):
        grad_quad[trees[:, 0], :, player] += np.einsum("tcsq,sq->tc", root_b, signed)
        grad_lin[trees[:, 0], :, player] += np.einsum("tcsq,sq->tc", root_a, signed)
    return grad_quad, grad_lin
