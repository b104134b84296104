"""Run the sequential tree games of a forest over rows: residuals, chunks, jobs.

Tree ``t`` is centred on its own mean ``c_t``.  With ``f0 = E f = base + sum_t c_t``
and ``f_t = f_{t-1} + m_t - c_t``, the game of tree ``t`` on a row with weight
``w`` and residual ``r = y - f_{t-1}`` is
``v_t(S) = -w [(m_S - c_t)^2 - 2 r (m_S - c_t)]``, whose Shapley values are
``w_quad * phi(m^2) + w_lin * phi(m)`` with ``w_quad = -w`` and
``w_lin = 2 w (r + c_t)``.  Summed over trees they telescope to
``SSE(E f) - SSE(f)``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from joblib.externals.loky.process_executor import TerminatedWorkerError
from joblib.parallel import get_active_backend
from threadpoolctl import threadpool_limits

from ..kernels.lca import global_values as lca
from ..kernels.lca.plan import TreePlan, compile_tree
from ..kernels.lca.row_values import pattern_gradients
from ..kernels.lca.unit import adopt_plans, compiled_plans, plans_present
from ..kernels.row_patterns import distinct_rows, split_decisions
from ..models.forest import Forest
from ..tuning import DEFAULT_TUNING, Tuning
from .allocator import keep_temporaries_on_the_heap, return_freed_memory
from .budget import MemoryBudgetError, fit_jobs, out_of_memory, routing_rows, rows_per_block
from .estimates import Progress, announce, estimated_seconds, progress_bar, unit_seconds
from .interactions import InteractionPlans
from .losses import TreeLosses
from .routing import Kernel, build_units, pair_cost
from .worker_plans import held_bytes, keep_within, remember, restore, shipped

__all__ = ["Decomposition", "UnitCache", "check_row_totals", "decompose", "tree_shap_function", "tree_shap_values"]


_COMPILED = ("_units", "_routed", "_lca_units", "_interaction_plans")  # what UnitCache.release drops


class UnitCache:
    """The forest's units of work (compiled plans, enumeration batches), built on first use.

    ``kernel`` and ``tuning`` go to :func:`~shap_rsq.engine.routing.build_units`: ``"auto"``
    and the default tuning unless a test or benchmark forces a path.
    """

    def __init__(self, forest: Forest, kernel: Kernel = "auto", tuning: Tuning = DEFAULT_TUNING):
        self.forest = forest
        self.kernel = kernel
        self.tuning = tuning
        self.release()

    def __getstate__(self) -> dict:
        # compiled plans are a cache (hundreds of MB on deep forests, against a model of a few):
        # a pickled or copied explainer compiles them again on first use
        return {name: value for name, value in self.__dict__.items() if name not in _COMPILED}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.release()

    def release(self) -> None:
        """Drop the compiled units (they are compiled again on next use): a model of several outputs
        keeps one output's plans at a time, not one set per class within the memory budget each."""
        self._units: dict[bool, list] = {}
        self._routed: dict[bool, float] = {}  # the pair cost each list of units was routed at
        self._lca_units: dict = {}  # shared by both lists of units: a tree routed alike is compiled once
        self._interaction_plans: InteractionPlans | None = None

    def units(self, local: bool = False, n_rows: int | None = None) -> list:
        """Units for global values, or for per-row values (``local``), which some trees need
        another kernel for, routed for calls of about ``n_rows`` rows (``engine.routing.pair_cost``,
        at the nearest power of 2; ``None``: the units routed last, or at ``Tuning.pair_cost``).

        One list of each kind is kept: a call whose rows ask for another pair cost routes the
        trees again (trees routed alike keep their units and plans) and drops the units no list
        holds any longer, so the compiled plans never pile up one set per size of call.
        """
        if n_rows is None and local in self._units:
            return self._units[local]
        rows = None if n_rows is None else 1 << max(0, round(math.log2(max(1, n_rows))))
        cost = pair_cost(self.tuning, local, rows)
        if self._routed.get(local) != cost:
            self._units[local] = build_units(self.forest, self.kernel, local, self._lca_units, self.tuning, rows)
            self._routed[local] = cost
            kept = {id(unit) for units in self._units.values() for unit in units}
            self._lca_units = {key: unit for key, unit in self._lca_units.items() if id(unit) in kept}
        return self._units[local]

    def interaction_plans(self) -> InteractionPlans:
        """Each tree's interaction plan (:mod:`~shap_rsq.engine.interactions`), compiled on first use."""
        if self._interaction_plans is None:
            limit = self.tuning.kept_plan_limit
            self._interaction_plans = InteractionPlans(self.forest, limit, self.tuning, self.kernel)
        return self._interaction_plans


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
    game_totals : ndarray or None
        Second-order games only: each row's sum of its tree games with every player known, which
        the row's shares add up to (``None`` for squared error, whose total is the loss change).
    """

    values: np.ndarray
    prediction: np.ndarray
    mean_prediction: float
    game_totals: np.ndarray | None = None


def check_row_totals(values, base, target, prediction, weights, mean: float, sst: float) -> None:
    """Each row's shares plus its base value must add up to its part of R² (efficiency, per row)."""
    expected = weights * ((target - mean) ** 2 - (target - prediction) ** 2) / sst
    gap = np.max(np.abs(values.sum(axis=1) + base - expected), initial=0.0)
    # the expected parts themselves lose digits when y sits far from 0 (y - mean is rounded at the
    # scale of y): a target around 1e12 with a spread of 1 leaves about 1e-4 of each
    residual = max(np.max(np.abs(target - mean), initial=0.0), np.max(np.abs(target - prediction), initial=0.0))
    rounding = 8 * np.finfo(float).eps * np.max(np.abs(target), initial=0.0) * residual * np.max(weights) / sst
    if gap > 1e-6 * max(1.0, float(np.abs(expected).sum())) + rounding:
        raise AssertionError(
            f"The per-row shares do not add up to each row's part of R² (largest gap {gap:.3g}).  Please report "
            "this with the model; pass check_additivity=False to get the values anyway."
        )


