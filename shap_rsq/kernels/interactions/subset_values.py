"""The R² game's Shapley values of a tree on few players, from its game on every subset.

The pass of :mod:`.subsets` gives each split pattern's ``m_S - c`` on all ``2^K`` subsets of the
tree's ``K`` players; the game ``w_quad m_S^2 + w_lin m_S`` then has its Shapley values as one
fixed weighted sum, ``(2^K, K)`` weights (:func:`~.subsets.shapley_weights`).  The cost per
pattern is the pass's ``sum_u 2^{s_u}`` table elements plus, for per-row values, ``2^K x K``
products, whatever the leaves: a fully grown tree on 10 features costs at most ``nodes x 2^10``
where the LCA kernel's items grow with its leaves times their depth squared.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import numpy as np

from ...models.forest import TreeTable
from ...tuning import DEFAULT_TUNING, Tuning
from ..batching.sparse import add_pattern_values
from ..row_patterns import routed_patterns
from .subsets import SubsetPlan, compile_subsets, shapley_weights, subset_sizes, subset_tables

__all__ = ["SubsetUnit", "subset_unit_bytes"]


@dataclass
class SubsetUnit:
    """One tree whose games are taken on every subset of its players (a
    :class:`~shap_rsq.kernels.protocol.TreeKernel`).

    Rows are routed to their distinct split patterns first (all rows at once, in blocks), and
    the tables are built on blocks of patterns whose live tables stay in cache, within a quarter
    of the budget (:meth:`pattern_step`).  ``work`` is the table elements per pattern times
    ``Tuning.subset_element_cost`` (in the LCA kernel's units, to weigh blocks of trees).
    """

    trees: np.ndarray
    means: np.ndarray
    tree: TreeTable
    tuning: Tuning = DEFAULT_TUNING
    elements: float = field(default=0.0)  # sum_u 2^{s_u} (subset_work), set when built
    live: int = field(default=0)  # the most of them a pattern holds at once (subset_sizes), set when built
    _plan: SubsetPlan | None = field(default=None, repr=False)
    # tells a worker's kept plans apart (engine.worker_plans), as LcaUnit's and HeapUnit's do
    token: str = field(default_factory=lambda: uuid.uuid4().hex, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.live:
            self.elements, self.live = subset_sizes(self.tree)

    @property
    def plan(self) -> SubsetPlan:
        if self._plan is None:
            self._plan = compile_subsets(self.tree)
        return self._plan

    @property
    def n_players(self) -> int:
        return int(np.unique(self.tree.player[self.tree.left >= 0]).size)

    @property
    def work(self) -> float:
        return self.elements * self.tuning.subset_element_cost

    @property
    def parallel_work(self) -> float:
        return self.work

    @property
    def compiled_work(self) -> float | None:
        return None  # the estimate counts the tables exactly

    def chunk_rows(self) -> int | None:
        return None  # all rows at once: patterns are blocked inside

    def pattern_step(self) -> int:
        """Patterns per table pass: their live tables within ``Tuning.subset_block_elements`` (in
        cache), and all their tables within a quarter of the budget."""
        per_pattern = subset_pattern_bytes(self.elements, self.n_players, self.tuning)
        in_cache = self.tuning.subset_block_elements // self.live
        return max(1, min(in_cache, int(self.tuning.memory_budget // (4 * per_pattern))))

    def prepare(self, X: np.ndarray, dtype) -> tuple[tuple, np.ndarray]:
        pairs = self.plan.pairs
        first, inverse, prediction = routed_patterns(pairs, X, dtype, self.tuning.routing_elements_within, pairs.value)
        return (X, dtype, first, inverse), prediction[:, None]

    def contribute(self, state, w_quad: np.ndarray, w_lin: np.ndarray, out: np.ndarray, local: bool) -> None:
        X, dtype, first, inverse = state
        plan, weights = self.plan, shapley_weights(self.plan.n_players)
        c = plan.mean
        if local:
            g_quad = np.empty((len(first), plan.n_players))
            g_lin = np.empty_like(g_quad)
            for block, centred in self._tables(X, dtype, first):
                # the games of m^2 = (m - c)^2 + 2 c (m - c) + c^2 and of m = (m - c) + c
                g_lin[block] = centred @ weights
                g_quad[block] = np.square(centred) @ weights + 2.0 * c * g_lin[block]
            add_pattern_values(out, plan.features, inverse, (w_quad[:, 0], g_quad), (w_lin[:, 0], g_lin))
            return
        n_patterns = len(first)
        per_quad = np.bincount(inverse, weights=w_quad[:, 0], minlength=n_patterns)
        per_lin = np.bincount(inverse, weights=w_lin[:, 0], minlength=n_patterns)
        game = np.zeros(1 << plan.n_players)
        for block, centred in self._tables(X, dtype, first):
            # w_quad m^2 + w_lin m = w_quad (m - c)^2 + (w_lin + 2 c w_quad) (m - c) + constant
            game += per_quad[block] @ np.square(centred) + (per_lin[block] + 2.0 * c * per_quad[block]) @ centred
        out[plan.features] += game @ weights

    def finish(self, weights, out: np.ndarray) -> None:
        raise NotImplementedError("SubsetUnit adds its values in contribute")

    def _tables(self, X, dtype, first):
        """Each block of patterns with its ``(patterns, 2^K)`` centred tables (a view of the subsets-first
        ``subset_tables``)."""
        step = self.pattern_step()
        for start in range(0, len(first), step):
            block = slice(start, min(len(first), start + step))
            yield block, subset_tables(self.plan, X, dtype, first[block]).T


def subset_pattern_bytes(elements: float, n_players: int, tuning: Tuning = DEFAULT_TUNING) -> float:
    """Peak bytes a pattern adds to a table pass: ``Tuning.subset_table_bytes`` per table element
    (the tables alive at once, at most all of them, and their gathers), and the root's table with
    its square and reordering (``3 x 2^K`` floats)."""
    return elements * tuning.subset_table_bytes + 24.0 * 2.0**n_players


def subset_unit_bytes(unit: SubsetUnit, n_rows: int, local: bool, tuning: Tuning = DEFAULT_TUNING) -> int:
    """Peak bytes of a :class:`SubsetUnit`: its plan (four ``int64`` maps of half a table per split,
    the ``(2^K, K)`` Shapley weights), the blocks of patterns (a quarter of the budget at most),
    and for per-row values two ``(patterns, K)`` tables."""
    k = unit.n_players
    plan = 16.0 * unit.elements + 8.0 * 2.0**k * k
    blocks = min(tuning.memory_budget // 4, n_rows * subset_pattern_bytes(unit.elements, k, tuning))
    rows = 16.0 * n_rows * k if local else 0.0
    return int(plan + blocks + rows)
