"""One deep tree through the LCA kernel with the leaf pairs of some nodes taken one by one.

At a node where the two sides reuse many features, expanding the coupled factors into LCA items
costs ``sum_leaves 2^coupled``; evaluating its ``|left| x |right|`` leaf pairs as products
(``kernels.pairs``) costs ``pairs x features x Q`` whatever the coupling.  The unit compiles the
LCA plan without the cross items of the nodes :func:`~shap_rsq.kernels.pairs.choose_pair_nodes`
gave to the pairs, and adds the pairs' values to the LCA kernel's: the sum over all leaf pairs
is the same split two ways, so the values are exact either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .lca_plan import TreePlan, compile_tree
from .lca_tree import LcaUnit
from .pairs import PairPlan, compile_pairs, pair_values, passes

__all__ = ["HybridUnit"]


@dataclass
class HybridUnit(LcaUnit):
    """An :class:`~shap_rsq.kernels.lca_tree.LcaUnit` whose ``pair_nodes`` (a mask over the tree's
    nodes) take the per-pair kernel; never the conditioned recursion (it would count them twice)."""

    pair_nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    _pair_plan: PairPlan | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.junction = "never"

    @property
    def plan(self) -> TreePlan:
        if self._plan is None:
            self._plan = compile_tree(self.tree, skip=self.pair_nodes)
        return self._plan

    @property
    def pair_plan(self) -> PairPlan:
        if self._pair_plan is None:
            self._pair_plan = compile_pairs(self.tree, self.pair_nodes)
        return self._pair_plan

    @property
    def compiled_work(self) -> float | None:
        """``None``: the plan leaves out the pair nodes' work, which ``work`` estimates."""
        return None

    def element_bytes(self, local: bool) -> int:
        """Bytes per (pattern, item) of trees deep enough to have pair nodes: their items rarely
        share cells (``Tuning.lca_dense_local_bytes`` / ``lca_dense_global_bytes``)."""
        return self.tuning.lca_dense_local_bytes if local else self.tuning.lca_dense_global_bytes

    @property
    def pair_work(self) -> float:
        """Pairs x features x quadrature nodes per row pattern (for time estimates)."""
        return float(sum(_pairs(a) * _pairs(b) * len(c) * -(-len(c) // 2) for a, b, c in self.pair_plan.nodes))

    def contribute(self, state, w_quad: np.ndarray, w_lin: np.ndarray, out: np.ndarray, local: bool) -> None:
        super().contribute(state, w_quad, w_lin, out, local)
        X, dtype, first, inverse = state
        plan = self.pair_plan
        n_patterns = len(first)
        block = self.tuning.block_elements
        # pass bits of a block of patterns: (rows, leaves, features) booleans
        step = max(1, self.tuning.chunk_elements // max(1, plan.cover.size))
        if local:
            slopes = np.empty((n_patterns, plan.n_features))
            for start in range(0, n_patterns, step):
                rows = first[start : start + step]
                slopes[start : start + step] = pair_values(plan, passes(plan, X[rows], dtype), None, block)
            out[:, plan.features] += w_quad[:, :1] * slopes[inverse]
            return
        per_quad = np.bincount(inverse, weights=w_quad[:, 0], minlength=n_patterns)
        for start in range(0, n_patterns, step):
            rows = first[start : start + step]
            bits = passes(plan, X[rows], dtype)
            out[plan.features] += pair_values(plan, bits, per_quad[start : start + step], block)


def _pairs(leaves: slice) -> int:
    return leaves.stop - leaves.start
