"""Time of one call: estimated before it starts (whether ``progress="auto"`` shows a bar, the
bar's label, and a warning before a long call), or projected from its first trees where the
estimate fell short or none exists (interaction shares), and the progress bar itself.

The estimate prices each unit's work by kind (:func:`unit_seconds`: LCA items x quadrature nodes
per distinct split pattern, leaf pairs x features, small trees' tables, splits to route each row
through, a fixed cost a tree) in CPU seconds of one core per unit of work, measured per kind
(``Tuning.estimate_*``, calibrated with ``benchmarks/estimate_accuracy.py --units``).  The patterns
of each tree are counted on a sample of rows and extrapolated (:func:`pattern_counts`): rows that
share patterns (discrete features) cost once.  It was within 2x of the CPU time taken on every
workload of the benchmarks, on Xeons and on an AMD EPYC (0.62-1.43 there on 25 workloads), with the
rates set between the two machines (docs/benchmarks.md, "Up-front estimate against measured time").
A third machine (a Xeon with a 480 MiB L3) ran some kinds of work faster than both.  There 8 of 53
workloads fell outside 2x, all of them over.  LightGBM's leaf-wise trees through the LCA kernel
(2.3-2.4) now have their items counted (``engine.routing``, ``Tuning.leaf_wise_share``; 1.0-1.1);
small trees are priced by what they run (:func:`_small_seconds`, their rates between the
machines), the call's checks by the values they read, and patterns counted on larger draws of many
rows; 0.60-1.91 on 61 workloads there.  Trees on every subset, 2-3x faster once their tables were
laid out subsets first, are priced by their own tables and blocks (:func:`_subset_seconds`):
0.57-1.70 on 64 workloads.

It is in CPU seconds, not calibrated by a timed probe of the machine: a probe of milliseconds
measures the core's speed, not the share of it other processes leave (on a machine at load 8 on 2
cores a 1.3 ms probe took 1.3 ms, with one outlier of 26 ms), and wall times under such load moved
2-5x from run to run while CPU times stayed within 25%.  What the load does to the wall time is
caught part-way instead: a call without a bar under ``progress="auto"`` opens one once the trees
done project past ``Tuning.progress_seconds`` (:class:`Deferred`), and a bar's own rate is measured.

Interaction shares have no estimate up front (their cost depends on the pass-bit codes the rows
take at each leaf pair).  They are timed instead: once a call has run for
``Tuning.projection_seconds``, the trees' leaf pairs give its projected total, and the same warning
follows if that passes ``Tuning.long_call_seconds``.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..exceptions import LongCallWarning
from ..kernels.enumeration.small_trees import HeapUnit, ObliviousUnit
from ..kernels.interactions.subset_values import SubsetUnit
from ..kernels.lca.hybrid import HybridUnit
from ..kernels.lca.unit import LcaUnit
from ..models.node_arrays import NodeArrays, goes_left
from ..tuning import DEFAULT_TUNING, Tuning
from .rows import user_stacklevel

__all__ = [
    "Deferred",
    "LongCallWarning",
    "Progress",
    "Projection",
    "announce",
    "as_progress",
    "call_seconds",
    "estimated_seconds",
    "named",
    "pattern_counts",
    "progress_bar",
    "progress_label",
    "trees_named",
    "unit_seconds",
    "wall_seconds",
    "warn_if_long",
    "warn_if_long_sample",
]


def estimated_seconds(
    units: Sequence,
    n_rows: int,
    tuning: Tuning = DEFAULT_TUNING,
    *,
    local: bool = False,
    patterns: np.ndarray | None = None,
    n_columns: int = 0,
) -> float:
    """Time of a call on one core, in seconds, from what the units count before they run.

    ``patterns`` holds the distinct split patterns of the rows in each tree of the forest
    (:func:`pattern_counts`); ``None`` takes every row as its own pattern, an upper bound (the LCA
    kernel and the pairs work per pattern, and rows that share them cost once).  The seconds per
    unit of each kernel's work are ``Tuning.estimate_*``; see :func:`unit_seconds`.  The call's own
    checks read each of the ``n_rows x n_columns`` input values (600 rows of 20,000 columns: 0.03 s
    of a 0.1 s call)."""
    checks = tuning.estimate_call_seconds + tuning.estimate_input_element_seconds * n_rows * n_columns
    return checks + float(sum(unit_seconds(unit, n_rows, local, patterns, tuning) for unit in units))


def unit_seconds(
    unit, n_rows: int, local: bool, patterns: np.ndarray | None, tuning: Tuning = DEFAULT_TUNING, counted: bool = False
) -> float:
    """One unit's estimated seconds on ``n_rows`` rows: routing and row weights for every row and
    split, then its kernel's work (``patterns``: see :func:`estimated_seconds`).  ``counted``
    prices an LCA plan's items by what the compiled plan counts where the unit has one (to weigh
    units against each other: ``engine.run``'s blocks), not by the estimate the rates were
    calibrated on (the up-front estimate).

    * small trees (``HeapUnit``, ``ObliviousUnit``): their tables (``unit.work``), and for per-row
      values a gather per row and tree;
    * the LCA kernel (``LcaUnit``): items x quadrature nodes (:func:`_item_work`) per pattern,
      and its compilation when the plan is not compiled yet; trees the conditioned recursion may
      take (leaf-wise, ``unit.junction``): per split, its NumPy calls and its arrays on each
      pattern (not by ``lca_work``, whose cube of the leaves' depths priced the deep late trees of
      a LightGBM booster at 2.5x its first ones, which take as long);
    * trees with pair nodes (``HybridUnit.dense``): the items of the other nodes per pattern (at
      a rate between the LCA rate and the dense one, by how rarely their cells are shared:
      :func:`_item_rate`) and pairs x features x quadrature nodes per pattern (``pair_work``);
    * trees on every subset (``SubsetUnit``): their table elements per pattern, each split's
      NumPy calls per block of patterns, and for per-row values each row's values of the tree's
      players (:func:`_subset_seconds`).
    """
    splits = _splits(unit)
    seconds = tuning.estimate_split_row_seconds * n_rows * splits
    if isinstance(unit, HeapUnit | ObliviousUnit):
        return seconds + _small_seconds(unit, n_rows, local, patterns, tuning)
    if not isinstance(unit, SubsetUnit | LcaUnit):
        return seconds
    # one tree; a tree of s splits has at most 2^s patterns
    found = min(float(n_rows if patterns is None else patterns[unit.trees[0]]), 2.0 ** min(splits, 1000))
    lca = tuning.estimate_lca_local_seconds if local else tuning.estimate_lca_seconds
    if isinstance(unit, SubsetUnit):
        return seconds + _subset_seconds(unit, n_rows, found, splits, local, tuning)
    if isinstance(unit, HybridUnit) and unit.dense:
        items = _item_work(unit)
        seconds += found * _item_rate(lca, unit.code_bits, found, tuning) * items
        seconds += found * tuning.estimate_pair_seconds * unit.pair_work
        if unit.code_bits > tuning.shared_code_bits:  # their items' tables, whatever the rows
            seconds += tuning.estimate_wide_item_seconds * items
    elif unit.junction is None:
        seconds += lca * found * _item_work(unit, counted)
    else:  # the recursion: each split's NumPy calls in both passes whatever the rows, and its arrays
        # on the patterns (per-row values run the reverse pass on the rows themselves)
        per_pattern = tuning.estimate_junction_local_seconds if local else tuning.estimate_junction_pattern_seconds
        seconds += splits * (tuning.estimate_junction_split_seconds + per_pattern * found)
    seconds += tuning.estimate_tree_seconds  # a tree's own passes of NumPy calls
    if unit._plan is None and unit._junction_plan is None:  # compiled on its first call
        seconds += tuning.estimate_compile_seconds * unit.work
    return seconds


def _small_seconds(
    unit: HeapUnit | ObliviousUnit, n_rows: int, local: bool, patterns: np.ndarray | None, tuning: Tuning
) -> float:
    """A unit of small trees past routing: each tree's predictions and row weights per row, the
    tables of a heap batch, and for per-row values a gather per row and player of each tree, with
    the values on every pattern of the cube tabulated on the first such call.  An ``observed``
    unit runs its root on the patterns that occur, per pattern, per tree and per unit (its passes'
    NumPy calls take each group of trees at once), and for per-row values on those patterns again."""
    trees = len(unit.trees)
    seconds = tuning.estimate_tree_row_seconds * n_rows * trees
    if isinstance(unit, HeapUnit):  # (a symmetric batch builds its tables with the unit)
        seconds += tuning.estimate_table_seconds * unit.work
    observed = isinstance(unit, HeapUnit) and unit.observed
    if observed:
        found = np.full(trees, float(n_rows)) if patterns is None else patterns[unit.trees]
        seconds += tuning.estimate_observed_seconds * float(np.minimum(found, unit.n_patterns).sum())
        seconds += tuning.estimate_observed_tree_seconds * trees + tuning.estimate_observed_unit_seconds
    if not local:
        return seconds
    seconds += tuning.estimate_small_local_seconds * n_rows * int(np.sum(unit.batch.features >= 0))
    if observed:
        return seconds + tuning.estimate_observed_local_seconds * trees
    if not unit.local_tabulated:  # (made once, kept by the unit)
        seconds += tuning.estimate_local_table_seconds * trees * unit.n_patterns
    return seconds


def _item_rate(lca: float, code_bits: int, found: float, tuning: Tuning) -> float:
    """Seconds per item x quadrature node and pattern of a deep tree's LCA items: an item is
    evaluated once per distinct cell of its view of the codes, so where a code of ``code_bits``
    bits takes more values than there are patterns (fully grown trees), cells are rarely shared
    and the items run at ``Tuning.estimate_dense_seconds``; on many more patterns than codes
    (depth-12 trees on 10,000 rows) they share cells as a shallow tree's do, at the LCA rate
    ``lca``; in between, in proportion (a tree with codes of 10 bits on 2,000 rows ran at 1.5x the
    LCA rate)."""
    unshared = min(1.0, 2.0 ** min(code_bits, 60) / max(found, 1.0))
    return lca + (tuning.estimate_dense_seconds - lca) * unshared


def _item_work(unit: LcaUnit, counted: bool = False) -> float:
    """A unit's LCA items x quadrature nodes: with ``counted``, its compiled plan's count where it
    has one (:func:`unit_seconds`); else counted node by node where routing counted them (trees
    past ``Tuning.pair_min_work``, without the pair nodes' items), else ``lca_work``'s estimate
    from the leaves' depths (within 2x on XGBoost of depth 4-8; 2.5x over on leaf-wise LightGBM
    trees, 1.35x under on depth-10 XGBoost: docs/benchmarks.md)."""
    if counted and unit.compiled_work is not None:
        return unit.compiled_work
    return unit.work if unit.item_work is None else unit.item_work


def _subset_seconds(unit: SubsetUnit, n_rows: int, found: float, splits: int, local: bool, tuning: Tuning) -> float:
    """A tree on every subset: its tables' elements on each of the ``found`` patterns, each split's
    NumPy calls on each block of patterns (``SubsetUnit.pattern_step``), once per tree, and for
    per-row values each row's values of the tree's players."""
    rate = tuning.estimate_subset_local_seconds if local else tuning.estimate_subset_seconds
    blocks = -(-found // unit.pattern_step())
    seconds = rate * found * unit.elements + tuning.estimate_subset_pass_seconds * blocks * splits
    if local:
        seconds += tuning.estimate_subset_row_seconds * n_rows * unit.n_players
    return seconds + tuning.estimate_subset_unit_seconds


def _splits(unit) -> int:
    """Split nodes of a unit's trees (its rows are routed through each)."""
    if isinstance(unit, LcaUnit | SubsetUnit):
        return int(np.sum(unit.tree.left >= 0))
    if isinstance(unit, ObliviousUnit):  # one split a level
        return len(unit.trees) * unit.batch.depth
    return len(unit.trees) * ((1 << unit.batch.depth) - 1)


