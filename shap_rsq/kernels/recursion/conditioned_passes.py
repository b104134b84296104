"""The passes of the conditioned recursion (``kernels.recursion.conditioned``) on a tree's sub-patterns.

Each node's forward pass reads its children's ``A, B`` on its own sub-patterns.  The reverse
pass runs on *rows* of some kind (:class:`PatternRows` or :class:`BlockRows`): for the global
(``rsq``) mode the pattern weights enter at the root and the adjoints live on each node's
sub-patterns, summed back into each child's with one sparse product; for per-row values
(``kernels.recursion.conditioned_rows``) they live on the rows themselves, one reverse pass per block of
rows.  Gradients are integrated over ``q`` with Gauss-Legendre quadrature, with the LCA kernel's
number of nodes (exact: a leaf pair's integrand has degree below the number of features on the
two paths).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..batching.cells import rows_of
from ..batching.sparse import OneHot
from ..quadrature import gauss_legendre
from .conditioned import JunctionNode, JunctionPlan, SubPatterns

__all__ = ["BlockRows", "PatternRows", "backward", "forward", "gradient_on_patterns"]


def gradient_on_patterns(
    plan: JunctionPlan, patterns: list[SubPatterns], root_pattern: np.ndarray, w_quad: np.ndarray, w_lin: np.ndarray
) -> np.ndarray:
    """Shapley values of ``sum_u w_quad[u] m_S(x_u)^2 + w_lin[u] m_S(x_u)`` per local feature ``(K,)``
    over distinct rows ``u`` with weights ``(m,)``, from their :func:`sub_patterns`."""
    q, gl = gauss_legendre(plan.n_q)
    saved = forward(plan, patterns, q)
    root = patterns[-1].count
    seed = [np.bincount(root_pattern, weights=w, minlength=root) for w in (w_lin, w_quad)]
    grad = np.zeros(len(plan.features))
    backward(plan, PatternRows(patterns), saved, [s[:, None, None] for s in seed], q, gl, grad)
    return grad


def forward(plan: JunctionPlan, patterns: list[SubPatterns], q: np.ndarray) -> list[tuple]:
    """Each node's forward values on its sub-patterns, as the reverse pass reads them."""
    values: list[tuple[np.ndarray, np.ndarray]] = []
    saved = []
    for node, pat in zip(plan.nodes, patterns, strict=True):
        a, b, kept = _forward(node, pat, values, q)
        values.append((a, b))
        saved.append(kept)
    return saved


@dataclass(frozen=True)
class PatternRows:
    """Adjoints on each node's sub-patterns (global values: the rows' weights are summed)."""

    patterns: list[SubPatterns]

    def take(self, i: int, values):
        return values

    def decision(self, i: int) -> np.ndarray:
        return self.patterns[i].decision

    def child_rows(self, i: int, side: int) -> np.ndarray:
        return self.patterns[i].child[side]

    def count(self, i: int) -> int:
        return self.patterns[i].count

    def add(self, grad: np.ndarray, feature: int, x: np.ndarray, gl: np.ndarray) -> None:
        grad[feature] += float(x.reshape(-1, x.shape[-1]).sum(axis=0) @ gl)

    def send(self, plan: JunctionPlan, adjoints, c: int, targets: np.ndarray, states, ga, gb) -> None:
        """Add adjoints ``(targets, states, Q)`` of a node's reads into child ``c``'s
        ``(P_c, O_c, Q)``: one sparse product, several reads landing on one sub-pattern."""
        n_q = ga.shape[2]
        n_child, n_open = self.patterns[c].count, 1 << plan.nodes[c].n_open
        if adjoints[c] is None:
            adjoints[c] = (np.zeros((n_child, n_open, n_q)), np.zeros((n_child, n_open, n_q)))
        if n_open == 1:
            flat = targets
            ga, gb = ga.sum(axis=1), gb.sum(axis=1)
        else:
            flat = (targets[:, None] * n_open + states[None, :]).ravel()
            shape = (len(targets), len(states), n_q)
            ga, gb = np.broadcast_to(ga, shape), np.broadcast_to(gb, shape)
        picks = OneHot.picks(flat, n_child * n_open)
        for total, g in zip(adjoints[c], (ga, gb), strict=True):
            picks.add_transposed(g.reshape(-1, n_q), total.reshape(-1, n_q))