def decompose(
    forest: Forest,
    units: Sequence,
    X: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    *,
    local: bool = False,
    n_jobs: int | None = None,
    progress: bool | str | Progress = False,
    tuning: Tuning = DEFAULT_TUNING,
    warn_long: bool = True,
    loss: TreeLosses | None = None,
) -> Decomposition:
    """Shapley values of ``sum_t v_t`` for rows ``X`` (float, NaN for missing).

    ``progress`` draws a progress bar: ``True``, ``False``, ``"auto"`` (when the call is estimated
    at ``Tuning.progress_seconds`` or more), or a :class:`~shap_rsq.engine.estimates.Progress`
    that also names the output the bar is of; any other text names it and shows it.  Unless the
    bar was asked for, a call estimated to run for minutes warns first (``warn_long``; blocks of
    a larger call do not): :func:`~shap_rsq.engine.estimates.announce`.

    ``tuning`` decides when blocks of trees go to worker processes (never what they compute) and
    holds the memory budget (:mod:`~shap_rsq.engine.budget`: fewer workers, or a refusal).

    ``loss`` plays each tree's second-order game of a booster's loss
    (:mod:`~shap_rsq.engine.losses`); ``None`` plays the squared-error games, whose sum is
    exact (``y`` is then the target the residuals are taken from).
    """
    X = routing_rows(forest, X, tuning)
    n = X.shape[0]
    step = n  # rows a block: all of them unless the trees' kernels fit only on fewer at a time
    try:
        n_jobs, split = fit_jobs(units, n, forest.n_features, forest.n_trees, local, n_jobs, tuning)
    except MemoryBudgetError:
        step = rows_per_block(units, n, forest.n_features, local, tuning)
        if step == 0:  # refused before any work: not even one row fits beside the rows' arrays
            raise
        n_jobs, split = fit_jobs(units, step, forest.n_features, forest.n_trees, local, n_jobs, tuning)
    label = announce(
        units,
        forest.nodes,
        X,
        forest.input_dtype,
        local=local,
        progress=progress,
        n_jobs=n_jobs,
        warn_long=warn_long,
        tuning=tuning,
    )
    try:
        if step >= n:
            return _decompose(forest, units, X, y, w, local, n_jobs, split, label, tuning, loss)
        return _decompose_by_rows(forest, units, X, y, w, local, n_jobs, split, label, tuning, loss, step)
    except MemoryError as error:  # an estimate fell short: say so and what to change, never crash
        raise MemoryBudgetError(out_of_memory(X.shape[0], forest.n_features, local, tuning)) from error


