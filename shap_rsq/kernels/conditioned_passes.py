"""The passes of the conditioned recursion (``kernels.conditioned``) on a tree's sub-patterns.

Only the global (``rsq``) mode is computed here: pattern weights enter at the root and one
reverse pass gives every feature's gradient, integrated over ``q`` with Gauss-Legendre
quadrature, with the LCA kernel's number of nodes (exact: a leaf pair's integrand has degree
below the number of features on the two paths).  Each node's forward pass reads its children's
``A, B`` on its own sub-patterns; the reverse pass sums the adjoints back into each child's
sub-patterns with one sparse product.
"""

from __future__ import annotations

import numpy as np

from .conditioned import JunctionNode, JunctionPlan, SubPatterns
from .lca import gauss_legendre
from .lca_cells import rows_of
from .sparse import OneHot

__all__ = ["gradient_on_patterns"]


def gradient_on_patterns(
    plan: JunctionPlan, patterns: list[SubPatterns], root_pattern: np.ndarray, w_quad: np.ndarray, w_lin: np.ndarray
) -> np.ndarray:
    """Shapley values of ``sum_u w_quad[u] m_S(x_u)^2 + w_lin[u] m_S(x_u)`` per local feature ``(K,)``
    over distinct rows ``u`` with weights ``(m,)``, from their :func:`sub_patterns`."""
    q, gl = gauss_legendre(plan.n_q)
    values: list[tuple[np.ndarray, np.ndarray]] = []
    saved = []
    for node, pat in zip(plan.nodes, patterns, strict=True):
        a, b, kept = _forward(node, pat, values, q)
        values.append((a, b))
        saved.append(kept)
    grad = np.zeros(len(plan.features))
    root = patterns[-1].count
    seed = [np.bincount(root_pattern, weights=w, minlength=root) for w in (w_lin, w_quad)]
    adjoints: list = [None] * len(plan.nodes)
    adjoints[-1] = tuple(np.broadcast_to(s[:, None, None], (root, 1, len(q))) for s in seed)
    for i in range(len(plan.nodes) - 1, -1, -1):
        _backward(plan, i, patterns, saved[i], adjoints, q, gl, grad)
        adjoints[i] = saved[i] = None
    return grad


def _forward(node: JunctionNode, pat: SubPatterns, values, q):
    """``A, B (P, open states, Q)`` of one node, and what its reverse pass needs."""
    qq = q[None, None, :]
    goes_left = np.flatnonzero(pat.decision)
    goes_right = np.flatnonzero(~pat.decision)
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
        for side, rows in ((0, goes_left), (1, goes_right)):
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
    return a, b, (al, ar, diff, mixed, goes_left, goes_right)


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


def _backward(plan: JunctionPlan, i: int, patterns, kept, adjoints, q, gl, grad) -> None:
    """Send node ``i``'s adjoints to its children and add its features' gradients."""
    node, pat = plan.nodes[i], patterns[i]
    al, ar, diff, mixed, goes_left, goes_right = kept
    qq = q[None, None, :]
    ga, gb = adjoints[i]
    for feature, (a, b) in zip(node.closing[::-1], mixed[::-1], strict=True):
        grad[feature] += _integrated(ga * _bit_difference(a) + gb * _bit_difference(b), gl)
        ga, gb = _unmix(ga, q), _unmix(gb, q)
    if node.conditioned:
        half = ga.shape[1] // 2
        known_ga, known_gb = ga[:, half:], gb[:, half:]
        unknown_ga, unknown_gb = ga[:, :half], gb[:, :half]
    else:
        grad[node.own_feature] += _integrated(ga * diff[0] + gb * diff[1], gl)
        known_ga, known_gb = qq * ga, qq * gb
        unknown_ga, unknown_gb = (1.0 - qq) * ga, (1.0 - qq) * gb
    rl, rr = node.rho
    cross = (2.0 * rl * rr) * unknown_gb
    for side, rows, rho, other in ((0, goes_left, rl, ar), (1, goes_right, rr, al)):
        c = node.children[side]
        if c < 0:
            continue
        ga_side = rho * unknown_ga + cross * other
        gb_side = np.broadcast_to((rho * rho) * unknown_gb, ga_side.shape).copy()
        if node.known_map[side] is node.unknown_map[side]:  # one read of the child serves both branches
            went = (pat.decision if side == 0 else ~pat.decision)[:, None, None]
            np.add(ga_side, known_ga, out=ga_side, where=went)
            np.add(gb_side, known_gb, out=gb_side, where=went)
        else:
            known = (rows_of(known_ga, rows), rows_of(known_gb, rows))
            _send(plan, patterns, adjoints, c, pat.child[side][rows], node.known_map[side], *known)
        _send(plan, patterns, adjoints, c, pat.child[side], node.unknown_map[side], ga_side, gb_side)


def _bit_difference(v: np.ndarray) -> np.ndarray:
    """Known minus unknown on the lowest state bit: ``(P, S/2, Q)``."""
    pairs = v.reshape(v.shape[0], -1, 2, v.shape[2])
    return pairs[:, :, 1] - pairs[:, :, 0]


def _unmix(g: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The adjoint of :func:`_mix`: ``(P, S, Q)`` to ``(P, 2 S, Q)``."""
    return np.stack([(1.0 - q) * g, q * g], axis=2).reshape(g.shape[0], -1, g.shape[2])


def _integrated(x: np.ndarray, gl: np.ndarray) -> float:
    return float(x.reshape(-1, x.shape[-1]).sum(axis=0) @ gl)


def _send(plan, patterns, adjoints, c: int, rows: np.ndarray, states, ga: np.ndarray, gb: np.ndarray) -> None:
    """Add adjoints ``(rows, states, Q)`` of a node's reads into child ``c``'s ``(P_c, O_c, Q)``."""
    n_q = ga.shape[2]
    n_child, n_open = patterns[c].count, 1 << plan.nodes[c].n_open
    if adjoints[c] is None:
        adjoints[c] = (np.zeros((n_child, n_open, n_q)), np.zeros((n_child, n_open, n_q)))
    if n_open == 1:
        target = rows
        ga, gb = ga.sum(axis=1), gb.sum(axis=1)
    else:
        target = (rows[:, None] * n_open + states[None, :]).ravel()
        shape = (len(rows), len(states), n_q)
        ga, gb = np.broadcast_to(ga, shape), np.broadcast_to(gb, shape)
    picks = OneHot.picks(target, n_child * n_open)
    for total, g in zip(adjoints[c], (ga, gb), strict=True):
        picks.add_transposed(g.reshape(-1, n_q), total.reshape(-1, n_q))