@dataclass(frozen=True)
class BlockRows:
    """Adjoints on a block of rows at every node (per-row values): ``at[i]`` is node ``i``'s
    sub-pattern of each row, and the gradients are ``(rows, K)``."""

    patterns: list[SubPatterns]
    at: list[np.ndarray]

    def take(self, i: int, values):
        return rows_of(values, self.at[i]) if isinstance(values, np.ndarray) else values

    def decision(self, i: int) -> np.ndarray:
        return self.patterns[i].decision[self.at[i]]

    @cached_property
    def rows(self) -> np.ndarray:
        """The block's rows, ``0 .. 2r``: each node's adjoints are on all of them."""
        return np.arange(len(self.at[-1]))

    def child_rows(self, i: int, side: int) -> np.ndarray:
        return self.rows

    def count(self, i: int) -> int:
        return len(self.rows)

    def add(self, grad: np.ndarray, feature: int, x: np.ndarray, gl: np.ndarray) -> None:
        grad[:, feature] += x.sum(axis=1) @ gl

    def send(self, plan: JunctionPlan, adjoints, c: int, targets: np.ndarray, states, ga, gb) -> None:
        """Add adjoints ``(targets, states, Q)`` (fresh arrays, ``targets`` distinct rows) of a
        node's reads into child ``c``'s ``(rows, O_c, Q)``, summing the states that read one."""
        n_open = 1 << plan.nodes[c].n_open
        if ga.shape[1] != 1 or n_open != 1:
            ga, gb = (_states_summed(g, states, n_open) for g in (ga, gb))
        if len(targets) == len(self.rows):  # every row, in order (the unknown branch's reads)
            if adjoints[c] is None:
                adjoints[c] = (ga, gb)
            else:
                for total, g in zip(adjoints[c], (ga, gb), strict=True):
                    total += g
            return
        if adjoints[c] is None:
            adjoints[c] = tuple(np.zeros((len(self.rows), n_open, ga.shape[2])) for _ in range(2))
        for total, g in zip(adjoints[c], (ga, gb), strict=True):
            total[targets] += g


