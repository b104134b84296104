"""The one place that chooses a kernel for each tree, from the tree's shape and the :class:`Tuning`.

Trees are grouped, in order, into units of work (:class:`~shap_rsq.kernels.protocol.TreeKernel`):

========================  ==============================================================
kernel                    trees (``kernel="auto"``)
========================  ==============================================================
subset enumeration        depth <= ``heap_depth``, batched on the cube of split patterns
                          (``kernels.enumeration.small_trees.HeapUnit``), and symmetric trees whose
                          ``depth + players <= 16`` (``ObliviousUnit``)
two-particle recursion    depth ``observed_depth`` with at most ``max_repeated`` repeated
                          features (``HeapUnit``, method "recursion"); their per-row values
                          chain the root to tables of its two sides (``kernels.recursion.pattern_rows``)
conditioned recursion     leaf-wise trees with at most ``junction_repeated`` repeated features
                          try it, global values only, when cheaper on the rows at hand
                          (``kernels.lca.unit.LcaUnit``, ``junction="cheaper"``)
LCA kernel                every other tree (``LcaUnit``); trees at least ``pair_min_depth``
                          deep whose nodes' pairs are cheaper one by one than expanded
                          (``kernels.lca.pairs.choose_pair_nodes``, where per-row values count
                          pairs cheaper by ``local_pair_discount``) keep the LCA items of the
                          other nodes, and trees whose items need more than one plan
                          compile them in pieces (``kernels.lca.hybrid.HybridUnit``)
========================  ==============================================================

``kernel=`` forces one path (tests, benchmarks): ``"lca"`` sends every tree through the LCA
kernel; ``"enumerate"`` / ``"recursion"`` send every eligible tree through subset enumeration /
the two-particle recursion; ``"junction"`` every tree through the conditioned recursion for
global values (the LCA kernel for per-row values); ``"pairs"`` sends the pairs of every node of
every LCA tree through the per-pair kernel.  Every choice gives the same values.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..kernels.enumeration import split_patterns
from ..kernels.enumeration.small_trees import HeapUnit, ObliviousUnit
from ..kernels.lca.hybrid import HybridUnit, plan_pieces
from ..kernels.lca.pairs import choose_pair_nodes, node_costs
from ..kernels.lca.unit import LcaUnit, lca_work
from ..models.forest import Forest
from ..models.node_arrays import NodeArrays
from ..tuning import DEFAULT_TUNING, Tuning
from .budget import unit_bytes

__all__ = ["KERNELS", "Kernel", "build_units"]

Kernel = Literal["auto", "lca", "enumerate", "recursion", "junction", "pairs"]
KERNELS: tuple[str, ...] = ("auto", "lca", "enumerate", "recursion", "junction", "pairs")


def build_units(
    forest: Forest,
    kernel: Kernel = "auto",
    local: bool = False,
    lca_units: dict | None = None,
    tuning: Tuning = DEFAULT_TUNING,
) -> list:
    """Group a forest's trees into units, in order; single-leaf trees only shift the mean.

    ``kernel`` chooses or forces the kernels (see the module's table); ``local`` units give
    per-row values.  ``lca_units`` ((tree index, routing) to unit) shares LCA units, and with them
    their compiled plans, between calls, and between global and per-row values where a tree is
    routed alike for both (per-row values give more nodes to the pairs: ``local_pair_discount``).
    """
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}; got {kernel!r}.")
    nodes = forest.nodes
    # grouped features share a coin across columns: only the LCA and pair kernels read coins
    # (players) apart from the columns they route rows by, so every tree goes to them
    grouped = forest.players is not None
    shape_kernel = "lca" if grouped else kernel  # what the small-tree kernels and the recursion see
    deep_kernel = "lca" if grouped and kernel not in ("auto", "pairs") else kernel  # LCA, pairs or both
    kinds = _kinds(nodes, shape_kernel, local, tuning)
    depths, means = nodes.tree_depth, nodes.tree_mean
    work = lca_work(nodes)
    junction = _junction_modes(nodes, shape_kernel, tuning)
    lca_units = {} if lca_units is None else lca_units
    units: list = []
    start = 0
    while start < len(kinds):
        kind = kinds[start]
        if kind == "constant":
            start += 1
            continue
        if kind == "lca":
            args = (forest.trees[start], np.array([start]), means[[start]], work[start], junction[start])
            units.append(_lca_unit(*args, deep_kernel, tuning, local, lca_units))
            start += 1
            continue
        stop = start + 1
        # the pattern weights of a heap batch span its whole cube: 2^15 per depth-4 tree
        observed_cube = (1 << tuning.observed_depth) - 1
        size = tuning.batch_trees if kind != "observed" else max(1, tuning.batch_patterns >> observed_cube)
        while (
            stop < len(kinds)
            and stop - start < size
            and kinds[stop] == kind
            and (kind == "heap" or depths[stop] == depths[start])
        ):
            stop += 1
        unit = _batch_unit(kind, nodes, np.arange(start, stop), kernel, tuning)
        # a batch's tables grow with its trees: under a small budget it takes fewer of them (what
        # grows with the rows is a chunk of them, sized to the budget: Tuning.chunk_elements_within)
        while stop - start > 1 and unit_bytes(unit, 1, local, tuning) > tuning.memory_budget // 4:
            stop = start + (stop - start) // 2
            unit = _batch_unit(kind, nodes, np.arange(start, stop), kernel, tuning)
        units.append(unit)
        start = stop
    return units


def _batch_unit(kind: str, nodes: NodeArrays, index: np.ndarray, kernel: str, tuning: Tuning):
    """A batch of consecutive shallow (``"heap"``), depth-4 (``"observed"``) or symmetric trees."""
    batch = split_patterns.heap_layout(nodes, index, int(nodes.tree_depth[index].max()), oblivious=kind == "oblivious")
    means = nodes.tree_mean[index]
    if kind == "oblivious":
        return ObliviousUnit(index, means, batch, tuning)
    method = kernel if kernel in ("enumerate", "recursion") else "auto"
    if kind == "observed":
        method = "recursion"  # the subsets of a 2^15 cube are out of reach
    return HeapUnit(index, means, batch, method, tuning)


def _lca_unit(tree, index, mean, work, junction, kernel: str, tuning: Tuning, local: bool, shared: dict):
    """An LCA unit, or a hybrid one when some nodes' pairs are cheaper one by one or the tree's
    items need more than one plan (deep trees).

    ``shared`` maps (tree, routing) to units already built, for global or per-row values: a tree
    routed the same way for both is compiled once.
    """
    small = kernel == "auto" and work < tuning.pair_min_work
    if kernel in ("lca", "junction") or small or tree.left[0] < 0:  # a single leaf has no pairs
        return _shared(shared, (index[0], None), lambda: LcaUnit(index, mean, tree, work, junction, tuning))
    costs = node_costs(tree)
    chosen = tree.left >= 0 if kernel == "pairs" else choose_pair_nodes(costs, tuning, local)
    # lca_work misses the expansion over coupled features: the node costs count it
    work = max(work, float(costs.items[~chosen].sum()) * costs.n_q)
    pieces = plan_pieces(costs.items, chosen, tuning.plan_item_cap)
    if not chosen.any() and pieces.max() <= 0:
        return _shared(shared, (index[0], None), lambda: LcaUnit(index, mean, tree, work, junction, tuning))
    return _shared(
        shared,
        (index[0], chosen.tobytes()),
        lambda: HybridUnit(index, mean, tree, work, "never", tuning, pair_nodes=chosen, pieces=pieces),
    )


def _shared(units: dict, key: tuple, build):
    """The unit under ``key``, built (and kept) on first use."""
    if key not in units:
        units[key] = build()
    return units[key]


def _junction_modes(nodes: NodeArrays, kernel: str, tuning: Tuning) -> np.ndarray:
    """Per tree, when an LCA unit may take the conditioned recursion instead.

    Leaf-wise trees (under a quarter of the leaves their depth allows, as LightGBM
    grows them: 98% of its trees with 31 leaves) with few repeated features are
    where it wins, by up to 3x.  Level-wise trees of depth 6-7 (XGBoost, pruned)
    carry too many states: at most 5% of them would be cheaper, and preparing the
    choice costs about as much as it saves.
    """
    if kernel == "junction":
        return np.full(len(nodes.tree_depth), "always")
    leaves = nodes.tree_leaves
    leaf_wise = leaves < 2.0 ** (nodes.tree_depth - 2)
    few_repeated = _repeated_features(nodes) <= tuning.junction_repeated
    return np.where(leaf_wise & few_repeated & (kernel == "auto"), "cheaper", "never")


def _repeated_features(nodes: NodeArrays) -> np.ndarray:
    """``(T,)`` features that split more than one node of each tree."""
    internal = (nodes.left >= 0) & (nodes.depth >= 0)
    ordered = np.sort(np.where(internal, nodes.feature, -1), axis=1)
    same = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
    first_repeat = same & ~np.concatenate([np.zeros((len(ordered), 1), bool), same[:, :-1]], axis=1)
    return np.sum(first_repeat, axis=1)


def _kinds(nodes: NodeArrays, kernel: str, local: bool, tuning: Tuning) -> list[str]:
    depth = nodes.tree_depth
    players = nodes.split_players()
    oblivious = split_patterns.oblivious_trees(nodes)
    kinds = np.full(len(depth), "lca", dtype=object)
    if kernel not in ("lca", "junction"):
        # shallow trees all go to heap batches (symmetric or not) so that batches stay long
        forced = kernel in ("enumerate", "recursion")
        # (the cube of a depth-4 heap has 2^15 patterns: too many even for tests)
        shallow = depth <= tuning.heap_depth
        small_oblivious = oblivious & ~shallow & ((depth + players <= 16) | forced)
        kinds[shallow] = "heap"
        if kernel != "enumerate":
            repeated = _repeated_features(nodes)
            # each repeated feature doubles the recursion's states: past a few, the LCA kernel is cheaper
            cheap = (repeated <= tuning.max_repeated) | (kernel == "recursion")
            kinds[(depth == tuning.observed_depth) & cheap] = "observed"
        kinds[small_oblivious] = "oblivious"
    kinds[depth == 0] = "constant"
    return list(kinds)
