"""One deep tree whose leaf pairs are split, node by node, between LCA plans and the per-pair kernel.

At a node where the two sides reuse many features, expanding the coupled factors into LCA items
costs ``sum_leaves 2^coupled``; evaluating its ``|left| x |right|`` leaf pairs as products
(``kernels.lca.pairs``) costs ``pairs x features x Q`` whatever the coupling.  The unit compiles the
LCA items of the nodes :func:`~shap_rsq.engine.routing.choose_pair_nodes` did not give to the
pairs, in *pieces* of at most ``Tuning.plan_item_cap`` estimated items each (:func:`plan_pieces`),
so that compiling a plan stays within the memory budget however large the tree.  Each pair of
leaves meets at one node, and each node is in one piece or with the pairs, so the values add up
to the tree's, exactly.  The first piece carries the linear and diagonal items and is kept, like
any tree's plan; the others are compiled on each call and dropped (compiling takes 1-2% of
evaluating a plan on 10,000 rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..batching.sparse import add_pattern_values
from ..leaf_paths import tree_paths
from .pairs import PairPlan, compile_pairs, pair_values, passes
from .plan import TreePlan, compile_tree
from .unit import LcaUnit

__all__ = ["HybridUnit", "plan_pieces"]


@dataclass
class HybridUnit(LcaUnit):
    """An :class:`~shap_rsq.kernels.lca.unit.LcaUnit` whose ``pair_nodes`` (a mask over the tree's
    nodes) take the per-pair kernel and whose other nodes' items are compiled in ``pieces`` (the
    piece of each node, ``-1`` for leaves and pair nodes; all 0 when one plan holds them); never
    the conditioned recursion (it would count the pairs twice)."""

    pair_nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    pieces: np.ndarray | None = field(default=None, repr=False)
    _pair_plan: PairPlan | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.junction = None
        if self.pieces is None:
            self.pieces = np.where(self.pair_nodes | (self.tree.left < 0), -1, 0)

    @property
    def plan(self) -> TreePlan:
        if self._plan is None:
            self._plan = compile_tree(self.tree, skip=self.pieces != 0, tuning=self.tuning)
        return self._plan

    def lca_plans(self):
        """The first piece's plan (kept), then each other piece's, compiled when it is reached."""
        yield self.plan
        for piece in range(1, int(self.pieces.max()) + 1):
            yield compile_tree(self.tree, skip=self.pieces != piece, singles=False, tuning=self.tuning)

    @property
    def dense(self) -> bool:
        """Whether some nodes take the pairs (the per-pair kernel has work to do)."""
        return bool(self.pair_nodes.any())

    @cached_property
    def code_bits(self) -> int:
        """Bits of the widest leaf code: the most distinct features on one leaf's path."""
        return int(tree_paths(self.tree).n_local.max(initial=0))

    @property
    def pair_plan(self) -> PairPlan:
        if self._pair_plan is None:
            self._pair_plan = compile_pairs(self.tree, self.pair_nodes, self.tuning)
        return self._pair_plan

    @property
    def compiled_work(self) -> float | None:
        """``None``: the plan leaves out the pair nodes' work, which ``work`` estimates."""
        return None

    def element_bytes(self, local: bool) -> float:
        """Bytes per (pattern, item) of trees deep enough to have pair nodes whose leaf codes are
        wider than ``Tuning.shared_code_bits``: their items rarely share cells
        (``Tuning.lca_dense_local_bytes`` / ``lca_dense_global_bytes``)."""
        if not self.dense or self.code_bits <= self.tuning.shared_code_bits:
            return super().element_bytes(local)
        return self.tuning.lca_dense_local_bytes if local else self.tuning.lca_dense_global_bytes

    @property
    def pair_work(self) -> float:
        """Pairs x features x quadrature nodes per row pattern (for time estimates)."""
        if not self.dense:
            return 0.0
        return float(sum(_pairs(a) * _pairs(b) * len(c) * n_q for a, b, c, n_q in self.pair_plan.nodes))

    def contribute(self, state, w_quad: np.ndarray, w_lin: np.ndarray, out: np.ndarray, local: bool) -> None:
        super().contribute(state, w_quad, w_lin, out, local)
        if not self.dense:
            return
        X, dtype, first, inverse, *_ = state
        plan = self.pair_plan
        n_patterns = len(first)
        block = self.tuning.block_elements_within
        # pass bits of a block of patterns: (rows, leaves, features) booleans
        step = max(1, self.tuning.chunk_elements_within // max(1, plan.cover.size))
        if local:
            slopes = np.empty((n_patterns, plan.n_features))
            for start in range(0, n_patterns, step):
                rows = first[start : start + step]
                slopes[start : start + step] = pair_values(plan, passes(plan, X, dtype, rows), None, block)
            add_pattern_values(out, plan.features, inverse, (w_quad[:, 0], slopes))
            return
        per_quad = np.bincount(inverse, weights=w_quad[:, 0], minlength=n_patterns)
        for start in range(0, n_patterns, step):
            rows = first[start : start + step]
            bits = passes(plan, X, dtype, rows)
            out[plan.features] += pair_values(plan, bits, per_quad[start : start + step], block)


def _pairs(leaves: slice) -> int:
    return leaves.stop - leaves.start


def plan_pieces(items: np.ndarray, pair_nodes: np.ndarray, cap: int) -> np.ndarray:
    """``(nodes,)`` piece of each node's LCA items, at most ``cap`` estimated items a piece
    (``-1`` for pair nodes and nodes without items, such as leaves).

    First fit, nodes by decreasing items: pieces come out nearly full, so few plans are compiled.
    A node with more than ``cap`` items has a piece of its own
    (:func:`~shap_rsq.engine.routing.choose_pair_nodes` gives such nodes to the pairs).
    """
    piece = np.full(len(items), -1, dtype=np.int64)
    loads: list[float] = []
    for node in np.argsort(-items, kind="stable"):
        if pair_nodes[node] or items[node] <= 0:
            continue
        fit = next((k for k, load in enumerate(loads) if load + items[node] <= cap), len(loads))
        if fit == len(loads):
            loads.append(0.0)
        piece[node] = fit
        loads[fit] += float(items[node])
    return piece
