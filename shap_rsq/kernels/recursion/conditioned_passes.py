"""The passes of the conditioned recursion (``kernels.recursion.conditioned``) on a tree's sub-patterns.

Each node's forward pass reads its children's ``A, B`` on its own sub-patterns.  The reverse
pass runs on *rows* of some kind (:class:`PatternRows` or :class:`BlockRows`): for the global
(``rsq``) mode the pattern weights enter at the root and the adjoints live on each node's
sub-patterns, summed back into each child's with one sparse product; for per-row values
(``kernels.recursion.conditioned_rows``) they live on the rows themselves, one reverse pass per block of
rows.  Gradients are integrated over ``q`` with Gauss-Legendre quadrature, with the LCA kernel's
number of nodes (exact: a leaf pair's integrand has degree below the number of features on the
two paths).

Every array is laid out states first, ``(states, sub-patterns or rows, Q)``: what varies with the
sub-pattern but not with the state (the coefficients of a split's decision, a child with one open
state) then broadcasts over whole ``(sub-patterns, Q)`` blocks, which NumPy runs as one long loop,
where sub-patterns first left it loops of ``Q`` elements (twice the time per element).  A node
whose known and unknown branches read its children alike (nine nodes in ten on LightGBM's trees)
takes its values as a few products of its children's with tables of its decision
(:func:`node_tables`), and its reverse step their adjoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from ..batching.sparse import OneHot
from ..quadrature import gauss_legendre
from .conditioned import JunctionNode, JunctionPlan, SubPatterns

__all__ = ["BlockRows", "PatternRows", "backward", "forward", "gradient_on_patterns", "node_tables"]

# the tables of a node whose children are read alike by its known and unknown branches: its
# values are ``a = ALPHA + BL AL + BR AR`` and ``b = GAMMA + LL AL + LR AR + K AL AR + EL BL + ER BR``
# in its children's values ``A, B`` (a leaf child's terms folded into the constants)
ALPHA, GAMMA, BL, BR, LL, LR, K, EL, ER = range(9)


def gradient_on_patterns(
    plan: JunctionPlan, patterns: list[SubPatterns], root_pattern: np.ndarray, w_quad: np.ndarray, w_lin: np.ndarray
) -> np.ndarray:
    """Shapley values of ``sum_u w_quad[u] m_S(x_u)^2 + w_lin[u] m_S(x_u)`` per local feature ``(K,)``
    over distinct rows ``u`` with weights ``(m,)``, from their :func:`sub_patterns`."""
    q, gl = gauss_legendre(plan.n_q)
    tables = node_tables(plan, q)
    saved = forward(plan, patterns, q, tables)
    root = patterns[-1].count
    seed = [np.bincount(root_pattern, weights=w, minlength=root) for w in (w_lin, w_quad)]
    grad = np.zeros(len(plan.features))
    backward(plan, PatternRows(patterns), saved, [s[None, :, None] for s in seed], q, gl, grad, tables)
    return grad


def forward(plan: JunctionPlan, patterns: list[SubPatterns], q: np.ndarray, tables: list | None = None) -> list[tuple]:
    """Each node's forward values on its sub-patterns, as the reverse pass reads them
    (``tables``: the plan's :func:`node_tables` at ``q``, computed here if not given)."""
    values: list[tuple[np.ndarray, np.ndarray]] = []
    saved = []
    tables = node_tables(plan, q) if tables is None else tables
    w = _OnRows(q, max(pat.count for pat in patterns))
    for node, pat, table in zip(plan.nodes, patterns, tables, strict=True):
        a, b, kept = _forward(node, pat, values, w, table)
        values.append((a, b))
        saved.append(kept)
    return saved


def node_tables(plan: JunctionPlan, q: np.ndarray) -> list[_AlikeTables | None]:
    """Per node, the :class:`_AlikeTables` it reads: the coefficients of its values in its
    children's (:data:`ALPHA` ...) on each half ``H`` of its states (the unknown and the known half
    of a conditioned split, one half otherwise), by its decision (0 right, 1 left), at each
    quadrature node, and their derivatives in the split's own coin (read for a split that is not
    conditioned only); ``None`` where a child's branches read it at different states (the node
    then runs the general steps).

    With ``w_u, w_k`` the weights of the unknown and the known branch (``1 - q, q``, or ``1, 0``
    and ``0, 1`` on the halves of a conditioned split): ``BL = w_u rl + w_k [left]``,
    ``K = 2 w_u rl rr``, ``EL = w_u rl^2 + w_k [left]``, the same on the right; a leaf child of
    value ``c`` adds its terms to ``ALPHA`` and ``GAMMA``, and ``K c`` to the other side's ``LL``
    or ``LR``.  Every table is ``w_u U + w_k V`` with ``U, V`` free of ``q`` (:func:`_branch_terms`),
    so its derivative in the own coin is ``V - U``; the nodes of one kind
    (:func:`~shap_rsq.kernels.recursion.conditioned.node_kind`) read the same tables and are
    tabulated together, each node's a contiguous slice.
    """
    unknown, known = _branch_terms(plan.node_rho, plan.node_leaf)
    tables: list[_AlikeTables | None] = [None] * len(plan.nodes)
    kinds = plan.node_kind
    for kind in np.unique(kinds[kinds >= 0]).tolist():
        at = np.flatnonzero(kinds == kind)
        inner, conditioned = (bool(kind & 4), bool(kind & 2)), bool(kind & 1)
        ids = _TERMS[inner]
        u, v = unknown[at][:, ids], known[at][:, ids]  # (G, tables, 2)
        if conditioned:  # the unknown half reads U, the known half V, at every node
            values = np.repeat(np.stack([u, v], axis=2)[..., None], len(q), axis=-1)
        else:
            values = u[:, :, None, :, None] * (1.0 - q)
            values += v[:, :, None, :, None] * q
        slopes = v - u
        n_reverse = len(ids) - 2 if conditioned and not all(inner) else len(ids)
        for g, i in enumerate(at.tolist()):
            tables[i] = _AlikeTables(ids, values[g], slopes[g], n_reverse)
    return tables


def _branch_terms(rho: np.ndarray, leaf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``U, V (nodes, 9, 2)``: each table of :func:`node_tables` is ``w_u U + w_k V``, by the
    node's decision (last axis: 0 right, 1 left)."""
    rl, rr, cl, cr = (x[:, None] for x in (rho[:, 0], rho[:, 1], leaf[:, 0], leaf[:, 1]))
    left = np.array([0.0, 1.0])
    unknown, known = np.zeros((len(rho), ER + 1, 2)), np.zeros((len(rho), ER + 1, 2))
    unknown[:, BL], unknown[:, BR], unknown[:, K] = rl, rr, 2.0 * rl * rr
    unknown[:, EL], unknown[:, ER] = rl * rl, rr * rr
    known[:, BL] = known[:, EL] = left
    known[:, BR] = known[:, ER] = 1.0 - left
    for t in (unknown, known):
        t[:, ALPHA] = t[:, BL] * cl + t[:, BR] * cr
        t[:, GAMMA] = t[:, EL] * (cl * cl) + t[:, ER] * (cr * cr) + t[:, K] * (cl * cr)
        t[:, LL] = t[:, K] * cr
        t[:, LR] = t[:, K] * cl
    return unknown, known


class _AlikeTables(NamedTuple):
    """The tables an alike node reads (:func:`node_tables`): ``ids`` (:data:`ALPHA` ...), in the
    order of the reverse pass's terms (the constants last), ``values (len(ids), H, 2, Q)``
    contiguous and ``slopes (len(ids), 2)``, their derivatives in the split's own coin.  The
    reverse pass of a conditioned split reads the first ``n_reverse`` (not the constants, whose
    only use is the own coin's)."""

    ids: tuple[int, ...]
    values: np.ndarray
    slopes: np.ndarray
    n_reverse: int

    def picked(self, decision: np.ndarray, n: int | None = None) -> np.ndarray:
        """``(n, H, P, Q)``: the first ``n`` tables (all by default) at each sub-pattern's decision."""
        values = self.values if n is None else self.values[:n]
        return np.take(values, decision, axis=2)


# the tables of an alike node by which children are splits (left, right): the reverse pass's terms
_TERMS = {
    (True, True): (BL, BR, K, EL, ER),
    (True, False): (BL, LL, EL, ALPHA, GAMMA),
    (False, True): (BR, LR, ER, ALPHA, GAMMA),
    (False, False): (ALPHA, GAMMA),
}


class _OnRows:
    """The quadrature nodes ``q`` and ``1 - q`` repeated on rows, ``(rows, Q)`` each: a product of
    an ``(S, P, Q)`` array with ``known[:P]`` runs one loop of ``P x Q`` elements per state, where
    broadcasting ``q (Q,)`` ran loops of ``Q`` elements at a quarter of the speed (900 rows, 10
    nodes).  The products are the same numbers."""

    def __init__(self, q: np.ndarray, n_rows: int):
        self.known = np.tile(q, (n_rows, 1))
        self.unknown = 1.0 - self.known


@dataclass(frozen=True)
class PatternRows:
    """Adjoints on each node's sub-patterns (global values: the rows' weights are summed)."""

    patterns: list[SubPatterns]

    def take(self, i: int, values):
        return values

    def decision(self, i: int) -> np.ndarray:
        return self.patterns[i].decision

    def child_rows(self, i: int, side: int) -> np.ndarray | None:
        """Each sub-pattern's sub-pattern of the child on ``side`` (``None``: the same, in order)."""
        pat = self.patterns[i]
        return None if pat.same[side] else pat.child[side]

    def count(self, i: int) -> int:
        return self.patterns[i].count

    def add(self, grad: np.ndarray, feature: int, x: np.ndarray, gl: np.ndarray) -> None:
        grad[feature] += float(x.reshape(-1, x.shape[-1]).sum(axis=0) @ gl)

    def add_rows(self, grad: np.ndarray, feature: int, x: np.ndarray) -> None:
        """Add ``x (rows,)``, already integrated, to ``feature``'s gradient."""
        grad[feature] += float(x.sum())

    def send(self, plan: JunctionPlan, adjoints, c: int, targets: np.ndarray, states, ga, gb) -> None:
        """Add adjoints ``(states, targets, Q)`` of a node's reads into child ``c``'s
        ``(O_c, P_c, Q)``: one sparse product, several reads landing on one sub-pattern
        (``targets`` ``None``: the child's own sub-patterns, in order)."""
        n_q = ga.shape[2]
        n_child, n_open = self.patterns[c].count, 1 << plan.nodes[c].n_open
        if targets is None:  # the child's sub-patterns, in order: no product
            ga, gb = (np.ascontiguousarray(_states_summed(g, states, n_open), dtype=float) for g in (ga, gb))
            _add_adjoints(adjoints, c, (ga, gb))
            return
        if adjoints[c] is None:
            adjoints[c] = (np.zeros((n_open, n_child, n_q)), np.zeros((n_open, n_child, n_q)))
        if n_open == 1:
            flat = targets
            ga, gb = (g[0] if g.shape[0] == 1 else g.sum(axis=0) for g in (ga, gb))
        else:
            flat = (states[:, None] * n_child + targets[None, :]).ravel()
            shape = (len(states), len(targets), n_q)
            if ga.shape != shape or gb.shape != shape:
                ga, gb = np.broadcast_to(ga, shape), np.broadcast_to(gb, shape)
        picks = OneHot.picks(flat, n_open * n_child)
        for total, g in zip(adjoints[c], (ga, gb), strict=True):
            picks.add_transposed(g.reshape(-1, n_q), total.reshape(-1, n_q))


@dataclass(frozen=True)
class BlockRows:
    """Adjoints on a block of rows at every node (per-row values): ``at[i]`` is node ``i``'s
    sub-pattern of each row, and the gradients are ``(rows, K)``."""

    patterns: list[SubPatterns]
    at: list[np.ndarray]

    def take(self, i: int, values):
        return np.take(values, self.at[i], axis=1) if isinstance(values, np.ndarray) else values

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
        grad[:, feature] += x.sum(axis=0) @ gl

    def add_rows(self, grad: np.ndarray, feature: int, x: np.ndarray) -> None:
        """Add ``x (rows,)``, already integrated, to each row's gradient of ``feature``."""
        grad[:, feature] += x

    def send(self, plan: JunctionPlan, adjoints, c: int, targets: np.ndarray, states, ga, gb) -> None:
        """Add adjoints ``(states, targets, Q)`` (fresh arrays, ``targets`` distinct rows) of a
        node's reads into child ``c``'s ``(O_c, rows, Q)``, summing the states that read one."""
        n_open = 1 << plan.nodes[c].n_open
        if ga.shape[0] != 1 or n_open != 1:
            ga, gb = (_states_summed(g, states, n_open) for g in (ga, gb))
        if len(targets) == len(self.rows):  # every row, in order (the unknown branch's reads)
            _add_adjoints(adjoints, c, (ga, gb))
            return
        if adjoints[c] is None:
            adjoints[c] = tuple(np.zeros((n_open, len(self.rows), ga.shape[2])) for _ in range(2))
        for total, g in zip(adjoints[c], (ga, gb), strict=True):
            total[:, targets] += g


def _states_summed(g: np.ndarray, states: np.ndarray, n_open: int) -> np.ndarray:
    """``(n_open, rows, Q)``: the entries of ``g (S, rows, Q)`` summed by their state ``states[s]``
    (a child's states that no state reads get zeros)."""
    if n_open == 1:
        return g if g.shape[0] == 1 else g.sum(axis=0, keepdims=True)
    if _identity(states, n_open):
        return g
    if np.bincount(states, minlength=n_open).max() == 1:  # distinct states: placed, not summed
        out = np.zeros((n_open, g.shape[1], g.shape[2]))
        out[states] = g
        return out
    order = np.argsort(states, kind="stable")
    ordered = states[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    summed = np.add.reduceat(np.take(g, order, axis=0), starts, axis=0)
    if len(starts) == n_open:  # every state of the child is read
        return summed
    out = np.zeros((n_open, g.shape[1], g.shape[2]))
    out[ordered[starts]] = summed
    return out


def backward(plan: JunctionPlan, rows, saved: list[tuple], seed: list[np.ndarray], q, gl, grad, tables=None) -> None:
    """The reverse pass from the root's adjoints ``seed`` (of ``A`` and ``B``, ``(1, rows, 1)``),
    adding each feature's integrated gradient into ``grad``; it releases ``saved`` as it goes
    (``tables`` as in :func:`forward`)."""
    n_q = len(q)
    adjoints: list = [None] * len(plan.nodes)
    adjoints[-1] = tuple(np.broadcast_to(s, (1, s.shape[1], n_q)) for s in seed)
    tables = node_tables(plan, q) if tables is None else tables
    w = _OnRows(q, max(rows.count(i) for i in range(len(plan.nodes))))
    for i in range(len(plan.nodes) - 1, -1, -1):
        _backward(plan, i, rows, saved[i], adjoints, w, gl, grad, tables[i])
        adjoints[i] = saved[i] = None


def _forward(node: JunctionNode, pat: SubPatterns, values, w: _OnRows, table: np.ndarray | None):
    """``A, B (open states, P, Q)`` of one node, and what its reverse pass needs."""
    al, bl = _read(node, 0, values, pat.child[0], node.unknown_map[0], pat.same[0])
    ar, br = _read(node, 1, values, pat.child[1], node.unknown_map[1], pat.same[1])
    if table is None:
        a, b, reads = _forward_apart(node, pat, values, w, al, bl, ar, br)
    else:
        a, b, reads = _forward_alike(node, pat, table, al, bl, ar, br)
    mixed = []
    for _ in node.closing:
        mixed.append((a, b))
        a, b = (_mix(v, w) for v in (a, b))
    return a, b, (reads, mixed)


def _forward_alike(node: JunctionNode, pat: SubPatterns, tables: _AlikeTables, al, bl, ar, br):
    """:func:`_forward`'s values before the closing features are summed out, for a node whose
    children are read alike by both branches: a few products with its :func:`node_tables`."""
    picked = tables.picked(pat.decision.astype(np.intp))
    inner = [c >= 0 for c in node.children]
    if not any(inner):  # two leaves: the values are the constants, one state per half
        return picked[0], picked[1], (al, ar, bl, br, None)
    coef = {j: picked[k][:, None] for k, j in enumerate(tables.ids)}  # (H, 1, P, Q)
    both = al * ar if all(inner) else None
    a_terms = [(BL, al)] * inner[0] + [(BR, ar)] * inner[1]
    if all(inner):
        b_terms = [(K, both), (EL, bl), (ER, br)]
    elif inner[0]:
        b_terms = [(LL, al), (EL, bl)]
    else:
        b_terms = [(LR, ar), (ER, br)]
    half = picked.shape[1]
    shape = (half, (1 << node.n_bits) // half, pat.count, picked.shape[-1])
    constant = not all(inner)
    a = _combine(coef, a_terms, ALPHA if constant else None, shape)
    b = _combine(coef, b_terms, GAMMA if constant else None, shape)
    return a.reshape(-1, *shape[2:]), b.reshape(-1, *shape[2:]), (al, ar, bl, br, both)


def _combine(coef: dict, terms: list, constant: int | None, shape: tuple) -> np.ndarray:
    """``coef[constant] + sum_j coef[j] x_j`` over ``terms`` ``(j, x_j)`` (``x_j`` of the node's
    unknown-branch states or of one state), of ``shape (H, S, P, Q)``."""
    out = np.empty(shape)
    for k, (j, x) in enumerate(terms):
        if k == 0:
            np.multiply(coef[j], x, out=out)
        else:
            out += coef[j] * x
    if constant is not None:
        if terms:
            out += coef[constant]
        else:
            out[...] = coef[constant]
    return out


def _forward_apart(node: JunctionNode, pat: SubPatterns, values, w: _OnRows, al, bl, ar, br):
    """:func:`_forward`'s values before the closing features are summed out, for a node whose
    known branch reads a child at other states than its unknown branch."""
    rl, rr = node.rho
    unknown_a = rl * al + rr * ar
    unknown_b = (2.0 * rl * rr) * (al * ar)
    unknown_b += (rl * rl) * bl
    unknown_b += (rr * rr) * br
    n_known = (1 << node.n_bits) // 2 if node.conditioned else 1 << node.n_bits
    shape = (n_known, pat.count, w.known.shape[1])
    known = [np.empty(shape) for _ in range(2)]
    for side, rows in ((0, np.flatnonzero(pat.decision)), (1, np.flatnonzero(~pat.decision))):
        for k, v in enumerate(_read(node, side, values, pat.child[side][rows], node.known_map[side])):
            known[k][:, rows] = v
    if node.conditioned:
        a = np.concatenate([np.broadcast_to(unknown_a, shape), known[0]], axis=0)
        b = np.concatenate([np.broadcast_to(unknown_b, shape), known[1]], axis=0)
        diff = None
    else:
        diff = (known[0] - unknown_a, known[1] - unknown_b)
        q = w.known[: pat.count]
        a, b = unknown_a + q * diff[0], unknown_b + q * diff[1]
    return a, b, (al, ar, diff)


def _mix(v: np.ndarray, w: _OnRows) -> np.ndarray:
    """Sum out the lowest state bit: ``q`` known, ``1 - q`` unknown."""
    pairs = v.reshape(-1, 2, *v.shape[1:])
    return pairs[:, 0] + w.known[: v.shape[1]] * (pairs[:, 1] - pairs[:, 0])


def _read(node: JunctionNode, side: int, values, rows: np.ndarray, states: np.ndarray | None, same: bool = False):
    """A child's ``A, B`` at sub-patterns ``rows`` and open ``states``: ``(states, rows, Q)``,
    or ``(1, rows, Q)`` for a child with one open state (the same for every state).  ``same``:
    the child's sub-patterns are ``rows``, in order (its own arrays are read, not copied)."""
    c = node.children[side]
    if c < 0:
        v = node.leaf[side]
        return v, v * v
    a, b = values[c]
    if same:
        if a.shape[0] == 1 or _identity(states, a.shape[0]):
            return a, b
        return np.take(a, states, axis=0), np.take(b, states, axis=0)
    if a.shape[0] == 1:
        return np.take(a, rows, axis=1), np.take(b, rows, axis=1)
    flat = (states[:, None] * a.shape[1] + rows[None, :]).ravel()
    shape = (len(states), len(rows), a.shape[2])
    return (np.take(v.reshape(-1, v.shape[2]), flat, axis=0).reshape(shape) for v in (a, b))


def _identity(states: np.ndarray, n: int) -> bool:
    """Whether ``states`` reads the ``n`` states of a child each once, in order."""
    return len(states) == n and bool((states == np.arange(n)).all())


def _backward(plan: JunctionPlan, i: int, rows, kept, adjoints, w: _OnRows, gl, grad, table: np.ndarray | None) -> None:
    """Send node ``i``'s adjoints to its children and add its features' gradients."""
    node = plan.nodes[i]
    reads, mixed = kept
    ga, gb = adjoints[i]
    for feature, (a, b) in zip(node.closing[::-1], mixed[::-1], strict=True):
        bits = [rows.take(i, _bit_difference(v)) for v in (a, b)]
        rows.add(grad, feature, ga * bits[0] + gb * bits[1], gl)
        ga, gb = _unmix(ga, w), _unmix(gb, w)
    if table is None:
        _backward_apart(plan, i, rows, reads, adjoints, w, gl, grad, ga, gb)
    else:
        _backward_alike(plan, i, rows, reads, adjoints, gl, grad, ga, gb, table)


def _backward_alike(plan: JunctionPlan, i: int, rows, reads, adjoints, gl, grad, ga, gb, tables: _AlikeTables) -> None:
    """:func:`_backward` after the closing features, for a node whose children are read alike by
    both branches: the adjoints of :func:`_forward_alike`'s products."""
    node = plan.nodes[i]
    half, n_rows, n_q = tables.values.shape[1], ga.shape[1], ga.shape[2]
    decision = rows.decision(i).astype(np.intp)
    if all(ch < 0 for ch in node.children):  # two leaves: only the own coin's derivative
        if not node.conditioned:
            slopes = np.take(tables.slopes, decision, axis=1)
            rows.add_rows(grad, node.own_feature, (ga[0] @ gl) * slopes[0] + (gb[0] @ gl) * slopes[1])
        return
    ga4, gb4 = (g.reshape(half, -1, n_rows, n_q) for g in (ga, gb))
    al, ar, bl, br, both = (rows.take(i, v) for v in reads)
    inner = [ch >= 0 for ch in node.children]
    # each term's adjoint and the value it multiplies, in the order of ``tables.ids``
    if all(inner):
        terms = [(ga, al), (ga, ar), (gb, both), (gb, bl), (gb, br)]
    elif inner[0]:
        terms = [(ga, al), (gb, al), (gb, bl), (ga, None), (gb, None)]
    else:
        terms = [(ga, ar), (gb, ar), (gb, br), (ga, None), (gb, None)]
    # (tables, H, rows, Q), contiguous: slicing the derivative column off after the gather left
    # views that every product below broadcast in loops of Q elements (with the own coin's sums
    # weighted before their integration, the passes took 1.16x-1.18x their time now)
    picked = tables.picked(decision, tables.n_reverse)
    coef = dict(zip(tables.ids, picked, strict=False))
    if not node.conditioned:
        # the split's own coin: each product against its table's derivative, integrated over the
        # nodes before it is weighted by the rows' decisions
        slopes = np.take(tables.slopes, decision, axis=1)
        sums = np.empty((len(terms), n_rows, n_q))
        for k, (g, x) in enumerate(terms):
            _state_sums(g, x, sums[k])
        integrated = (sums.reshape(-1, n_q) @ gl).reshape(len(terms), n_rows)
        rows.add_rows(grad, node.own_feature, np.einsum("tr,tr->r", slopes, integrated))
    k_gb = coef[K][:, None] * gb4 if all(inner) else None
    for side, (other, linear, square, cross) in enumerate(((ar, BL, EL, LL), (al, BR, ER, LR))):
        child = node.children[side]
        if child < 0:
            continue
        g_a = coef[linear][:, None] * ga4
        if k_gb is not None:
            g_a += k_gb * other
        else:  # the other child is a leaf: the cross term is linear in this one
            g_a += coef[cross][:, None] * gb4
        g_b = coef[square][:, None] * gb4
        g_a, g_b = (g.sum(axis=0) if half == 2 else g[0] for g in (g_a, g_b))
        rows.send(plan, adjoints, child, rows.child_rows(i, side), node.unknown_map[side], g_a, g_b)


def _state_sums(g: np.ndarray, x: np.ndarray | None, out: np.ndarray) -> None:
    """Write into ``out (rows, Q)`` the sums over the states of ``g (S, rows, Q)`` times ``x``
    (``(S, rows, Q)`` or ``(1, rows, Q)``; ``None`` for ones)."""
    if x is None:
        np.sum(g, axis=0, out=out)
    elif x.shape[0] != g.shape[0]:
        np.sum(g, axis=0, out=out)
        out *= x[0]
    else:
        np.einsum("srq,srq->rq", g, x, out=out)


def _backward_apart(plan: JunctionPlan, i: int, rows, reads, adjoints, w: _OnRows, gl, grad, ga, gb) -> None:
    """:func:`_backward` after the closing features, for a node whose known branch reads a child
    at other states than its unknown branch."""
    node = plan.nodes[i]
    al, ar, diff = reads
    if node.conditioned:
        half = ga.shape[0] // 2
        known_ga, known_gb = ga[half:], gb[half:]
        unknown_ga, unknown_gb = ga[:half], gb[:half]
    else:
        rows.add(grad, node.own_feature, ga * rows.take(i, diff[0]) + gb * rows.take(i, diff[1]), gl)
        known, unknown = w.known[: ga.shape[1]], w.unknown[: ga.shape[1]]
        known_ga, known_gb = known * ga, known * gb
        unknown_ga, unknown_gb = unknown * ga, unknown * gb
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
            np.add(ga_side, known_ga, out=ga_side, where=went[None, :, None])
            np.add(gb_side, known_gb, out=gb_side, where=went[None, :, None])
            rows.send(plan, adjoints, c, child_rows, node.unknown_map[side], ga_side, gb_side)
            continue
        rows.send(plan, adjoints, c, child_rows, node.unknown_map[side], ga_side, gb_side)
        gone = np.flatnonzero(went)
        known = (np.take(known_ga, gone, axis=1), np.take(known_gb, gone, axis=1))
        rows.send(plan, adjoints, c, gone if child_rows is None else child_rows[gone], node.known_map[side], *known)


def _bit_difference(v: np.ndarray) -> np.ndarray:
    """Known minus unknown on the lowest state bit: ``(S/2, P, Q)``."""
    pairs = v.reshape(-1, 2, *v.shape[1:])
    return pairs[:, 1] - pairs[:, 0]


def _unmix(g: np.ndarray, w: _OnRows) -> np.ndarray:
    """The adjoint of :func:`_mix`: ``(S, P, Q)`` to ``(2 S, P, Q)``."""
    n = g.shape[1]
    return np.stack([w.unknown[:n] * g, w.known[:n] * g], axis=1).reshape(-1, *g.shape[1:])


def _add_adjoints(adjoints: list, c: int, pair: tuple) -> None:
    """Add ``pair`` to child ``c``'s adjoints, taking it as they are when the child has none yet
    (the caller hands over arrays it no longer reads)."""
    if adjoints[c] is None:
        adjoints[c] = pair
        return
    for total, g in zip(adjoints[c], pair, strict=True):
        total += g
