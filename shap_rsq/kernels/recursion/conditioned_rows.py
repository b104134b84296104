"""Per-row values of the conditioned recursion (``kernels.recursion.conditioned``).

The forward pass is the global one (each node on its own sub-patterns).  Each row needs its own
gradients of ``m_S(x)`` and ``m_S(x)^2``, so the reverse pass carries the adjoints of a block of
rows at every node (``kernels.recursion.conditioned_passes.BlockRows``), reading the forward values
at each row's sub-pattern: its work is rows x states x quadrature nodes per node, where the
global pass has sub-patterns, fewer near the leaves.  The block holds every row twice, seeded
once with ``m`` and once with ``m^2``, so that both gradients come from one pass.
"""

from __future__ import annotations

import numpy as np

from ..quadrature import gauss_legendre
from .conditioned import JunctionPlan, SubPatterns
from .conditioned_passes import BlockRows, backward, forward, node_tables

__all__ = ["live_states", "reverse_work", "row_gradients"]

# arrays of 2^bits states per row a node's reverse step holds at once (adjoints unmixed, their
# known and unknown halves, each side's adjoints, the forward values read at the rows)
_NODE_ARRAYS = 12


def row_gradients(
    plan: JunctionPlan, patterns: list[SubPatterns], at: list[np.ndarray], row_elements: int
) -> tuple[np.ndarray, np.ndarray]:
    """Integrated gradients of ``m_S(x)^2`` and of ``m_S(x)`` ``(m, K)`` for the ``m`` rows whose
    sub-patterns at each node are ``at`` (:func:`~.conditioned.sub_patterns`), in blocks of rows
    whose reverse pass holds at most ``row_elements`` floats."""
    q, gl = gauss_legendre(plan.n_q)
    tables = node_tables(plan, q)
    saved = forward(plan, patterns, q, tables)
    m, n_features = len(at[-1]), len(plan.features)
    g_quad, g_lin = np.zeros((m, n_features)), np.zeros((m, n_features))
    step = max(1, row_elements // (2 * len(q) * live_states(plan)))
    for start in range(0, m, step):
        block = slice(start, min(m, start + step))
        r = block.stop - block.start
        rows = BlockRows(patterns, [np.tile(a[block], 2) for a in at])
        seed_lin = np.repeat([1.0, 0.0], r)[None, :, None]
        grad = np.zeros((2 * r, n_features))
        backward(plan, rows, list(saved), [seed_lin, 1.0 - seed_lin], q, gl, grad, tables)
        g_lin[block], g_quad[block] = grad[:r], grad[r:]
    return g_quad, g_lin


def live_states(plan: JunctionPlan) -> int:
    """Most states per row the reverse pass holds at once: the adjoints (two arrays) of the
    children waiting for their turn, and the node's own step."""
    waiting = {len(plan.nodes) - 1: 1}
    peak = 0
    for i in range(len(plan.nodes) - 1, -1, -1):
        node = plan.nodes[i]
        peak = max(peak, 2 * sum(waiting.values()) + _NODE_ARRAYS * (1 << node.n_bits))
        waiting.pop(i, None)
        for c in node.children:
            if c >= 0:
                waiting[c] = 1 << plan.nodes[c].n_open
    return peak


def reverse_work(plan: JunctionPlan, n_rows: int) -> float:
    """Elements the per-row reverse passes touch: every state of every node, for each row twice."""
    return float(2 * n_rows * plan.n_q * plan.node_states.sum())
