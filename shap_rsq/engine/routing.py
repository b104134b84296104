"""The one place that chooses a kernel for each tree, from the tree's shape and the :class:`Tuning`.

Trees are grouped, in order, into units of work (:class:`~shap_rsq.kernels.protocol.TreeKernel`),
and every choice below is handed to the units as a parameter; the kernels only evaluate:

========================  ==============================================================
kernel                    trees (``kernel="auto"``)
========================  ==============================================================
subset enumeration        depth <= ``heap_depth``, batched on the cube of split patterns
                          (``kernels.enumeration.small_trees.HeapUnit``), unless the
                          recursion is cheaper (:func:`recursion_trees`); symmetric trees
                          whose ``depth + players <= oblivious_size`` (``ObliviousUnit``)
two-particle recursion    shallow trees where ``2^repeated x depth x recursion_cost`` is
                          below ``2^players``, and depth ``observed_depth`` with at most
                          ``max_repeated`` repeated features (``HeapUnit(observed=True)``,
                          the root on the patterns that occur); their per-row values chain
                          the root to tables of its two sides (``kernels.recursion.pattern_rows``)
conditioned recursion     leaf-wise trees with at most ``junction_repeated`` repeated features,
                          when its work on the rows at hand is below ``junction_share`` of the
                          LCA kernel's (``junction_local_share`` for per-row values; the
                          unit counts, :class:`JunctionRule` decides)
LCA kernel                every other tree (``kernels.lca.unit.LcaUnit``); trees whose
                          estimated work reaches ``pair_min_work`` give the pairs of nodes
                          where they are cheaper one by one than expanded to the per-pair
                          kernel (:func:`choose_pair_nodes`, where per-row values count pairs
                          cheaper by ``local_pair_discount``) and keep the LCA items of the
                          other nodes, and trees whose items need more than one plan compile
                          them in pieces (``kernels.lca.hybrid.HybridUnit``)
game on every subset      deep trees on at most ``subset_players`` players whose subset tables
                          (``sum_u 2^{s_u}`` elements a pattern, x ``subset_element_cost``)
                          cost less than their ``lca_work``
                          (``kernels.interactions.subset_values.SubsetUnit``;
                          :func:`takes_subset_values`)
interaction indices       trees on at most ``interaction_subset_players`` players whose
                          game on every subset costs less than their leaf pairs
                          (``kernels.interactions.subsets``); every other tree with a
                          split, leaf pair by leaf pair (``kernels.interactions.indices``;
                          :func:`takes_subsets`, for global and per-row
                          indices apart)
========================  ==============================================================

``kernel=`` forces one path (tests, benchmarks): ``"lca"`` sends every tree through the LCA
kernel; ``"enumerate"`` / ``"recursion"`` send every eligible tree through subset enumeration /
the two-particle recursion; ``"junction"`` every tree through the conditioned recursion for
global values (the LCA kernel for per-row values); ``"pairs"`` sends the pairs of every node of
every LCA tree through the per-pair kernel, and the interaction indices of every tree leaf pair by
leaf pair; ``"enumerate"`` also takes the interaction indices of every tree whose plan fits on
every subset, and the Shapley values of every deep tree on at most ``subset_players`` players
(:func:`takes_subset_values`).  Every choice gives the same values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..kernels.enumeration import split_patterns
from ..kernels.enumeration.small_trees import HeapUnit, ObliviousUnit
from ..kernels.interactions.subset_values import SubsetUnit
from ..kernels.interactions.subsets import subset_plan_bytes, subset_work
from ..kernels.lca.hybrid import HybridUnit, plan_pieces
from ..kernels.lca.pairs import NodeCosts, compile_pairs, node_costs
from ..kernels.lca.unit import LcaUnit, lca_work
from ..kernels.recursion import pattern_recursion
from ..models.forest import Forest, TreeTable
from ..models.node_arrays import NodeArrays
from ..tuning import DEFAULT_TUNING, Tuning
from .budget import unit_bytes

__all__ = [
    "KERNELS",
    "JunctionRule",
    "Kernel",
    "build_units",
    "choose_pair_nodes",
    "pair_cost",
    "recursion_trees",
    "takes_subset_values",
    "takes_subsets",
]

Kernel = Literal["auto", "lca", "enumerate", "recursion", "junction", "pairs"]
KERNELS: tuple[str, ...] = ("auto", "lca", "enumerate", "recursion", "junction", "pairs")


def build_units(
    forest: Forest,
    kernel: Kernel = "auto",
    local: bool = False,
    lca_units: dict | None = None,
    tuning: Tuning = DEFAULT_TUNING,
    n_rows: int | None = None,
) -> list:
    """Group a forest's trees into units, in order; single-leaf trees only shift the mean.

    ``kernel`` chooses or forces the kernels (see the module's table); ``local`` units give
    per-row values.  ``lca_units`` ((tree index, routing) to unit) shares LCA units, and with them
    their compiled plans, between calls, and between global and per-row values where a tree is
    routed alike for both (per-row values give more nodes to the pairs: ``local_pair_discount``).
    ``n_rows``, the rows of the calls the units serve, scales what a leaf pair costs against an
    LCA item for global values (:func:`pair_cost`): fewer rows give more nodes to the pairs.
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
    junction = _junction_rules(nodes, shape_kernel, tuning)
    lca_units = {} if lca_units is None else lca_units
    units: list = []
    start = 0
    while start < len(kinds):
        kind = kinds[start]
        if kind == "constant":
            start += 1
            continue
        if kind == "lca" and takes_subset_values(forest.trees[start], work[start], kernel, local, tuning):
            args = (np.array([start]), means[[start]], forest.trees[start], tuning)
            units.append(_shared(lca_units, (start, "subsets"), lambda args=args: SubsetUnit(*args)))
            start += 1
            continue
        if kind == "lca":
            args = (forest.trees[start], np.array([start]), means[[start]], work[start], junction[start])
            units.append(_lca_unit(*args, deep_kernel, tuning, local, lca_units, n_rows))
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
    observed = kind == "observed"
    return HeapUnit(index, means, batch, recursion_trees(batch, kernel, observed, tuning), observed, tuning)


def recursion_trees(batch: split_patterns.HeapBatch, kernel: str, observed: bool, tuning: Tuning) -> np.ndarray:
    """``(T,)`` whether each tree of a heap batch takes the two-particle recursion rather than
    subset enumeration: the recursion works over ``2^R`` states of its ``R`` repeated players at
    each of ``depth`` quadrature nodes, enumeration over ``2^K`` subsets of its ``K`` players, and a
    state costs ``recursion_cost`` subsets.  Depth-4 heaps (``observed``) always take it: the
    subsets of a 2^15 cube are out of reach."""
    players = batch.players_per_tree
    if observed or kernel in ("enumerate", "recursion"):
        return np.full(len(players), observed or kernel == "recursion")
    repeated = pattern_recursion.repeated_players(batch).sum(axis=1)
    return (1 << repeated) * max(1, batch.depth) * tuning.recursion_cost < (1 << players)


def _lca_unit(
    tree, index, mean, work, junction: JunctionRule | None, kernel: str, tuning, local: bool, shared: dict, n_rows
):
    """An LCA unit, or a hybrid one when some nodes' pairs are cheaper one by one or the tree's
    items need more than one plan (deep trees).

    ``shared`` maps (tree, routing) to units already built, for global or per-row values: a tree
    routed the same way for both is compiled once.
    """
    small = kernel == "auto" and work < tuning.pair_min_work
    if kernel in ("lca", "junction") or small or tree.left[0] < 0:  # a single leaf has no pairs
        item_work = _leaf_wise_items(tree, tuning) if junction is None else None
        return _shared(
            shared, (index[0], None), lambda: LcaUnit(index, mean, tree, work, junction, tuning, item_work=item_work)
        )
    costs = node_costs(tree)
    chosen = tree.left >= 0 if kernel == "pairs" else choose_pair_nodes(costs, tuning, local, n_rows)
    # lca_work misses the expansion over coupled features: the node costs count it
    item_work = float(costs.items[~chosen].sum()) * costs.n_q
    work = max(work, item_work)
    pieces = plan_pieces(costs.items, chosen, tuning.plan_item_cap)
    if not chosen.any() and pieces.max() <= 0:
        return _shared(
            shared, (index[0], None), lambda: LcaUnit(index, mean, tree, work, junction, tuning, item_work=item_work)
        )
    return _shared(
        shared,
        (index[0], chosen.tobytes()),
        lambda: HybridUnit(
            index, mean, tree, work, None, tuning, pair_nodes=chosen, pieces=pieces, item_work=item_work
        ),
    )


def _leaf_wise_items(tree: TreeTable, tuning: Tuning) -> float | None:
    """The LCA items x quadrature nodes of a leaf-wise tree (``Tuning.leaf_wise_share`` of its
    splits with a leaf child), counted node by node, where ``lca_work``'s estimate from the leaves'
    depths counts 2.4-2.5x too many; ``None`` for other trees.  For the time estimate only:
    ``work`` still routes the tree."""
    inner = tree.left >= 0
    if not inner.any():
        return None
    with_leaf = (tree.left[tree.left[inner]] < 0) | (tree.left[tree.right[inner]] < 0)
    if with_leaf.mean() < tuning.leaf_wise_share:
        return None
    costs = node_costs(tree)
    return float(costs.items.sum()) * costs.n_q


def _shared(units: dict, key: tuple, build):
    """The unit under ``key``, built (and kept) on first use."""
    if key not in units:
        units[key] = build()
    return units[key]


def pair_cost(tuning: Tuning, local: bool, n_rows: int | None) -> float:
    """What a leaf pair x quadrature node costs against an LCA item x node, per row pattern.

    Global values scale ``Tuning.pair_cost`` to the call's ``n_rows`` (``Tuning.pair_cost_at``: on
    few rows an item's tables serve few rows each).  Per-row values take ``pair_cost x
    local_pair_discount`` whatever the rows: their items already cost more per row, and the row
    scale on top took 2-4% more on 500-1,000 rows of a fully grown tree (2-5% less on 100).
    """
    if local:
        return tuning.pair_cost * tuning.local_pair_discount
    return tuning.pair_cost_at(n_rows)


def choose_pair_nodes(
    costs: NodeCosts, tuning: Tuning = DEFAULT_TUNING, local: bool = False, n_rows: int | None = None
) -> np.ndarray:
    """``(nodes,)`` mask of the nodes whose leaf pairs take the per-pair kernel (``kernels.lca.pairs``)
    rather than the LCA items.

    A node with at least ``pair_min_pairs`` pairs takes them when ``cost x pairs x
    ceil(width / 2)`` is below its items x the tree's quadrature nodes, ``cost`` being
    :func:`pair_cost` for per-row values (``local``) or global ones on ``n_rows`` rows.  A node
    whose items alone exceed :attr:`~shap_rsq.tuning.Tuning.plan_item_cap` takes them too: no plan
    could hold it.  The other nodes' items may add up to more than the cap; the tree is then
    compiled as several plans (``kernels.lca.hybrid.plan_pieces``).
    """
    pair_work = pair_cost(tuning, local, n_rows) * costs.pairs * np.ceil(costs.width / 2)
    cheaper = (costs.pairs >= tuning.pair_min_pairs) & (pair_work < costs.items * costs.n_q)
    return cheaper | (costs.items > tuning.plan_item_cap)


@dataclass(frozen=True)
class JunctionRule:
    """When an LCA unit's tree takes the conditioned recursion instead of its LCA items
    (a :class:`~shap_rsq.kernels.protocol.JunctionChoice`: the unit counts, this decides).

    ``forced`` (``kernel="junction"``) takes every tree.  Otherwise the recursion's forward work,
    at most ``junction_elements`` (its saved arrays), plus its reverse pass on every row for
    per-row values, must stay below ``junction_share`` (``junction_local_share``) of the LCA
    kernel's estimate on the same patterns.
    """

    forced: bool
    tuning: Tuning = DEFAULT_TUNING

    def takes(self, junction_work: float, lca_work: float, n_patterns: int, reverse: float, local: bool) -> bool:
        if self.forced:
            return True
        tuning = self.tuning
        share = tuning.junction_local_share if local else tuning.junction_share
        return junction_work <= min(tuning.junction_elements, share * lca_work * n_patterns - reverse)


def _junction_rules(nodes: NodeArrays, kernel: str, tuning: Tuning) -> list[JunctionRule | None]:
    """Per tree, the rule by which an LCA unit may take the conditioned recursion (``None``: never).

    Leaf-wise trees (under a quarter of the leaves their depth allows, as LightGBM
    grows them: 98% of its trees with 31 leaves) with few repeated features are
    where it wins, by up to 3x.  Level-wise trees of depth 6-7 (XGBoost, pruned)
    carry too many states: at most 5% of them would be cheaper, and preparing the
    choice costs about as much as it saves.
    """
    if kernel == "junction":
        return [JunctionRule(True, tuning)] * len(nodes.tree_depth)
    leaves = nodes.tree_leaves
    leaf_wise = leaves < 2.0 ** (nodes.tree_depth - 2)
    few_repeated = _repeated_features(nodes) <= tuning.junction_repeated
    cheaper = leaf_wise & few_repeated & (kernel == "auto")
    return [JunctionRule(False, tuning) if take else None for take in cheaper]


def takes_subset_values(
    tree: TreeTable, lca_cost: float, kernel: Kernel = "auto", local: bool = False, tuning: Tuning = DEFAULT_TUNING
) -> bool:
    """Whether a tree with a split takes its R² Shapley values from its game on every subset.

    It must have at most ``subset_players`` players, a plan within a quarter of the memory budget,
    and (``kernel="auto"``) subset tables (``sum_u 2^{s_u}`` elements a pattern) at
    ``subset_element_cost`` each (``subset_local_element_cost`` for per-row values, ``local``)
    below its LCA kernel's ``lca_cost`` (:func:`lca_work`, items x quadrature nodes a pattern).
    ``"enumerate"`` takes every tree that qualifies on the first two.
    """
    if kernel not in ("auto", "enumerate") or tree.left[0] < 0:
        return False
    n_players = len(np.unique(tree.player[tree.left >= 0]))
    if n_players > tuning.subset_players:
        return False
    elements = subset_work(tree)
    if 16.0 * elements + 8.0 * 2.0**n_players * n_players > tuning.memory_budget // 4:
        return False
    cost = tuning.subset_local_element_cost if local else tuning.subset_element_cost
    return kernel == "enumerate" or elements * cost < lca_cost


def takes_subsets(
    tree: TreeTable, tuning: Tuning = DEFAULT_TUNING, kernel: Kernel = "auto", local: bool = False
) -> bool:
    """Whether a tree with a split takes its interaction indices from its game on every subset.

    It must have at most ``interaction_subset_players`` players and a plan within a quarter of
    the memory budget, and cost less than its leaf pairs (:func:`pair_products`, per row
    pattern): its table elements ``sum_u 2^{s_u}`` count ``interaction_subset_cost`` products
    each, and per-row indices (``local``) add the ``2^K x K (K + 1) / 2`` weights that map every
    row's game to its indices, at ``interaction_subset_row_cost`` each.  ``kernel="pairs"``
    sends every tree to the leaf pairs, ``"enumerate"`` every tree whose plan fits to the subsets.
    """
    splits = tree.left >= 0
    n_players = len(np.unique(tree.player[splits]))
    if kernel == "pairs" or n_players > tuning.interaction_subset_players:
        return False
    work = subset_work(tree)
    if subset_plan_bytes(work, n_players) > tuning.memory_budget // 4:
        return False
    if kernel == "enumerate":
        return True
    cost = work * tuning.interaction_subset_cost
    if local:
        cost += 2.0**n_players * n_players * (n_players + 1) / 2 * tuning.interaction_subset_row_cost
    return cost < pair_products(tree)


def pair_products(tree: TreeTable) -> float:
    """The products the leaf-pair interaction kernel takes per row pattern: ``W (W - 1) / 2`` x
    ``ceil((W - 1) / 2)`` for each entry (pairs of leaves, each leaf with itself and alone), ``W``
    the players on its two paths."""
    plan = compile_pairs(tree, np.zeros(tree.n_nodes, dtype=bool))
    has = np.zeros((plan.path_kid.shape[0], plan.n_features + 1))
    np.put_along_axis(has, plan.path_kid, 1.0, axis=1)
    has = has[:, :-1]
    own = has.sum(axis=1)
    width = own[:, None] + own[None, :] - has @ has.T  # players on the union of two paths

    def products(w):
        return w * (w - 1) / 2 * np.ceil((w - 1) / 2)

    return float(np.triu(products(width), 1).sum() + 2 * products(own).sum())


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
        small_oblivious = oblivious & ~shallow & ((depth + players <= tuning.oblivious_size) | forced)
        kinds[shallow] = "heap"
        if kernel != "enumerate":
            repeated = _repeated_features(nodes)
            # each repeated feature doubles the recursion's states: past a few, the LCA kernel is cheaper
            cheap = (repeated <= tuning.max_repeated) | (kernel == "recursion")
            kinds[(depth == tuning.observed_depth) & cheap] = "observed"
        kinds[small_oblivious] = "oblivious"
    kinds[depth == 0] = "constant"
    return list(kinds)