def pattern_counts(nodes: NodeArrays, X: np.ndarray, dtype=None, tuning: Tuning = DEFAULT_TUNING) -> np.ndarray:
    """``(T,)`` estimated number of distinct split patterns of the rows of ``X`` in each tree.

    The patterns of rows drawn at random (a fixed seed: the estimate does not move from call to
    call) and of half of them give the growth ``d(m) ~ m^a`` of distinct patterns with rows,
    extrapolated to all rows (at most one a row): continuous features give every row its own
    pattern (``a = 1``), discrete ones saturate (``a`` near 0).  The draw is
    ``Tuning.estimate_sample_rows`` rows, or an ``estimate_extrapolation``-th of the rows up to
    ``estimate_max_sample_rows`` and to as many as one tree's decisions in a block of
    ``estimate_sample_elements`` allow: patterns that are many but not one a row (deep trees on hundreds
    of thousands of rows) take one a row on a small draw, and the growth seen there, extrapolated
    800x, put them at 2-3x their number.  Where the rows are few, a tree whose first
    ``Tuning.estimate_first_rows`` drawn rows already take a pattern each is taken at one pattern a
    row without drawing more (deep trees on continuous features: the whole sample cost 0.14-0.2 s
    on 300 trees of depth 8, 3% of their call).
    """
    n = X.shape[0]
    # a larger draw only while one tree's decisions on it fit a block (deep trees keep 512 rows)
    fits = tuning.estimate_sample_elements // max(1, nodes.left.shape[1])
    share = min(tuning.estimate_max_sample_rows, n // tuning.estimate_extrapolation, fits)
    m = min(n, max(tuning.estimate_sample_rows, share))
    rng = np.random.default_rng(0)
    sample = X[rng.choice(n, m, replace=False)] if m < n else X
    if dtype is not None:
        sample = sample.astype(dtype)
    salt = rng.integers(1, np.iinfo(np.int64).max, size=nodes.left.shape, dtype=np.int64).astype(np.uint64)
    decisions = _SampleDecisions(nodes, sample, salt, tuning.estimate_sample_elements)
    trees = np.arange(nodes.left.shape[0])
    counts = np.full(len(trees), float(n))
    first = tuning.estimate_first_rows
    # the trees a row apiece on the first rows stay at one pattern a row, where the rows are few
    if first < m < n <= m * tuning.estimate_extrapolation:
        trees = trees[decisions.distinct(trees, first)[0] < first]
    if len(trees) == 0:
        return counts
    full, half = decisions.distinct(trees, m)
    if m == n:  # every row counted: exact
        counts[trees] = full
    else:
        growth = np.clip(np.log2(full / half), 0.0, 1.0)
        counts[trees] = np.minimum(float(n), full * (n / m) ** growth)
    return counts


class _SampleDecisions:
    """Each tree's decisions on the first rows of a sample, hashed to one 64-bit key a row: the sum
    of random keys ``salt`` of the splits it goes left at."""

    def __init__(self, nodes: NodeArrays, sample: np.ndarray, salt: np.ndarray, block_elements: int):
        self.nodes, self.sample, self.salt, self.block_elements = nodes, sample, salt, block_elements
        self.internal = (nodes.left >= 0) & (nodes.depth >= 0)
        self.feature = np.maximum(nodes.feature, 0)
        self.default_left = nodes.default == nodes.left
        used = np.unique(self.feature[self.internal])
        self.has_nan = bool(np.isnan(sample[:, used]).any())

    def distinct(self, trees: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Distinct keys of ``trees`` on the first ``rows`` rows and on the first half of them."""
        sample = self.sample[:rows]
        full, half = np.zeros(len(trees)), np.zeros(len(trees))
        step = max(1, self.block_elements // max(1, rows * self.internal.shape[1]))
        for start in range(0, len(trees), step):
            block = trees[start : start + step]
            x = sample[:, self.feature[block]]
            left = goes_left(x, self.nodes.threshold[block], self.default_left[block], self.has_nan)
            left &= self.internal[block]
            keys = np.where(left, self.salt[block], np.uint64(0)).sum(axis=2, dtype=np.uint64)  # (rows, trees)
            full[start : start + len(block)] = _distinct(keys)
            half[start : start + len(block)] = _distinct(keys[: max(1, rows // 2)])
        return full, half


def _distinct(keys: np.ndarray) -> np.ndarray:
    """``(T,)`` distinct values of each column of ``keys``."""
    ordered = np.sort(keys, axis=0)
    return 1.0 + np.sum(ordered[1:] != ordered[:-1], axis=0)


def _duration(seconds: float) -> str:
    """``45 s``, ``12.5 min`` or ``3.1 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def trees_named(n_trees: int) -> str:
    """``this tree`` or ``these 1,000 trees``."""
    return "this tree" if n_trees == 1 else f"these {n_trees:,} trees"


@dataclass(frozen=True)
class Advice:
    """What a long-call warning tells its reader to change, in the words of the object they called:
    ``bar`` the option that shows a progress bar instead of the warning (empty when they have
    none), ``jobs`` the one that uses every core, ``sample`` how to estimate the shares from a
    sample of rows instead (empty when they cannot)."""

    bar: str
    jobs: str
    sample: str


EXPLAINER_ADVICE = Advice(
    bar="RSquaredExplainer(progress=True), or --progress on the command line,",
    jobs="n_jobs=-1",
    sample="shap_rsq.estimate_rsq estimates the shares, with standard errors, from a sample of rows (n_sample: "
    "fewer rows, less time)",
)


@dataclass(frozen=True)
class Progress:
    """Whether a call shows a progress bar: always (``True``), never (``False``), or when it is
    estimated to take ``Tuning.progress_seconds`` or more (``"auto"``); ``name`` says whose bar it
    is (one output of several), ``part`` which of the call's ``parts`` outputs it is: the call warns
    once, before its first output, of the time of all of them.  ``advice``: the options its
    warning names, those of whoever made the explainer (:class:`Advice`)."""

    show: bool | str = "auto"
    name: str | None = None
    part: int = 0
    parts: int = 1
    score: str = "R²"  # what the shares are of, for the warning: R², Brier skill score, D² (...)
    advice: Advice = EXPLAINER_ADVICE


def as_progress(progress: bool | str | Progress) -> Progress:
    """``progress`` as the explainer holds it (``True``, ``False`` or ``"auto"``; any other text is
    the name of an output's bar, which is shown) as a :class:`Progress`."""
    if isinstance(progress, Progress):
        return progress
    if isinstance(progress, str):
        return Progress("auto") if progress == "auto" else Progress(True, progress)
    return Progress(bool(progress))


def named(progress: bool | str | Progress, name: str, part: int = 0, parts: int = 1) -> Progress:
    """``progress`` for the bar of one output (``name``, the ``part``-th of ``parts``) of several."""
    return replace(as_progress(progress), name=name, part=part, parts=parts)


def call_seconds(
    units: Sequence,
    nodes: NodeArrays,
    X: np.ndarray,
    dtype,
    local: bool,
    tuning: Tuning,
    refine_at: float | None = None,
) -> float:
    """A call's estimated seconds on one core: the bound that takes every row as its own pattern,
    refined by each tree's counted patterns (:func:`pattern_counts`) only when the bound reaches
    ``refine_at`` (``Tuning.progress_seconds`` by default: short calls pay nothing for it)."""
    n_rows, n_columns = X.shape
    bound = estimated_seconds(units, n_rows, tuning, local=local, n_columns=n_columns)
    if bound < (tuning.progress_seconds if refine_at is None else refine_at):
        return bound
    patterns = pattern_counts(nodes, X, dtype, tuning)
    return estimated_seconds(units, n_rows, tuning, local=local, patterns=patterns, n_columns=n_columns)


def wall_seconds(seconds: float, units: Sequence, n_rows: int, n_jobs: int | None, tuning: Tuning) -> tuple[float, int]:
    """The seconds a call of ``seconds`` on one core takes on the worker processes it will use, and
    how many: blocks of trees go to workers only past ``Tuning.parallel_work`` (as
    ``engine.run`` decides), each worker then taking its share plus ``estimate_jobs_overhead``."""
    from joblib import effective_n_jobs

    if n_rows * sum(unit.parallel_work for unit in units) < tuning.parallel_work:
        return seconds, 1
    jobs = max(1, min(effective_n_jobs(n_jobs), len(units)))
    return (seconds if jobs == 1 else seconds / jobs * (1.0 + tuning.estimate_jobs_overhead)), jobs


@dataclass(frozen=True)
class Deferred:
    """A bar that opens part-way (``progress="auto"`` below the threshold): once the call has run
    ``Tuning.late_bar_seconds`` and the trees done project its total past ``progress_seconds``,
    the up-front estimate having fallen short."""

    label: str
    tuning: Tuning = DEFAULT_TUNING


def announce(
    units: Sequence,
    nodes: NodeArrays,
    X: np.ndarray,
    dtype,
    *,
    local: bool,
    progress: bool | str | Progress,
    n_jobs: int | None = 1,
    warn_long: bool = True,
    tuning: Tuning = DEFAULT_TUNING,
) -> str | Deferred | bool:
    """What a call shows before it starts, from its estimated time: the bar's label (a text), a
    :class:`Deferred` bar, or ``False`` for none; and, first, :class:`LongCallWarning` for a call
    estimated at ``Tuning.long_call_seconds`` or more on one core unless the caller asked for the
    bar (``progress=True``) or the caller warns itself (``warn_long=False``).

    ``progress="auto"`` shows the bar from the start when the call is estimated at
    ``Tuning.progress_seconds`` or more on the workers it uses (``n_jobs``), else defers it."""
    progress = as_progress(progress)
    warns = warn_long and progress.show is not True and progress.part == 0
    if progress.show is False and not warns:
        return False
    # without a bar only the warning reads the estimate: the patterns are counted for it alone
    refine_at = tuning.long_call_seconds / progress.parts if progress.show is False else tuning.progress_seconds
    seconds = call_seconds(units, nodes, X, dtype, local, tuning, refine_at)
    if warns:
        # every output plays trees like this one's: the warning is of the whole call
        bar = progress.show == "auto"
        parts, score = progress.parts, progress.score
        _warn(_long_call_text(seconds * parts, nodes, X.shape[0], local, bar, tuning, parts, score, progress.advice))
    if progress.show is False:
        return False
    wall, jobs = wall_seconds(seconds, units, X.shape[0], n_jobs, tuning)
    label = _label(wall, jobs, progress.name)
    if progress.show is True or wall >= tuning.progress_seconds:
        return label
    return Deferred(label, tuning)


def _label(seconds: float, jobs: int, name: str | None) -> str:
    """The bar's label: the trees, and the estimated time when it is worth saying."""
    label = "trees"
    if seconds >= 10:
        label += f" (estimated {_duration(seconds)} on {'one core' if jobs == 1 else f'{jobs} workers'})"
    return label if name is None else f"{name}: {label}"


def progress_label(units: Sequence, n_rows: int, tuning: Tuning = DEFAULT_TUNING) -> str:
    """The progress bar's label on one core, with every row its own pattern (see :func:`announce`)."""
    return _label(estimated_seconds(units, n_rows, tuning), 1, None)


def long_call_message(
    units: Sequence, nodes: NodeArrays, n_rows: int, local: bool, tuning: Tuning = DEFAULT_TUNING
) -> str | None:
    """What to tell the caller before a call estimated at ``tuning.long_call_seconds`` or more
    (``None`` below), with every row its own pattern: the estimate, the trees that make it, and
    what shortens it."""
    return _long_call_text(estimated_seconds(units, n_rows, tuning, local=local), nodes, n_rows, local, False, tuning)


def _long_call_text(
    seconds: float,
    nodes: NodeArrays,
    n_rows: int,
    local: bool,
    bar: bool,
    tuning: Tuning,
    parts: int = 1,
    score: str = "R²",
    advice: Advice = EXPLAINER_ADVICE,
) -> str | None:
    """:func:`long_call_message` of ``seconds``; ``bar``: a progress bar follows (``progress="auto"``);
    ``parts``: the outputs, each of trees like ``nodes``, that ``seconds`` adds up; ``score``: what
    the shares are of; ``advice``: the options to name."""
    if seconds < tuning.long_call_seconds:
        return None
    if bar:
        shown = "A progress bar follows" + (f"; {advice.bar} shows it without this warning." if advice.bar else ".")
    else:
        shown = f"{advice.bar} shows a progress bar." if advice.bar else ""
    shorter = [
        f"{advice.jobs} uses every core",
        "smaller trees (max_depth, min_samples_leaf, max_leaf_nodes) cost far less",
    ]
    if advice.sample:
        shorter.append(advice.sample)
    leaves = nodes.tree_leaves
    what = f"per-row {score} shares" if local else f"{score} shares"
    return (
        f"The exact {what} of {trees_named(len(leaves))}{f' for each of {parts} outputs' if parts > 1 else ''} "
        f"(up to {int(leaves.max()):,} leaves and depth "
        f"{int(nodes.tree_depth.max())}) on {n_rows:,} rows are estimated to take about {_duration(seconds)} on "
        "one core (within about 2x): their cost grows with leaves, depth and the features a path uses more than "
        f"once.  {shown + '  ' if shown else ''}To take less time: {'; '.join(shorter)}."
    )


def long_sample_message(
    units: Sequence, n_rows: int, tuning: Tuning = DEFAULT_TUNING, n_outputs: int = 1, score: str = "R²"
) -> str | None:
    """What to tell the caller of ``estimate_rsq`` before its ``n_rows`` drawn rows' exact per-row
    shares, estimated at ``tuning.long_call_seconds`` or more (``None`` below); ``units`` are one
    output's, and a classifier's ``n_outputs`` classes each play trees like them; ``score``: what
    the shares are of."""
    seconds = n_outputs * estimated_seconds(units, n_rows, tuning, local=True)
    if seconds < tuning.long_call_seconds:
        return None
    return (
        f"estimate_rsq(n_sample={n_rows}): the exact per-row {score} shares of the {n_rows:,} rows drawn are estimated "
        f"to take about {_duration(seconds)} on one core (within about 2x), plus one TreeSHAP pass over every "
        "row.  Fewer rows (n_sample) take less time and give larger standard errors; n_jobs=-1 uses every core; "
        "RSquaredExplainer(progress=True) shows progress bars without this warning."
    )


def warn_if_long(units: Sequence, nodes: NodeArrays, n_rows: int, local: bool, tuning: Tuning = DEFAULT_TUNING) -> None:
    """Warn (:class:`LongCallWarning`) before a call estimated at ``tuning.long_call_seconds`` or more."""
    _warn(long_call_message(units, nodes, n_rows, local, tuning))


def warn_if_long_sample(
    units: Sequence, n_rows: int, tuning: Tuning = DEFAULT_TUNING, n_outputs: int = 1, score: str = "R²"
) -> None:
    """Warn (:class:`LongCallWarning`) before ``estimate_rsq``'s sample of ``n_rows`` rows when it is
    estimated to take minutes, with the advice that fits a sample (the explainer's own warning
    would suggest ``estimate_rsq`` itself); ``n_outputs`` and ``score`` as in :func:`long_sample_message`."""
    _warn(long_sample_message(units, n_rows, tuning, n_outputs, score))


def _warn(message: str | None) -> None:
    if message is not None:
        warnings.warn(message, LongCallWarning, stacklevel=user_stacklevel())


class Projection:
    """Warn once, part-way through a call of many trees not shown with ``progress=True``, when
    the time its first trees took projects past ``tuning.long_call_seconds`` (trees weighed by
    ``weights``)."""

    def __init__(self, weights: np.ndarray, what: str, advice: str, tuning: Tuning = DEFAULT_TUNING):
        self.total = float(np.sum(weights))
        self.done = 0.0
        self.what, self.advice, self.tuning = what, advice, tuning
        self.start = time.perf_counter()
        self.warned = False

    def add(self, weight: float) -> None:
        """One more tree of ``weight`` is done: warn now if the projection passes the threshold."""
        self.done += weight
        elapsed = time.perf_counter() - self.start
        if self.warned or elapsed < self.tuning.projection_seconds or self.done <= 0:
            return
        projected = elapsed * self.total / self.done
        if projected >= self.tuning.long_call_seconds:
            self.warned = True
            warnings.warn(
                f"The {self.what} are projected to take about {_duration(projected)} in all (from the "
                f"{_duration(elapsed)} their first {self.done / self.total:.0%} took).  {self.advice}",
                LongCallWarning,
                stacklevel=user_stacklevel(),
            )


class _LateBar:
    """A :class:`Deferred` bar: counts the trees done, and opens a tqdm bar (from the trees done
    so far) once the call has run ``late_bar_seconds`` and projects past ``progress_seconds``."""

    def __init__(self, total: int, deferred: Deferred):
        self.total, self.done, self.deferred = total, 0, deferred
        self.start = time.perf_counter()
        self.bar = None

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        elapsed = time.perf_counter() - self.start
        tuning = self.deferred.tuning
        if elapsed < tuning.late_bar_seconds or not 0 < self.done < self.total:
            return
        if elapsed * self.total / self.done >= tuning.progress_seconds:
            self.bar = _tqdm(self.total, self.deferred.label, initial=self.done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _tqdm(total: int, label: str, initial: int = 0):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, unit="tree", initial=initial)


@contextlib.contextmanager
def progress_bar(total: int, label: str | bool | Deferred) -> Iterator[Any]:
    """A tqdm bar over ``total`` trees (``None`` without ``label``; a bar that may open part-way for
    a :class:`Deferred` one), closed however the run ends: a bar left open by an error was drawn
    again under the next call's and at exit."""
    if not label:
        yield None
        return
    bar = _LateBar(total, label) if isinstance(label, Deferred) else _tqdm(total, label)
    try:
        yield bar
    finally:
        bar.close()
