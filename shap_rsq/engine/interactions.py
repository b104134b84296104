"""Shapley interaction indices of the summed tree games, tree by tree.

The games are those of :mod:`~shap_rsq.engine.run` (tree ``t`` on a row with weight ``w`` and
residual ``r``: ``w_quad m_S^2 + w_lin m_S`` with ``w_quad = -w`` and ``w_lin = 2 w (r + c_t)``),
and the interaction index is linear in the game, so the forest's indices are the sum of its
trees'.  A tree only couples the players it splits on: tree ``t`` adds a ``K_t x K_t`` block,
and the global result is kept sparse (``p = 20,000`` players never form a ``p x p`` array).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..kernels.interactions.indices import InteractionPlan, compile_interactions, pattern_interactions
from ..kernels.interactions.subsets import (
    SubsetPlan,
    compile_subsets,
    subset_interactions,
    subset_plan_bytes,
    subset_work,
)
from ..kernels.row_patterns import routed_patterns
from ..models.forest import Forest
from ..tuning import DEFAULT_TUNING, Tuning
from .allocator import keep_temporaries_on_the_heap
from .budget import check_interaction_plans, check_interaction_rows, routing_rows
from .estimates import Deferred, Projection, as_progress, progress_bar, trees_named
from .losses import TreeLosses
from .routing import takes_subsets
from .worker_plans import plan_bytes

__all__ = ["InteractionPlans", "check_interactions_fit", "interaction_indices"]


class InteractionPlans:
    """Each tree's interaction plan, compiled on first use (``None`` for single-leaf trees).

    Plans are kept for the next call while they take at most ``limit`` bytes in all (the
    explainer's ``Tuning.kept_plan_bytes`` share); past it a tree's plan is compiled on each use:
    a depth-12 XGBoost tree's takes about 6 MB and 20 ms to compile, so a booster of hundreds of
    them would otherwise hold gigabytes between calls.
    """

    def __init__(
        self, forest: Forest, limit: int | None = None, tuning: Tuning = DEFAULT_TUNING, kernel: str = "auto"
    ) -> None:
        self.forest = forest
        self.limit = limit
        self.tuning = tuning
        self.kernel = kernel
        self.kept_bytes = 0
        self._plans: dict[tuple[int, bool], InteractionPlan | SubsetPlan | None] = {}
        self._subsets: dict[tuple[int, bool], bool] = {}
        self._work: dict[int, float] = {}

    def __getitem__(self, t: int) -> InteractionPlan | SubsetPlan | None:
        return self.get(t)

    def get(self, t: int, local: bool = False) -> InteractionPlan | SubsetPlan | None:
        """Tree ``t``'s plan for global indices, or for per-row indices (``local``), which may take
        the other kernel (:func:`~shap_rsq.engine.routing.takes_subsets`)."""
        if self.forest.trees[t].left[0] < 0:
            return None
        key = (t, self.subsets(t, local))
        if key in self._plans:
            return self._plans[key]
        plan = compile_subsets(self.forest.trees[t]) if key[1] else compile_interactions(self.forest.trees[t])
        size = plan_bytes(plan)
        if self.limit is None or self.kept_bytes + size <= self.limit:
            self._plans[key] = plan
            self.kept_bytes += size
        return plan

    def subsets(self, t: int, local: bool = False) -> bool:
        """Whether tree ``t`` (with a split) takes its game on every subset, decided once."""
        if (t, local) not in self._subsets:
            self._subsets[t, local] = takes_subsets(self.forest.trees[t], self.tuning, self.kernel, local)
        return self._subsets[t, local]

    def work(self, t: int) -> float:
        """Tree ``t``'s table elements a row on subsets (:func:`~shap_rsq.kernels.interactions.subsets.subset_work`)."""
        if t not in self._work:
            self._work[t] = subset_work(self.forest.trees[t])
        return self._work[t]

    def all_subsets(self, local: bool = False) -> bool:
        """Whether every tree with a split takes its game on every subset (whose kernel gives the
        Shapley values beside the indices)."""
        trees = self.forest.trees
        return all(trees[t].left[0] < 0 or self.subsets(t, local) for t in range(self.forest.n_trees))


def check_interactions_fit(plans: InteractionPlans, n_rows: int, local: bool) -> None:
    """Refuse, before any work, interaction shares whose largest tree's plan, or (``local``) whose
    per-row ``(n, P, P)`` array, cannot fit the memory budget.

    Parameters
    ----------
    plans : InteractionPlans
        The game's forest (players as grouped), the tuning that holds the memory budget, and
        which trees take their game on every subset (decided once, without compiling).
    n_rows : int
        Rows of the call.
    local : bool
        Whether every row's indices are kept.

    Raises
    ------
    MemoryBudgetError
        With the estimate and what to change.
    """
    forest, tuning = plans.forest, plans.tuning
    check_interaction_plans(forest.nodes, forest.players, tuning, _subset_bytes(plans, local))
    if local:
        widest = int(forest.nodes.split_players(forest.players).max(initial=0))  # its tables are (patterns, K, K)
        check_interaction_rows(n_rows, forest.n_players, tuning.memory_budget, widest)


def _subset_bytes(plans: InteractionPlans, local: bool) -> np.ndarray:
    """``(T,)`` the plan bytes of each tree that takes its game on every subset, -1 for the others."""
    forest = plans.forest
    players = forest.nodes.split_players(forest.players)
    need = np.full(forest.n_trees, -1.0)
    for t in np.flatnonzero((players > 0) & (players <= plans.tuning.interaction_subset_players)):
        if plans.subsets(int(t), local):
            need[t] = subset_plan_bytes(plans.work(int(t)), int(players[t]))
    return need


def interaction_indices(
    plans: InteractionPlans,
    X: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    *,
    local: bool = False,
    progress: bool | str = False,
    tuning: Tuning = DEFAULT_TUNING,
    loss: TreeLosses | None = None,
) -> tuple[sp.csr_matrix | np.ndarray, np.ndarray | None, np.ndarray]:
    """Interaction indices ``I_jk`` of ``sum_t v_t`` (not yet divided by SST), the Shapley values
    of the same games when every tree gave them, and ``f(x)``.

    Returns the upper triangle (``j < k``) summed over rows as a sparse ``(P, P)`` matrix, or with
    ``local`` every row's symmetric ``(n, P, P)`` indices (zero diagonal), refused with
    :class:`~shap_rsq.MemoryBudgetError` when that array cannot fit the budget.  The Shapley
    values, ``(P,)`` or ``(n, P)``, are those of ``rsq`` (or per-row shares); trees taken leaf
    pair by leaf pair do not give them, and then they are ``None``.
    ``progress`` draws a bar over trees (``True``), none (``False``), or one that opens part-way
    (``"auto"``: the trees done project the call past ``Tuning.progress_seconds``; interaction
    shares have no estimate up front).  Unless ``progress=True``, a call projected to run for
    minutes warns (:class:`~shap_rsq.engine.estimates.Projection`).  ``loss``: the second-order games of a
    booster's loss (one forest: a softmax's offsets are per tree of it), as in
    :func:`~shap_rsq.engine.run.decompose`.
    """
    forest = plans.forest
    X = routing_rows(forest, X, tuning)
    n, n_players = X.shape[0], forest.n_players
    check_interactions_fit(plans, n, local)
    keep_temporaries_on_the_heap(tuning.heap_threshold_bytes)  # else the row blocks fault in every block
    f = np.full(n, forest.base_offset + float(forest.nodes.tree_mean.sum()))
    out = np.zeros((n, n_players, n_players)) if local else _SparseSum(n_players, tuning.interaction_merge_entries)
    # the Shapley values come with the indices only when every tree takes the subsets
    shares = np.zeros((n, n_players) if local else n_players) if plans.all_subsets(local) else None
    show = as_progress(progress).show
    label = "trees (interaction shares)"
    with progress_bar(forest.n_trees, label if show is True else Deferred(label, tuning) if show else False) as bar:
        pairs = _leaf_pairs(forest)
        projection = None if show is True else _projection(forest, pairs, local, tuning)
        for t, mean in enumerate(forest.nodes.tree_mean):
            weights = _tree_weights(loss, t, mean, y, w, f)
            plan = plans.get(t, local)
            f = _add_tree(out, shares, plan, X, weights, f, mean, local, tuning, forest.input_dtype)
            if bar is not None:
                bar.update()
            if projection is not None:
                projection.add(pairs[t])
    return (out if local else out.total()), shares, f


def _leaf_pairs(forest: Forest) -> np.ndarray:
    """``(T,)`` each tree's leaf pairs, which its interaction work grows with."""
    leaves = forest.nodes.tree_leaves
    return leaves * (leaves + 1) / 2.0


def _projection(forest: Forest, pairs: np.ndarray, local: bool, tuning: Tuning) -> Projection:
    what = "per-row interaction shares" if local else "interaction shares"
    advice = (
        "RSquaredExplainer(progress=True) shows a progress bar.  Their cost grows with the square of the "
        "leaves of each tree: smaller trees (max_depth, min_samples_leaf, max_leaf_nodes), or fewer rows, "
        "take far less; rsq() and per-row shares cost much less than interactions on deep trees."
    )
    return Projection(pairs, f"{what} of {trees_named(forest.n_trees)}", advice, tuning)


def _tree_weights(loss: TreeLosses | None, t: int, mean: float, y, w, f) -> tuple[np.ndarray, np.ndarray]:
    """Tree ``t``'s row weights ``(w_quad, w_lin)`` from the margin ``f`` the trees before it left:
    squared error's (residuals ``y - f``), or the second-order games of ``loss``."""
    if loss is None:
        return -w, 2.0 * w * (y - f + mean)
    w_quad, w_lin = loss.row_weights(f[:, None], np.array([mean]), y, w, slice(None), np.array([t]))
    return w_quad[:, 0], w_lin[:, 0]


def _add_tree(out, shares, plan, X, weights, f: np.ndarray, mean: float, local: bool, tuning, dtype):
    """Add one tree's indices into ``out`` and, when it is taken on subsets and ``shares`` is not
    ``None``, its Shapley values into ``shares`` (rows' ``weights``, ``(w_quad, w_lin)``); returns
    ``f`` with the tree added."""
    if plan is None:
        return f
    first, inverse, prediction = routed_patterns(plan.pairs, X, dtype, tuning.routing_elements_within, plan.pairs.value)
    w_quad, w_lin = weights
    f += prediction - mean
    ids = plan.features
    n_k = len(ids)
    subsets = isinstance(plan, SubsetPlan)
    # the distinct rows are read in place: a copy of them is n x p per tree on continuous data
    if local:
        if subsets:
            on_m2, on_m, phi_m2, phi_m = subset_interactions(plan, X, None, None, tuning, dtype, first)
            if shares is not None:
                shares[:, ids] += w_quad[:, None] * phi_m2[inverse] + w_lin[:, None] * phi_m[inverse]
        else:
            on_m2, on_m = pattern_interactions(plan, X, None, None, tuning, dtype, first)
        rows_step = max(1, tuning.block_elements_within // (n_k * n_k))
        _add_rows(out, ids, on_m2, on_m, inverse, w_quad, w_lin, rows_step)
    else:
        per_quad = np.bincount(inverse, weights=w_quad, minlength=len(first))
        per_lin = np.bincount(inverse, weights=w_lin, minlength=len(first))
        if subsets:
            table, phi = subset_interactions(plan, X, per_quad, per_lin, tuning, dtype, first)
            if shares is not None:
                shares[ids] += phi
        else:
            table = pattern_interactions(plan, X, per_quad, per_lin, tuning, dtype, first)
        out.add(ids, table[:n_k, :n_k])
    return f


def _add_rows(out, ids, on_m2, on_m, inverse, w_quad, w_lin, step: int) -> None:
    """Add one tree's per-row indices into ``out (n, P, P)``, a block of ``step`` rows at a time,
    so that its temporaries stay at ``block_elements`` whatever the rows."""
    n_k = len(ids)
    for start in range(0, len(inverse), step):
        rows = slice(start, start + step)
        upper = on_m2[inverse[rows], :n_k, :n_k]
        upper *= w_quad[rows, None, None]
        linear = on_m[inverse[rows], :n_k, :n_k]
        linear *= w_lin[rows, None, None]
        upper += linear
        out[rows, ids[:, None], ids[None, :]] += upper + np.swapaxes(upper, 1, 2)


class _SparseSum:
    """A ``(P, P)`` sum of small dense blocks at scattered indices, merged in batches."""

    def __init__(self, size: int, merge_entries: int) -> None:
        self.size = size
        self.merge_entries = merge_entries  # pending triplets merged into the sum past this
        self._sum = sp.csr_matrix((size, size))
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._pending = 0

    def add(self, ids: np.ndarray, block: np.ndarray) -> None:
        j, k = np.nonzero(block)
        self._parts.append((ids[j], ids[k], block[j, k]))
        self._pending += len(j)
        if self._pending > self.merge_entries:
            self._merge()

    def _merge(self) -> None:
        if self._parts:
            rows, cols, values = (np.concatenate(part) for part in zip(*self._parts, strict=True))
            self._sum = self._sum + sp.csr_matrix((values, (rows, cols)), shape=(self.size, self.size))
        self._parts, self._pending = [], 0

    def total(self) -> sp.csr_matrix:
        self._merge()
        return self._sum