def _decompose_by_rows(forest, units, X, y, w, local, n_jobs, split, label, tuning, loss, step) -> Decomposition:
    """:func:`_decompose` on blocks of ``step`` rows, one after another: every row's contributions
    are its own, so the blocks' global values add up and their per-row values, predictions and
    totals follow one another (summed in another order than on all rows at once: equal to rounding)."""
    n = X.shape[0]
    parts = []
    with progress_bar(forest.n_trees * -(-n // step), label) as bar:
        for start in range(0, n, step):
            rows = slice(start, min(n, start + step))
            block_loss = None if loss is None else loss.of_rows(rows)
            parts.append(
                _decompose(forest, units, X[rows], y[rows], w[rows], local, n_jobs, split, False, tuning, block_loss)
            )
            if bar is not None:
                bar.update(forest.n_trees)
    values = np.concatenate([p.values for p in parts]) if local else sum(p.values for p in parts)
    totals = None if loss is None else np.concatenate([p.game_totals for p in parts])
    prediction = np.concatenate([p.prediction for p in parts])
    return Decomposition(values, prediction, parts[0].mean_prediction, totals)


def _decompose(forest, units, X, y, w, local, n_jobs, split, label, tuning, loss) -> Decomposition:
    keep_temporaries_on_the_heap(tuning.heap_threshold_bytes)  # else the row blocks fault in every block
    mean_prediction = forest.base_offset + float(forest.nodes.tree_mean.sum())
    blocks = _unit_blocks(units, n_jobs, local, X.shape[0], tuning, forest.n_players)
    starts = _block_start_predictions(forest, units, X, mean_prediction, blocks)
    inner = label if len(blocks) == 1 else False  # one block: its own bar; several: one bar over blocks
    # the plans the explainer keeps for its next call, within a share of the budget
    room = max(0, tuning.kept_plan_limit - held_bytes(units)) // len(blocks)
    if len(blocks) == 1:
        results = [_run_block(units, X, y, w, starts[0], forest, local, inner, room=room, loss=loss)]
    else:
        # units go to worker processes without their plans: a worker keeps the plans it compiled
        # (engine.worker_plans) and sends back those this process lacks; threads share them
        threads = _on_threads()
        parts = [[units[u] for u in block] for block in blocks]
        workers = [None if threads else _for_worker(part, tuning) for part in parts]
        tasks = [
            delayed(_run_block)(shipped(part, split, threads), X, y, w, start, forest, local, inner, worker, room, loss)
            for part, start, worker in zip(parts, starts, workers, strict=True)
        ]
        # the costliest blocks first, so that no worker starts a long block as the others finish;
        # results are summed in the order of the trees whatever the order they ran in
        weight = [sum(_unit_weight(units[u], X.shape[0], local, tuning) for u in block) for block in blocks]
        order = np.argsort(-np.asarray(weight), kind="stable")
        # threads each calling a multi-threaded BLAS would ask for more cores than there are
        with threadpool_limits(limits=1, user_api="blas") if threads else nullcontext():
            ran = _run_parallel([tasks[i] for i in order], [blocks[i] for i in order], units, n_jobs, label)
        results = [ran[i] for i in np.argsort(order)]
    values = sum(r[0] for r in results) if local else _tree_order_sum([r[0] for r in results], forest.n_players)
    totals = None if loss is None else sum(r[3] for r in results)
    return Decomposition(values, results[-1][1], mean_prediction, totals)


def _tree_order_sum(blocks: list[list], n_players: int) -> np.ndarray:
    """Global values: each unit's own sum, ``(columns, values)``, added up unit after unit in the
    order of the trees, so that they do not depend on ``n_jobs`` nor on where the blocks were cut
    (which moves from a first call to the next, as the compiled plans balance them anew)."""
    total = np.zeros(n_players)
    for block in blocks:
        for columns, values in block:
            total[columns] += values
    return total


def _run_parallel(tasks: list, blocks: list[np.ndarray], units: Sequence, n_jobs: int | None, progress: bool):
    """Blocks in worker processes (a configured joblib backend, such as dask, still wins).

    Processes, not threads, unless the caller configured threads: on trees of depth 6-8 the
    kernel's NumPy and SciPy passes are short enough that two threads wait for each other's GIL
    (per-row shares of depth-8 XGBoost on 1,000 rows: 7.1 s on two threads, 5.5 s on two
    processes, 9.3 s on one); on deep trees they release it nearly all the time (depth-10
    forests on 2,000 rows: 24.7 s and 23.7 s, 42 s on one).  Plans that a worker compiled come
    back with its results, so that a reused explainer compiles each tree once.
    """
    results = []
    with progress_bar(sum(len(units[u].trees) for block in blocks for u in block), progress) as bar:
        try:
            for block, result in zip(blocks, _parallel(n_jobs)(tasks), strict=True):
                adopt_plans([units[u] for u in block], result[2])
                results.append(result)
                if bar is not None:
                    bar.update(sum(len(units[u].trees) for u in block))
        except TerminatedWorkerError as error:  # loky's words name no cause and no remedy
            raise RuntimeError(
                "A worker process was killed while it computed a block of trees (most often by the "
                "operating system, out of memory): lower memory_budget or n_jobs, or run with n_jobs=1."
            ) from error
    return results


def _on_threads() -> bool:
    """Whether the blocks will run on threads of this process: a joblib backend configured by the
    caller (``joblib.parallel_config(backend="threading")``) wins over the worker processes."""
    backend, _ = get_active_backend(prefer="processes")
    return bool(getattr(backend, "uses_threads", False))


def _parallel(n_jobs: int | None) -> Parallel:
    """joblib's Parallel returning results as they come, or all at once on a configured backend
    that cannot (``multiprocessing``: "does not support return_as=generator")."""
    try:
        return Parallel(n_jobs=n_jobs, prefer="processes", return_as="generator")
    except ValueError as error:
        if "return_as" not in str(error):
            raise
        return Parallel(n_jobs=n_jobs, prefer="processes")


def _unit_blocks(
    units: Sequence,
    n_jobs: int | None,
    local: bool,
    n_rows: int,
    tuning: Tuning = DEFAULT_TUNING,
    n_features: int = 0,
) -> list[np.ndarray]:
    """Contiguous blocks of units of about equal estimated work.

    Workers take a few blocks each, so that a job that drew the cheaper trees takes another
    block (with one block a job, per-row shares of depth-8 XGBoost and forests took 10-18%
    longer on two workers).  A block of per-row shares returns an ``(n, p)`` array that this
    process may hold until the blocks before it are in (results are summed in order, so that
    they do not depend on which worker finished first): local values take one block a job
    when those arrays would pass an eighth of the memory budget.  Forests with little kernel
    work run one block in this process: shallow and symmetric trees take milliseconds, less
    than handing rows to another process.  Units weigh their estimated seconds
    (:func:`_unit_weight`), corrected by what their compiled plans count once they have them: the
    estimates are off by up to 3x from tree to tree, and four blocks of equal estimates of
    depth-8 XGBoost took 0.49-0.79 s (0.62-0.68 s by the counts).

    Global values of a long call are cut finer, down to one tree a block, while each block is
    estimated at ``tuning.block_seconds`` or more: their results are ``(p,)``, and workers that
    draw blocks as they free up balance out estimates that are off by 3x (four blocks of depth-12
    XGBoost on 10,000 rows gave one worker 57% of the estimated work).
    """
    parallel_work = n_rows * sum(unit.parallel_work for unit in units)
    jobs = max(1, effective_n_jobs(n_jobs)) if parallel_work >= tuning.parallel_work else 1
    per_job = tuning.blocks_per_job
    if local and 8 * n_rows * n_features * per_job * jobs > tuning.memory_budget // 8:
        per_job = 1
    n_blocks = min(len(units), per_job * jobs if jobs > 1 else 1)
    if jobs > 1 and not local:
        finer = int(estimated_seconds(units, n_rows, tuning) / tuning.block_seconds)
        n_blocks = max(n_blocks, min(len(units), finer))
    if n_blocks <= 1:
        return [np.arange(len(units))]
    if n_blocks == len(units):  # equal cuts of the work would merge the cheap trees around a costly one
        return list(np.arange(len(units))[:, None])
    work = np.array([_unit_weight(unit, n_rows, local, tuning) for unit in units])
    edges = np.searchsorted(np.cumsum(work), work.sum() * np.arange(1, n_blocks) / n_blocks)
    return [b for b in np.split(np.arange(len(units)), edges) if len(b)]


def _unit_weight(unit, n_rows: int, local: bool, tuning: Tuning) -> float:
    """A unit's estimated seconds on ``n_rows`` rows (:func:`~shap_rsq.engine.estimates.unit_seconds`,
    which prices each kernel's work by its own measure), its LCA items as its compiled plan counts
    them once it has one.

    Not ``work`` itself: that is the LCA kernel's measure, which priced the last trees of a
    LightGBM booster (deep, leaf-wise) at 2.5x its first ones where the recursion takes as long
    on either, so that one of six blocks held the first 124 of 300 trees, ran last and took 2.2 s
    of a 4.1 s call on two workers.
    """
    return unit_seconds(unit, n_rows, local, None, tuning, counted=True)


def _block_start_predictions(forest, units, X, mean_prediction, blocks) -> list[np.ndarray]:
    """``f`` before the first tree of each block.

    The trees before the last block are routed together straight from the node arrays, so
    that each block's units are compiled and routed by its own worker, not here in turn.
    """
    f = np.full(X.shape[0], mean_prediction)
    starts = [f.copy()]
    if len(blocks) == 1:
        return starts
    before = [units[u] for block in blocks[:-1] for u in block]
    prediction = forest.nodes.leaf_values(X, np.concatenate([unit.trees for unit in before]), forest.input_dtype)
    first = 0
    for block in blocks[:-1]:
        # the same sums, in the same order, as the units add to ``f`` in _play_unit: the values
        # of every block then equal those of one block to the last bit
        for unit in (units[u] for u in block):
            f += _unit_shift(prediction[:, first : first + len(unit.trees)], unit.means)[:, -1]
            first += len(unit.trees)
        starts.append(f.copy())
    return starts


def _unit_shift(prediction: np.ndarray, means: np.ndarray) -> np.ndarray:
    """``(n, T)`` the shift of ``f`` by each of a unit's trees and those before it in the unit."""
    return np.cumsum(prediction - means, axis=1)


def _row_chunks(unit, n_rows: int):
    """Slices of rows in the chunk size the unit asks for (all rows when it chunks inside)."""
    step = unit.chunk_rows() or n_rows
    for start in range(0, n_rows, step):
        yield slice(start, min(n_rows, start + step))


def _for_worker(units: Sequence, tuning: Tuning) -> dict:
    """What a block's worker needs to know: which plans this process holds already (a worker
    sends back only the others), how many bytes of plans a worker keeps between calls
    (``Tuning.worker_plan_bytes``, at most an eighth of the budget), and this process's id (a
    thread of it keeps none: they would outlive the explainer here), and the mmap threshold its
    allocator is given (``Tuning.heap_threshold_bytes``)."""
    return {
        "present": plans_present(units),
        "keep": tuning.worker_plan_limit,
        "caller": os.getpid(),
        "heap": tuning.heap_threshold_bytes,
    }


def _run_block(
    units, X, y, w, f, forest, local, progress, worker: dict | None = None, room: int | None = None, loss=None
):
    """Run a block of units over all rows; ``worker`` (:func:`_for_worker`) when the units were
    shipped without their plans.  The units keep at most ``room`` bytes of the plans they compile
    (``Tuning.kept_plan_bytes``; all of them when ``None``).  Returns the values (per row
    ``(n, p)``; global: each unit's ``(columns, values)``, for :func:`_tree_order_sum`), the
    predictions after the block's trees, and the plans the units compiled."""
    f = f.copy()
    keep = worker is not None and worker["caller"] != os.getpid()
    if keep:
        keep_temporaries_on_the_heap(worker["heap"])  # a worker process's own allocator
        restore(units)
    present = plans_present(units) if worker is None else worker["present"]
    out = np.zeros((X.shape[0], forest.n_players) if local else forest.n_players)
    totals = None if loss is None else np.zeros(X.shape[0])  # each row's games with all players known
    sums = []  # global values: each unit's own, in the order of the units (see _tree_order_sum)
    # the units' trees: a tree that is one leaf adds a constant and reaches no unit
    with progress_bar(sum(len(unit.trees) for unit in units), progress) as bar:
        for index, unit in enumerate(units):
            _play_unit(unit, X, y, w, f, out, forest, local, loss, totals)
            if not local:
                columns = np.flatnonzero(out)
                sums.append((columns, out[columns]))
                out[columns] = 0.0
            if room is not None:
                room -= keep_within(unit, present[index], room)
            if bar is not None:
                bar.update(len(unit.trees))
    if keep:
        remember(units, worker["keep"])
        return_freed_memory()
    return out if local else sums, f, compiled_plans(units, present), totals


def _play_unit(unit, X, y, w, f, out, forest, local: bool, loss: TreeLosses | None = None, totals=None) -> None:
    """Add one unit's games on all rows (chunk by chunk) to ``out``, and its trees' predictions to
    ``f`` (the residual the next unit's games start from); ``loss``: the second-order games, whose
    values with every player known are added to ``totals``."""
    pending = None  # row weights a unit sums over chunks before its games are evaluated
    for rows in _row_chunks(unit, X.shape[0]):
        state, prediction = unit.prepare(X[rows], forest.input_dtype)
        after = _unit_shift(prediction, unit.means)
        w_quad, w_lin = _row_weights(unit, prediction, after, y, w, f, rows, loss)
        if totals is not None:  # v_t(N) - v_t(empty): the games of m and m^2 at all players and at none
            totals[rows] += np.sum(w_quad * (prediction**2 - unit.means**2) + w_lin * (prediction - unit.means), axis=1)
        part = unit.contribute(state, w_quad, w_lin, out[rows] if local else out, local)
        if part is not None:
            pending = part if pending is None else tuple(a + b for a, b in zip(pending, part, strict=True))
        f[rows] += after[:, -1]
    if pending is not None:
        unit.finish(pending, out)


def _row_weights(unit, prediction, after, y, w, f, rows, loss: TreeLosses | None):
    """``(w_quad, w_lin)`` of the unit's games on ``rows``: squared error's, or ``loss``'s expansion."""
    if loss is not None:
        before = after - prediction  # each tree's margin before it: the shift before it, less c_t
        before += unit.means
        before += f[rows, None]
        return loss.row_weights(before, unit.means, y[rows], w[rows], rows, unit.trees)
    # w_lin = 2 w (r + c_t) with r = y - f - (shift before t): the tree's own shift plus c_t is its prediction
    w_lin = prediction - after
    w_lin += (y[rows] - f[rows])[:, None]
    w_lin *= 2.0 * w[rows, None]
    return np.broadcast_to(-w[rows, None], w_lin.shape), w_lin


def tree_shap_values(plan: TreePlan | None, X: np.ndarray, n_features: int, dtype=None) -> np.ndarray:
    """Path-dependent SHAP values ``(n, p)`` of one tree's prediction: the linear term of its game."""
    out = np.zeros((X.shape[0], n_features))
    if plan is None:
        return out
    left = split_decisions(plan, X, dtype)
    first, inverse = distinct_rows(left[:, :-1])
    _, g_lin = pattern_gradients(plan, lca.leaf_codes(plan, left[first]))
    out[:, plan.features] = g_lin[inverse]
    return out


def tree_shap_function(tree, n_players: int, dtype=None):
    """``rows -> (n, n_players)`` path-dependent SHAP values of one tree's prediction, its plan
    compiled once: a feature whose splits read several columns (routing columns of categorical
    splits) is one player, where shap's TreeSHAP would play each column apart."""
    plan = compile_tree(tree) if tree.left[0] >= 0 else None
    return lambda rows: tree_shap_values(plan, rows, n_players, dtype)
