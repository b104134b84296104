"""Two-particle recursion for small trees whose features rarely repeat.

With every feature known independently with probability ``q``, a split on a
feature that occurs once in the tree has a coin independent of everything
below it, and its two subtrees use disjoint coins.  Then, bottom-up,

    A(u) = E m(u)   = q A(c_x) + (1-q) (rL A(L) + rR A(R))
    B(u) = E m(u)^2 = q B(c_x) + (1-q) (rL^2 B(L) + rR^2 B(R) + 2 rL rR A(L) A(R))

where ``c_x`` is the child the row takes.  Features that occur more than once
are conditioned on: for each known/unknown assignment ``s`` of them the
recursion runs with those splits deterministic, and the results are mixed
with weights ``prod_k (s_k ? q : 1 - q)``.  Gradients with respect to each
feature's ``q`` come from one reverse pass; Shapley values are their integral
over ``q``, exact with ``depth``-point Gauss-Legendre quadrature.

:func:`recursion_gradients` runs on given split patterns (per-pattern values);
:func:`summed_recursion_gradients` on pattern weights summed over rows, where each
node works on the decisions of its own subtree only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..batching.sparse import ranges
from ..enumeration.split_patterns import HeapBatch
from ..quadrature import gauss_legendre

__all__ = [
    "conditioned_players",
    "known_probability",
    "node_values",
    "recursion_gradients",
    "repeated_players",
    "summed_recursion_gradients",
]


def repeated_players(batch: HeapBatch) -> np.ndarray:
    """``(T, K)`` whether each player splits more than one node of its tree."""
    counts = np.zeros(batch.features.shape, dtype=np.int64)
    t, h = np.nonzero(batch.local >= 0)
    np.add.at(counts, (t, batch.local[t, h]), 1)
    return counts > 1


def conditioned_players(batch: HeapBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the recursion conditions on: ``order (T, R)`` the repeated player each conditioned bit
    stands for, ``bit_of_player (T, K)`` the bit of each player (``-1`` for a coin), and the
    ``2^R`` known/unknown ``assignments (S, R)`` of the bits.  ``R`` is the most repeated players
    of a tree of the batch: a tree with fewer conditions on other players (or unused player
    slots) too, which is as exact, and costs the same as the batch's widest tree."""
    repeated = repeated_players(batch)
    n_repeated = int(repeated.sum(axis=1).max())
    order = np.argsort(~repeated, axis=1, kind="stable")[:, :n_repeated]
    bit_of_player = np.full(batch.features.shape, -1, dtype=np.int64)
    for r in range(n_repeated):
        bit_of_player[np.arange(batch.n_trees), order[:, r]] = r
    assignments = (np.arange(1 << n_repeated)[:, None] >> np.arange(n_repeated)) & 1 == 1
    return order, bit_of_player, assignments


def recursion_gradients(batch: HeapBatch, left: np.ndarray, seed_quad: np.ndarray, seed_lin: np.ndarray):
    """Shapley values of ``seed_quad * m_S^2 + seed_lin * m_S`` per tree and pattern: ``(T, U, K)``.

    ``left (T, U, N)`` are the split decisions of ``U`` patterns per tree and
    ``seed_quad, seed_lin (T, U)`` their weights; all trees of the batch must have
    the same number ``R`` of repeated players (``R`` small: the work grows as ``2^R``).
    """
    order, bit_of_player, assignments = conditioned_players(batch)
    n_repeated = assignments.shape[1]
    q, gl = gauss_legendre(max(1, batch.depth))
    n_trees, n_patterns = left.shape[:2]

    forward = _forward(batch, left, bit_of_player, assignments, q)
    grad = np.zeros((n_trees, n_patterns, batch.features.shape[1]))  # integrated over q
    weights = _mixing_weights(assignments, q)  # (S, Q)
    _backward(batch, forward, weights, gl, seed_quad, seed_lin, grad)
    _conditioned_gradients(forward, assignments, q, gl, order, seed_quad, seed_lin, grad, n_repeated)
    return grad