def _states_summed(g: np.ndarray, states: np.ndarray, n_open: int) -> np.ndarray:
    """``(rows, n_open, Q)``: the entries of ``g (rows, S, Q)`` summed by their state ``states[s]``
    (a child's states that no state reads get zeros)."""
    if n_open == 1:
        return g.sum(axis=1, keepdims=True)
    order = np.argsort(states, kind="stable")
    ordered = states[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    summed = np.take(g, order, axis=1)
    if len(starts) < len(states):
        summed = np.add.reduceat(summed, starts, axis=1)
    if len(starts) == n_open:  # every state of the child is read
        return summed
    out = np.zeros((g.shape[0], n_open, g.shape[2]))
    out[:, ordered[starts]] = summed
    return out


def backward(plan: JunctionPlan, rows, saved: list[tuple], seed: list[np.ndarray], q, gl, grad) -> None:
    """The reverse pass from the root's adjoints ``seed`` (of ``A`` and ``B``, ``(rows, 1, 1)``),
    adding each feature's integrated gradient into ``grad``; it releases ``saved`` as it goes."""
    n_q = len(q)
    adjoints: list = [None] * len(plan.nodes)
    adjoints[-1] = tuple(np.broadcast_to(s, (s.shape[0], 1, n_q)) for s in seed)
    for i in range(len(plan.nodes) - 1, -1, -1):
        _backward(plan, i, rows, saved[i], adjoints, q, gl, grad)
        adjoints[i] = saved[i] = None


def _forward(node: JunctionNode, pat: SubPatterns, values, q):
    """``A, B (P, open states, Q)`` of one node, and what its reverse pass needs."""
    qq = q[None, None, :]
    al, bl = _read(node, 0, values, pat.child[0], node.unknown_map[0])
    ar, br = _read(node, 1, values, pat.child[1], node.unknown_map[1])
    rl, rr = node.rho
    unknown_a = rl * al + rr * ar
    unknown_b = (2.0 * rl * rr) * (al * ar)
    unknown_b += (rl * rl) * bl
    unknown_b += (rr * rr) * br
    n_known = (1 << node.n_bits) // 2 if node.conditioned else 1 << node.n_bits
    shape = (pat.count, n_known, len(q))
    if all(node.known_map[side] is node.unknown_map[side] for side in (0, 1)):
        # neither child reads the split's own feature: the known branch picks from the same reads
        d = pat.decision[:, None, None]
        known = [np.broadcast_to(np.where(d, left, right), shape) for left, right in ((al, ar), (bl, br))]
    else:
        known = [np.empty(shape) for _ in range(2)]
        for side, rows in ((0, np.flatnonzero(pat.decision)), (1, np.flatnonzero(~pat.decision))):
            for k, v in enumerate(_read(node, side, values, pat.child[side][rows], node.known_map[side])):
                known[k][rows] = v
    if node.conditioned:
        a = np.concatenate([np.broadcast_to(unknown_a, known[0].shape), known[0]], axis=1)
        b = np.concatenate([np.broadcast_to(unknown_b, known[1].shape), known[1]], axis=1)
        diff = None
    else:
        diff = (known[0] - unknown_a, known[1] - unknown_b)
        a, b = unknown_a + qq * diff[0], unknown_b + qq * diff[1]
    mixed = []
    for _ in node.closing:
        mixed.append((a, b))
        a, b = (_mix(v, q) for v in (a, b))
    return a, b, (al, ar, diff, mixed)


def _mix(v: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Sum out the lowest state bit: ``q`` known, ``1 - q`` unknown."""
    return v.reshape(v.shape[0], -1, 2, v.shape[2])[:, :, 0] + q * _bit_difference(v)


def _read(node: JunctionNode, side: int, values, rows: np.ndarray, states: np.ndarray | None):
    """A child's ``A, B`` at sub-patterns ``rows`` and open ``states``: ``(rows, states, Q)``."""
    c = node.children[side]
    if c < 0:
        v = node.leaf[side]
        return v, v * v
    a, b = values[c]
    if a.shape[1] == 1:
        return rows_of(a, rows), rows_of(b, rows)
    flat = (rows[:, None] * a.shape[1] + states[None, :]).ravel()
    shape = (len(rows), len(states), a.shape[2])
    return (rows_of(v.reshape(-1, v.shape[2]), flat).reshape(shape) for v in (a, b))


def _backward(plan: JunctionPlan, i: int, rows, kept, adjoints, q, gl, grad) -> None:
    """Send node ``i``'s adjoints to its children and add its features' gradients."""
    node = plan.nodes[i]
    al, ar, diff, mixed = kept
    qq = q[None, None, :]
    ga, gb = adjoints[i]
    for feature, (a, b) in zip(node.closing[::-1], mixed[::-1], strict=True):
        bits = [rows.take(i, _bit_difference(v)) for v in (a, b)]
        rows.add(grad, feature, ga * bits[0] + gb * bits[1], gl)
        ga, gb = _unmix(ga, q), _unmix(gb, q)
    if node.conditioned:
        half = ga.shape[1] // 2
        known_ga, known_gb = ga[:, half:], gb[:, half:]
        unknown_ga, unknown_gb = ga[:, :half], gb[:, :half]
    else:
        rows.add(grad, node.own_feature, ga * rows.take(i, diff[0]) + gb * rows.take(i, diff[1]), gl)
        known_ga, known_gb = qq * ga, qq * gb
        unknown_ga, unknown_gb = (1.0 - qq) * ga, (1.0 - qq) * gb
    rl, rr = node.rho
    cross = (2.0 * rl * rr) * unknown_gb
    decision = rows.decision(i)
    for side, rho, other in ((0, rl, ar), (1, rr, al)):
        c = node.children[side]
        if c < 0:
            continue
        went = decision if side == 0 else ~decision
        ga_side = rho * unknown_ga + cross * rows.take(i, other)
        gb_side = (rho * rho) * unknown_gb
        if gb_side.shape != ga_side.shape:
            gb_side = np.broadcast_to(gb_side, ga_side.shape).copy()
        child_rows = rows.child_rows(i, side)
        if node.known_map[side] is node.unknown_map[side]:  # one read of the child serves both branches
            np.add(ga_side, known_ga, out=ga_side, where=went[:, None, None])
            np.add(gb_side, known_gb, out=gb_side, where=went[:, None, None])
            rows.send(plan, adjoints, c, child_rows, node.unknown_map[side], ga_side, gb_side)
            continue
        rows.send(plan, adjoints, c, child_rows, node.unknown_map[side], ga_side, gb_side)
        gone = np.flatnonzero(went)
        known = (rows_of(known_ga, gone), rows_of(known_gb, gone))
        rows.send(plan, adjoints, c, child_rows[gone], node.known_map[side], *known)


def _bit_difference(v: np.ndarray) -> np.ndarray:
    """Known minus unknown on the lowest state bit: ``(P, S/2, Q)``."""
    pairs = v.reshape(v.shape[0], -1, 2, v.shape[2])
    return pairs[:, :, 1] - pairs[:, :, 0]


def _unmix(g: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The adjoint of :func:`_mix`: ``(P, S, Q)`` to ``(P, 2 S, Q)``."""
    return np.stack([(1.0 - q) * g, q * g], axis=2).reshape(g.shape[0], -1, g.shape[2])
