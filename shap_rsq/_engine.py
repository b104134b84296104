"""Run the sequential tree games of a forest over rows: residuals, row patterns, chunks, jobs.

Tree ``t`` is centred on its own mean ``c_t``.  With ``f0 = E f = base + sum_t c_t``
and ``f_t = f_{t-1} + m_t - c_t``, the game of tree ``t`` on a row with weight
``w`` and residual ``r = y - f_{t-1}`` is
``v_t(S) = -w [(m_S - c_t)^2 - 2 r (m_S - c_t)]``, whose Shapley values are
``w_quad * phi(m^2) + w_lin * phi(m)`` with ``w_quad = -w`` and
``w_lin = 2 w (r + c_t)``.  Summed over trees they telescope to
``SSE(E f) - SSE(f)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed

from . import _kernel
from ._plan import TreePlan, compile_tree
from ._trees import Forest, TreeTable

__all__ = ["Decomposition", "PlanCache", "decompose", "tree_shap_values"]

# Rows handled in one kernel call are capped so that (rows x items) index arrays stay small.
_CHUNK_ELEMENTS = 1 << 22


class PlanCache:
    """Compiled plans of a forest, built on first use and kept for later calls."""

    def __init__(self, forest: Forest):
        self.forest = forest
        self._plans: list[TreePlan | None] | None = None

    def plans(self) -> list[TreePlan | None]:
        if self._plans is None:
            self._plans = [compile_tree(tree) for tree in self.forest.trees]
        return self._plans


@dataclass(frozen=True)
class Decomposition:
    """Shapley values of the summed tree games (not yet divided by SST).

    Attributes
    ----------
    values : ndarray
        ``(p,)`` summed over rows, or ``(n, p)`` per row when computed locally.
    prediction : ndarray
        ``f(x)`` of every row, reproduced from the trees.
    mean_prediction : float
        ``E f``: the base offset plus each tree's cover-weighted mean.
    """

    values: np.ndarray
    prediction: np.ndarray
    mean_prediction: float


def tree_mean(tree: TreeTable, plan: TreePlan | None) -> float:
    return plan.expected_value if plan is not None else float(tree.value[0])


def decompose(
    forest: Forest,
    plans: Sequence[TreePlan | None],
    X: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    *,
    local: bool = False,
    n_jobs: int | None = None,
    progress: bool = False,
) -> Decomposition:
    """Shapley values of ``sum_t v_t`` for rows ``X`` (float, NaN for missing)."""
    means = np.array([tree_mean(tree, plan) for tree, plan in zip(forest.trees, plans, strict=True)])
    mean_prediction = forest.base_offset + float(means.sum())
    blocks = _tree_blocks(plans, n_jobs)
    starts = _block_start_predictions(forest, plans, means, X, mean_prediction, blocks)
    tasks = [
        delayed(_run_block)([plans[t] for t in block], means[block], X, y, w, start, forest, local, progress and i == 0)
        for i, (block, start) in enumerate(zip(blocks, starts, strict=True))
    ]
    if len(tasks) == 1:
        results = [tasks[0][0](*tasks[0][1], **tasks[0][2])]
    else:
        results = Parallel(n_jobs=n_jobs)(tasks)
    values = sum(r[0] for r in results)
    prediction = results[-1][1]
    return Decomposition(values, prediction, mean_prediction)


def _tree_blocks(plans: Sequence[TreePlan | None], n_jobs: int | None) -> list[np.ndarray]:
    from joblib import effective_n_jobs

    n_blocks = 1 if n_jobs in (None, 1) else min(len(plans), max(1, effective_n_jobs(n_jobs)))
    work = np.array([0 if plan is None else len(plan.item_leaf) for plan in plans], dtype=float)
    if n_blocks <= 1 or work.sum() == 0:
        return [np.arange(len(plans))]
    # contiguous blocks of about equal kernel work
    edges = np.searchsorted(np.cumsum(work), work.sum() * np.arange(1, n_blocks) / n_blocks)
    return [b for b in np.split(np.arange(len(plans)), edges) if len(b)]


def _block_start_predictions(forest, plans, means, X, mean_prediction, blocks) -> list[np.ndarray]:
    """``f_{t-1}`` at the first tree of each block."""
    f = np.full(X.shape[0], mean_prediction)
    starts = []
    for block in blocks:
        starts.append(f.copy())
        if block is not blocks[-1]:
            for t in block:
                if plans[t] is not None:
                    f += forest.trees[t].value[forest.trees[t].leaf_of(X, forest.input_dtype)] - means[t]
    return starts


def _run_block(plans, means, X, y, w, f, forest, local, progress):
    f = f.copy()
    out = np.zeros((X.shape[0], forest.n_features) if local else forest.n_features)
    iterator = zip(plans, means, strict=True)
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, total=len(plans), desc="trees", unit="tree")
    for plan, mean in iterator:
        if plan is None:
            continue
        step = max(256, _CHUNK_ELEMENTS // max(len(plan.item_leaf), plan.path_split.size))
        for start in range(0, X.shape[0], step):
            rows = slice(start, min(X.shape[0], start + step))
            prediction = _tree_rows(
                plan, mean, X[rows], y[rows], w[rows], f[rows], out, rows, local, forest.input_dtype
            )
            f[rows] += prediction - mean
    return out, f


def _tree_rows(plan, mean, X, y, w, f, out, rows, local, dtype) -> np.ndarray:
    """Add one tree's Shapley values for a chunk of rows into ``out``; return its predictions."""
    left = _kernel.split_decisions(plan, X, dtype)
    first, inverse = _distinct_rows(left)
    codes = _kernel.leaf_codes(plan, left[first])
    leaf = np.argmax(codes == plan.full_code, axis=1)
    prediction = plan.leaf_value[leaf][inverse]
    w_quad = -w
    w_lin = 2.0 * w * (y - f + mean)
    if local:
        g_quad, g_lin = _kernel.pattern_gradients(plan, codes)
        out[rows, plan.features] += w_quad[:, None] * g_quad[inverse] + w_lin[:, None] * g_lin[inverse]
    else:
        n_distinct = len(first)
        per_quad = np.bincount(inverse, weights=w_quad, minlength=n_distinct)
        per_lin = np.bincount(inverse, weights=w_lin, minlength=n_distinct)
        out[plan.features] += _kernel.weighted_gradient(plan, codes, per_quad, per_lin)
    return prediction


def _distinct_rows(left: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First occurrence and inverse map of each distinct row of split decisions."""
    decisions = left[:, :-1]
    if decisions.shape[1] <= 62:
        key = decisions @ (np.int64(1) << np.arange(decisions.shape[1], dtype=np.int64))
    else:
        packed = np.packbits(decisions, axis=1)
        key = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def tree_shap_values(plan: TreePlan | None, X: np.ndarray, n_features: int, dtype=None) -> np.ndarray:
    """Path-dependent SHAP values ``(n, p)`` of one tree's prediction: the linear term of its game."""
    out = np.zeros((X.shape[0], n_features))
    if plan is None:
        return out
    left = _kernel.split_decisions(plan, X, dtype)
    first, inverse = _distinct_rows(left)
    _, g_lin = _kernel.pattern_gradients(plan, _kernel.leaf_codes(plan, left[first]))
    out[:, plan.features] = g_lin[inverse]
    return out