def _node_modes(batch: HeapBatch, bit_of_player, assignments, nodes):
    """Per node and assignment: 0 = coin with probability q, 1 = known, 2 = unknown.

    Padding splits are unknown (their children are equal copies)."""
    player = batch.local[:, nodes]  # (T, n)
    bit = np.where(player >= 0, np.take_along_axis(bit_of_player, np.maximum(player, 0), axis=1), -1)
    if assignments.shape[1] == 0:
        known = np.zeros((1, *bit.shape), dtype=bool)
    else:
        known = assignments[:, np.maximum(bit, 0)]  # (S, T, n)
    mode = np.where(bit >= 0, np.where(known, 1, 2), 0)
    mode = np.where(player < 0, 2, mode)
    return np.moveaxis(mode, 0, 1)  # (T, S, n)


def known_probability(mode: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The probability that a split of mode ``mode`` (:func:`_node_modes`) is known: ``q`` for a
    coin, 1 or 0 for a conditioned player known or unknown (``q`` shaped to broadcast)."""
    return np.where(mode == 0, q, (mode == 1).astype(float))


def node_values(r_left, r_right, a_l, a_r, b_l, b_r, goes_left):
    """A split's ``A = E m`` and ``B = E m^2`` from its children's: ``(mix_a, mix_b, diff_a,
    diff_b)``, the split mixed (unknown: cover-weighted) and the child ``goes_left`` picks minus
    the mix, so that the split's values are ``mix + p diff`` with ``p`` the probability it is
    known.  ``B`` mixes with ``2 r_L r_R A_L A_R``: the two particles may part at the split."""
    mix_a = r_left * a_l + r_right * a_r
    mix_b = r_left * r_left * b_l + r_right * r_right * b_r + 2.0 * r_left * r_right * a_l * a_r
    return mix_a, mix_b, np.where(goes_left, a_l, a_r) - mix_a, np.where(goes_left, b_l, b_r) - mix_b


def _forward(batch, left, bit_of_player, assignments, q):
    """Bottom-up ``A`` and ``B``, each ``(T, S, Q, nodes, U)`` (broadcastable), keeping what the
    reverse pass needs at every level."""
    orders = _level_orders(batch.depth)
    values = batch.leaf_value[:, orders[-1] - ((1 << batch.depth) - 1)][:, None, None, :, None]
    a, b = values, values * values  # leaves depend on nothing else
    qq = q[None, None, :, None, None]
    levels = []
    for level in range(batch.depth - 1, -1, -1):
        nodes = orders[level]
        half = len(nodes)
        mode = _node_modes(batch, bit_of_player, assignments, nodes)[:, :, None, :, None]  # (T, S, 1, n, 1)
        go_left = np.moveaxis(left[:, :, nodes], 1, 2)[:, None, None]  # (T, 1, 1, n, U)
        r_left = batch.ratio_left[:, nodes][:, None, None, :, None]
        r_right = batch.ratio_right[:, nodes][:, None, None, :, None]
        ratios = (r_left, r_right, r_left * r_left, r_right * r_right, 2.0 * r_left * r_right)
        a_l, a_r, b_l, b_r = a[:, :, :, :half], a[:, :, :, half:], b[:, :, :, :half], b[:, :, :, half:]
        known_a = np.where(go_left, a_l, a_r)
        known_b = np.where(go_left, b_l, b_r)
        mix_a = ratios[0] * a_l + ratios[1] * a_r
        mix_b = ratios[2] * b_l + ratios[3] * b_r + ratios[4] * (a_l * a_r)
        p_known = known_probability(mode, qq)  # (T, S, Q, n, 1)
        levels.append((nodes, a_l, a_r, known_a, known_b, mix_a, mix_b, p_known, go_left, ratios, mode == 0))
        a = mix_a + p_known * (known_a - mix_a)
        b = mix_b + p_known * (known_b - mix_b)
    return levels, a[:, :, :, 0], b[:, :, :, 0]  # root A, B: (T, S, Q, U)


def _mixing_weights(assignments: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``prod_k (s_k ? q : 1 - q)`` for each assignment and quadrature node: ``(S, Q)``."""
    known = assignments.sum(axis=1)[:, None]
    return q[None, :] ** known * (1.0 - q[None, :]) ** (assignments.shape[1] - known)


def _signed_weights(assignments: np.ndarray, r: int, q: np.ndarray) -> np.ndarray:
    """``d/dq_r`` of the mixing weights: ``+-`` the weights of the other repeated features ``(S, Q)``."""
    sign = np.where(assignments[:, r], 1.0, -1.0)[:, None]
    return sign * _mixing_weights(np.delete(assignments, r, axis=1), q)


def _backward(batch, forward, weights, gl, seed_quad, seed_lin, grad):
    """Reverse pass: add the q-integral of d objective / d q_k of every coin-flip split into ``grad (T, U, K)``."""
    levels, _, _ = forward
    mix = weights[None, :, :, None]  # (1, S, Q, 1)
    adj_a = (mix * seed_lin[:, None, None, :])[:, :, :, None, :]  # (T, S, Q, 1, U)
    adj_b = (mix * seed_quad[:, None, None, :])[:, :, :, None, :]
    node_grad = np.zeros((batch.n_trees, batch.local.shape[1], grad.shape[1]))  # (T, N, U) integrated over q
    for nodes, a_l, a_r, known_a, known_b, mix_a, mix_b, p_known, go_left, ratios, coin in reversed(levels):
        # a coin split's value is mix + q (known - mix): its q-derivative is known - mix
        dq = np.where(coin, adj_a * (known_a - mix_a) + adj_b * (known_b - mix_b), 0.0).sum(axis=1)
        node_grad[:, nodes] = np.einsum("tqnu,q->tnu", dq, gl)
        to_mix = 1.0 - p_known
        goes_right = ~go_left
        cross_b = adj_b * to_mix * ratios[4]
        ga_l = adj_a * (p_known * go_left + to_mix * ratios[0]) + cross_b * a_r
        ga_r = adj_a * (p_known * goes_right + to_mix * ratios[1]) + cross_b * a_l
        gb_l = adj_b * (p_known * go_left + to_mix * ratios[2])
        gb_r = adj_b * (p_known * goes_right + to_mix * ratios[3])
        adj_a = _children(ga_l, ga_r)
        adj_b = _children(gb_l, gb_r)
    # each split belongs to one player
    onehot = (batch.local[:, :, None] == np.arange(grad.shape[2])).astype(float)  # (T, N, K)
    grad += np.matmul(np.swapaxes(node_grad, 1, 2), onehot)


def _children(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Adjoints of the next level, in its order: all left children, then all right children."""
    left, right = np.broadcast_arrays(left, right)
    return np.concatenate([left, right], axis=3)


@lru_cache(maxsize=16)
def _level_orders(depth: int) -> tuple[np.ndarray, ...]:
    """Heap indices of each level ordered so that the children of a level's ``i``-th node are the
    next level's ``i``-th and ``(i + width)``-th nodes: sibling subtrees become contiguous halves."""
    orders = [np.array([0])]
    for _ in range(depth):
        parent = orders[-1]
        orders.append(np.concatenate([2 * parent + 1, 2 * parent + 2]))
    return tuple(orders)


def _conditioned_gradients(forward, assignments, q, gl, order, seed_quad, seed_lin, grad, n_repeated) -> None:
    """d objective / d q_k for repeated players: the mixing weights are their only dependence on q_k."""
    _, root_a, root_b = forward  # (T, S, Q, U)
    objective = seed_quad[:, None, None, :] * root_b + seed_lin[:, None, None, :] * root_a
    n_trees = objective.shape[0]
    for r in range(n_repeated):
        d = np.einsum("sq,tsqu,q->tu", _signed_weights(assignments, r, q), objective, gl)
        grad[np.arange(n_trees), :, order[:, r]] += d


def summed_recursion_gradients(
    batch: HeapBatch, cube_quad: np.ndarray, cube_lin: np.ndarray, root_elements: int, observed: bool
) -> np.ndarray:
    """Shapley values of ``sum_u (w_quad_u m_S(u)^2 + w_lin_u m_S(u))`` per tree: ``(T, K)``,
    from the pattern weights ``(T, 2^N)`` (see :func:`_summed_gradients`).  With ``observed`` the
    root works on the patterns that occur, a few trees at a time when they are many (at most
    ``root_elements`` per root array)."""
    if not observed:
        return _summed_gradients(batch, cube_quad, cube_lin, observed)
    states = 1 << int(repeated_players(batch).sum(axis=1).max())
    patterns = int((((cube_quad != 0) | (cube_lin != 0)).sum(axis=1)).max(initial=1))
    step = max(1, root_elements // (states * max(1, batch.depth) * patterns))
    if step >= batch.n_trees:
        return _summed_gradients(batch, cube_quad, cube_lin, observed)
    parts = []
    for start in range(0, batch.n_trees, step):
        trees = np.arange(start, min(batch.n_trees, start + step))
        part = batch.select(trees, batch.n_players)
        parts.append(_summed_gradients(part, cube_quad[trees], cube_lin[trees], observed))
    return np.concatenate(parts)


def _summed_gradients(batch: HeapBatch, quad: np.ndarray, lin: np.ndarray, observed: bool) -> np.ndarray:
    """Shapley values of ``sum_u (w_quad_u m_S(u)^2 + w_lin_u m_S(u))`` per tree: ``(T, K)``.

    ``quad, lin (T, 2^N)`` weigh every split pattern ``u``, indexed as by
    :func:`~shap_rsq.kernels.enumeration.split_patterns.pattern_bits` (unseen patterns weigh 0).  The
    values of a node depend only on the decisions inside its subtree, so the
    forward pass runs on each node's own sub-patterns, and the reverse pass sums
    each child's adjoint over the decisions outside the child before descending:
    the work is ``2^N`` per tree at the root and much less below it, however many
    patterns occur, instead of ``nodes x patterns``.  With ``observed`` (depth-4 heaps, whose
    cube has 2^15 patterns) the root works on the patterns that occur instead.
    """
    n_trees = batch.n_trees
    order, bit_of_player, assignments = conditioned_players(batch)
    n_repeated = assignments.shape[1]
    q, gl = gauss_legendre(max(1, batch.depth))

    levels, top_a, top_b = _forward_on_subpatterns(batch, bit_of_player, assignments, q, top=int(observed))
    weights = _mixing_weights(assignments, q)  # (S, Q)
    node_grad = np.zeros(batch.local.shape)
    if observed:
        patterns, used = _observed_patterns(quad, lin)
        quad = np.where(used, np.take_along_axis(quad, patterns, axis=1), 0.0)
        lin = np.where(used, np.take_along_axis(lin, patterns, axis=1), 0.0)
        root = _root_on_patterns(
            batch, _node_modes(batch, bit_of_player, assignments, np.array([0])), q, top_a, top_b, patterns
        )
        root_a, root_b = root.a, root.b
        adj_a, adj_b = root.backward(weights, gl, quad, lin, node_grad)
    else:
        root_a, root_b = top_a[:, :, :, 0], top_b[:, :, :, 0]
        mix = weights[None, :, :, None, None]  # (1, S, Q, 1, 1)
        adj_a, adj_b = mix * lin[:, None, None, None, :], mix * quad[:, None, None, None, :]
    _backward_on_subpatterns(batch, levels, gl, adj_a, adj_b, node_grad)
    onehot = (batch.local[:, :, None] == np.arange(batch.features.shape[1])).astype(float)  # (T, N, K)
    grad = np.einsum("tn,tnk->tk", node_grad, onehot)
    objective = np.einsum("tu,tsqu->tsq", quad, root_b) + np.einsum("tu,tsqu->tsq", lin, root_a)
    for r in range(n_repeated):
        grad[np.arange(n_trees), order[:, r]] += np.einsum(
            "sq,tsq,q->t", _signed_weights(assignments, r, q), objective, gl
        )
    return grad


def _observed_patterns(quad: np.ndarray, lin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(T, C)`` the patterns of each tree with a weight, and whether each column is one (the
    rest pad the trees that have fewer)."""
    t, u = np.nonzero((quad != 0) | (lin != 0))
    count = np.bincount(t, minlength=quad.shape[0])
    patterns = np.zeros((quad.shape[0], max(1, int(count.max(initial=0)))), dtype=np.int64)
    patterns[t, ranges(0, count)] = u
    return patterns, np.arange(patterns.shape[1])[None, :] < count[:, None]


@dataclass
class _Root:
    """The root's forward values on the patterns that occur, kept for its reverse pass."""

    a: np.ndarray  # (T, S, Q, C)
    b: np.ndarray
    a_l: np.ndarray
    a_r: np.ndarray
    diff_a: np.ndarray
    diff_b: np.ndarray
    p: np.ndarray  # (T, S, Q, 1) probability the root's split is known
    coin: np.ndarray  # (T, S)
    go_left: np.ndarray  # (T, 1, 1, C)
    left: np.ndarray  # (T, C) sub-pattern of the left child
    right: np.ndarray
    r_left: np.ndarray  # (T, 1, 1, 1)
    r_right: np.ndarray
    n_sub: int

    def backward(self, weights, gl, quad, lin, node_grad):
        """Adds the root's q-integral to ``node_grad[:, 0]``; returns the adjoints of its two
        children on their sub-patterns, ``(T, S, Q, 2, s)`` each for ``A`` and ``B``."""
        mix = weights[None, :, :, None]  # (1, S, Q, 1)
        adj_a, adj_b = mix * lin[:, None, None, :], mix * quad[:, None, None, :]
        dq = np.einsum("tsqc,tsqc->tsq", adj_a, self.diff_a) + np.einsum("tsqc,tsqc->tsq", adj_b, self.diff_b)
        node_grad[:, 0] = np.einsum("tsq,ts,q->t", dq, self.coin, gl)
        p, to_mix, go_left, goes_right = self.p, 1.0 - self.p, self.go_left, ~self.go_left
        cross = adj_b * to_mix * (2.0 * self.r_left * self.r_right)
        ga_l = adj_a * (p * go_left + to_mix * self.r_left) + cross * self.a_r
        ga_r = adj_a * (p * goes_right + to_mix * self.r_right) + cross * self.a_l
        gb_l = adj_b * (p * go_left + to_mix * self.r_left * self.r_left)
        gb_r = adj_b * (p * goes_right + to_mix * self.r_right * self.r_right)
        return self._to_children(ga_l, ga_r), self._to_children(gb_l, gb_r)

    def _to_children(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """Sum per-pattern adjoints ``(T, S, Q, C)`` into each child's sub-patterns."""
        n_trees, n_states, n_q, _ = left.shape
        s = self.n_sub
        base = (np.arange(n_trees * n_states * n_q) * (2 * s)).reshape(n_trees, n_states, n_q, 1)
        keys = np.concatenate(
            [(base + self.left[:, None, None, :]).ravel(), (base + s + self.right[:, None, None, :]).ravel()]
        )
        total = np.bincount(keys, weights=np.concatenate([left.ravel(), right.ravel()]), minlength=base.size * 2 * s)
        return total.reshape(n_trees, n_states, n_q, 2, s)


def _child_values(values: np.ndarray, child: int, sub: np.ndarray) -> np.ndarray:
    """``(T, S, Q, C)`` values ``(T, S, Q, 2, s)`` of the root's child ``child`` at sub-patterns ``sub (T, C)``."""
    return np.take_along_axis(values[:, :, :, child], sub[:, None, None, :], axis=3)


def _root_on_patterns(batch, mode, q, top_a, top_b, patterns) -> _Root:
    """The root's ``A``, ``B`` on patterns ``(T, C)`` (preorder index), from its children's values
    on all their sub-patterns ``top_a, top_b (T, S, Q, 2, s)``."""
    s = top_a.shape[-1]
    go_left = (patterns // (s * s) == 1)[:, None, None, :]
    left, right = (patterns // s) % s, patterns % s
    a_l, a_r = _child_values(top_a, 0, left), _child_values(top_a, 1, right)
    b_l, b_r = _child_values(top_b, 0, left), _child_values(top_b, 1, right)
    r_left = batch.ratio_left[:, :1, None, None]
    r_right = batch.ratio_right[:, :1, None, None]
    mix_a, mix_b, diff_a, diff_b = node_values(r_left, r_right, a_l, a_r, b_l, b_r, go_left)
    mode = mode[:, :, 0]  # (T, S)
    p = known_probability(mode[:, :, None], q[None, None, :])[..., None]
    return _Root(
        mix_a + p * diff_a,
        mix_b + p * diff_b,
        a_l,
        a_r,
        diff_a,
        diff_b,
        p,
        mode == 0,
        go_left,
        left,
        right,
        r_left,
        r_right,
        s,
    )


# a decision axis before two sub-pattern axes: 0 takes the right child, 1 the left one
_DECISIONS = np.array([False, True])[:, None, None]


def _forward_on_subpatterns(batch, bit_of_player, assignments, q, top: int = 0):
    """Bottom-up ``A``, ``B`` of every node on its sub-patterns: ``(T, S, Q, nodes, 2 s^2)`` at a
    level whose children have ``s`` sub-patterns, up to level ``top``; keeps what the reverse
    pass needs.  Returns the levels and ``A``, ``B`` of level ``top``."""
    a = batch.leaf_value[:, None, None, :, None]  # leaves: one sub-pattern each
    b = a * a
    qq = q[None, None, :, None]
    levels = []
    for level in range(batch.depth - 1, top - 1, -1):
        nodes = np.arange((1 << level) - 1, (1 << (level + 1)) - 1)
        mode = _node_modes(batch, bit_of_player, assignments, nodes)[:, :, None, :]  # (T, S, 1, n)
        p_known = known_probability(mode, qq)[..., None, None]  # (T, S, Q, n, 1, 1)
        r_left = batch.ratio_left[:, nodes][:, None, None, :, None, None]
        r_right = batch.ratio_right[:, nodes][:, None, None, :, None, None]
        a_l, a_r = a[:, :, :, 0::2, :, None], a[:, :, :, 1::2, None, :]  # (..., n, s, 1), (..., n, 1, s)
        b_l, b_r = b[:, :, :, 0::2, :, None], b[:, :, :, 1::2, None, :]
        # (..., n, decision, s, s): decision 1 (left) takes the left child, decision 0 the right one
        children = (x[:, :, :, :, None] for x in (r_left, r_right, a_l, a_r, b_l, b_r))
        mix_a, mix_b, diff_a, diff_b = node_values(*children, _DECISIONS)
        p = p_known[:, :, :, :, None]
        a, b = mix_a + p * diff_a, mix_b + p * diff_b  # (T, S, Q, n, 2, s, s)
        levels.append((nodes, a.shape, a_l, a_r, diff_a, diff_b, p, mode == 0, r_left, r_right))
        a, b = a.reshape(*a.shape[:4], -1), b.reshape(*b.shape[:4], -1)
    return levels, a, b  # (T, S, Q, nodes of level top, sub-patterns)


def _backward_on_subpatterns(batch, levels, gl, adj_a, adj_b, node_grad) -> None:
    """Reverse pass from the adjoints of the top level's ``A``, ``B`` ``(T, S, Q, nodes, sub-patterns)``:
    adds the q-integral of d objective / d q of every coin split into ``node_grad (T, N)``."""
    for nodes, shape, a_l, a_r, diff_a, diff_b, p, coin, r_left, r_right in reversed(levels):
        adj_a, adj_b = adj_a.reshape(shape), adj_b.reshape(shape)  # (T, S, Q, n, 2, s, s)
        # a coin split's value is mix + q (known - mix): its q-derivative is known - mix
        dq = (adj_a * diff_a + adj_b * diff_b).sum(axis=(4, 5, 6))
        node_grad[:, nodes] = np.einsum("tsqn,tsn,q->tn", dq, coin[:, :, 0], gl)
        if nodes[0] == (1 << (batch.depth - 1)) - 1:
            break  # children are leaves
        p, to_mix = p[..., 0], 1.0 - p[..., 0]  # (T, S, Q, n, 1, 1)
        sum_a = adj_a.sum(axis=4)  # over the node's own decision
        left_a, sum_b, left_b = adj_a[:, :, :, :, 1], adj_b.sum(axis=4), adj_b[:, :, :, :, 1]
        cross = sum_b * to_mix * (2.0 * r_left * r_right)  # (..., n, s, s)
        ga_l = (p * left_a + to_mix * r_left * sum_a + cross * a_r).sum(axis=5)
        ga_r = (p * (sum_a - left_a) + to_mix * r_right * sum_a + cross * a_l).sum(axis=4)
        gb_l = (p * left_b + to_mix * r_left * r_left * sum_b).sum(axis=5)
        gb_r = (p * (sum_b - left_b) + to_mix * r_right * r_right * sum_b).sum(axis=4)
        # next level in heap order: children of node i are its (2i)-th and (2i+1)-th nodes
        adj_a = np.stack([ga_l, ga_r], axis=4).reshape(*shape[:3], 2 * shape[3], -1)
        adj_b = np.stack([gb_l, gb_r], axis=4).reshape(*shape[:3], 2 * shape[3], -1)
