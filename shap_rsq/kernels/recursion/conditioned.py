"""Two-particle recursion on any tree, each repeated feature conditioned only where it is shared.

The recursion of ``kernels.recursion.pattern_recursion`` (``A = E m``, ``B = E m^2`` bottom-up, with a
coin of probability ``q`` per feature) needs the coins of a node's two subtrees
to be independent.  A feature that splits several nodes breaks that only below
the lowest node whose subtree holds all of its occurrences: there it can be
summed out (``q`` known, ``1 - q`` unknown), and below it, down to its
occurrences, the recursion carries one value per known/unknown assignment of the
feature.  A node's *states* are the assignments of the features that occur both
inside and outside its subtree (*open*) and of those it sums out (*closing*), so
the work grows as ``2^states`` per node rather than ``2^repeated`` per tree,
which keeps it small on the leaf-wise trees of LightGBM (level-wise trees of depth 6
and more carry too many states: the LCA kernel takes them).

Each node runs on the distinct decisions of its own subtree (its *sub-patterns*)
over the distinct rows, so nodes near the leaves cost almost nothing.  This module
compiles a tree's nodes and states (:func:`compile_junction`), finds the
sub-patterns and counts the work; ``kernels.recursion.conditioned_passes`` runs the
recursion on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ...models.forest import TreeTable
from ...models.node_arrays import cover_fractions
from ...tuning import DEFAULT_TUNING, Tuning
from ..bits import bit_words
from ..leaf_paths import widest_pair
from ..quadrature import exact_nodes
from ..row_patterns import ranked_keys

__all__ = [
    "JunctionNode",
    "JunctionPlan",
    "SubPatterns",
    "compile_junction",
    "expected_junction_work",
    "junction_work",
    "node_kind",
    "pattern_predictions",
    "sub_patterns",
]


@dataclass(frozen=True)
class JunctionNode:
    """One split, with the states it computes on.

    A state is a known/unknown assignment (bit 1 = known) of ``bits``: first the
    features summed out here (*closing*), then the other open ones, then the
    split's own feature when it is open (*conditioned*: the known branch is
    computed on the upper half of the states, the unknown one on the lower half).
    Otherwise the split's own feature is a coin of this node alone (it occurs
    nowhere else, or it closes here: the known branch then reads its children
    with it known, the unknown branch with it unknown).  ``known_map`` and
    ``unknown_map`` give, per child, the child's open state read by each state
    of the branch (``None`` for a leaf, whose value is ``leaf``).
    """

    split: int
    children: tuple[int, int]  # position of each child among the plan's nodes, -1 for a leaf
    leaf: tuple[float, float]
    rho: tuple[float, float]
    own_feature: int  # local index of the split's feature
    conditioned: bool
    closing: tuple[int, ...]  # local features summed out here, lowest bit first
    n_bits: int
    known_map: tuple[np.ndarray | None, np.ndarray | None]
    unknown_map: tuple[np.ndarray | None, np.ndarray | None]

    @property
    def n_open(self) -> int:
        """States bits that stay open above this node (all but the closing ones)."""
        return self.n_bits - len(self.closing)


@dataclass(frozen=True)
class JunctionPlan:
    """Row-independent layout of one tree: its splits in postorder (the root last)."""

    features: np.ndarray  # global index of each local feature
    split_feature: np.ndarray
    split_threshold: np.ndarray
    split_default_left: np.ndarray
    nodes: tuple[JunctionNode, ...]
    n_q: int
    node_states: np.ndarray  # states of each node (2^bits)
    node_leaves: np.ndarray  # leaves below each node
    node_rho: np.ndarray  # (nodes, 2) each node's cover fractions, left and right
    node_leaf: np.ndarray  # (nodes, 2) the value of each leaf child, 0 for a split
    node_kind: np.ndarray  # (nodes,) the node's :func:`node_kind`, -1 where its branches read a child apart

    @cached_property
    def nbytes(self) -> int:
        """Bytes of the plan's arrays: summed node by node here, because walking its hundreds of
        node records field by field (``engine.worker_plans.plan_bytes``) took 5 ms a tree, 15% of
        a call on a forest of fully grown trees on 300 rows that compiled its plans."""
        arrays = [value for value in vars(self).values() if isinstance(value, np.ndarray)]
        arrays += [m for node in self.nodes for m in (*node.known_map, *node.unknown_map) if m is not None]
        return sum(a.nbytes for a in arrays)


def compile_junction(tree: TreeTable, tuning: Tuning = DEFAULT_TUNING) -> JunctionPlan | None:
    """The layout of one tree, or ``None`` for a single leaf."""
    if tree.left[0] < 0:
        return None
    splits = np.flatnonzero(tree.left >= 0)
    features, local = np.unique(tree.feature[splits], return_inverse=True)
    # plain Python below: a tree has tens of nodes, each with a handful of features in play, held
    # as bit sets (bit ``f`` for local feature ``f``), which cost a fraction of Counters of them
    left, right, value = tree.left.tolist(), tree.right.tolist(), tree.value.tolist()
    split_of = dict(zip(splits.tolist(), range(len(splits)), strict=True))
    local_of = dict(zip(splits.tolist(), local.tolist(), strict=True))
    to_left, to_right = cover_fractions(
        tree.cover[splits], tree.cover[tree.left[splits]], tree.cover[tree.right[splits]]
    )
    rho = list(zip(to_left.tolist(), to_right.tolist(), strict=True))
    order = _postorder(tree)
    own_bit = [1 << local_of[u] if left[u] >= 0 else 0 for u in range(len(left))]
    inside = _subtree_features(order, left, right, own_bit)
    outside = _outside_features(order, left, right, own_bit, inside)
    # a node's open features in its state order (``None`` for a leaf), its place among the plan's
    # nodes (-1 for a leaf) and its value as a leaf child (0.0 for a split)
    open_bits: list[tuple[int, ...] | None] = [None] * len(left)
    position = [-1] * len(left)
    as_leaf = [v if c < 0 else 0.0 for v, c in zip(value, left, strict=True)]
    leaves = [1] * len(left)
    nodes = []
    for u in order:
        if left[u] < 0:
            continue
        a, b = left[u], right[u]
        leaves[u] = leaves[a] + leaves[b]
        own, bit = local_of[u], own_bit[u]
        # summed out here: all of a feature's occurrences lie below, on both sides
        closing = _members(inside[a] & inside[b] & ~outside[u] & ~bit)
        others = _members(inside[u] & outside[u] & ~bit)
        conditioned = bool(outside[u] & bit)
        bits = closing + others + ((own,) if conditioned else ())
        open_bits[u] = others + ((own,) if conditioned else ())
        known_a, unknown_a = _branch_maps(bits, open_bits[a], own, conditioned)
        known_b, unknown_b = _branch_maps(bits, open_bits[b], own, conditioned)
        nodes.append(
            JunctionNode(
                split=split_of[u],
                children=(position[a], position[b]),
                leaf=(as_leaf[a], as_leaf[b]),
                rho=rho[split_of[u]],
                own_feature=own,
                conditioned=conditioned,
                closing=closing,
                n_bits=len(bits),
                known_map=(known_a, known_b),
                unknown_map=(unknown_a, unknown_b),
            )
        )
        position[u] = len(nodes) - 1
    return JunctionPlan(
        features=features.astype(np.int64),
        split_feature=tree.feature[splits].astype(np.int64),
        split_threshold=tree.threshold[splits].astype(np.float64),
        split_default_left=tree.default[splits] == tree.left[splits],
        nodes=tuple(nodes),
        n_q=_quadrature_count(order, left, right, own_bit, tuning.union_pairs),
        node_states=np.array([1 << node.n_bits for node in nodes], dtype=float),
        node_leaves=np.array([leaves[u] for u in order if left[u] >= 0], dtype=float),
        node_rho=np.array([node.rho for node in nodes], dtype=float).reshape(-1, 2),
        node_leaf=np.array([node.leaf for node in nodes], dtype=float).reshape(-1, 2),
        node_kind=np.array([node_kind(node) for node in nodes], dtype=np.int64),
    )


def node_kind(node: JunctionNode) -> int:
    """``4 [left child is a split] + 2 [right child is a split] + [conditioned]`` for a node whose
    known and unknown branches read each child at the same states (neither reads the split's own
    coin: the passes then take its values as products with tables of its decision), -1 otherwise."""
    if any(node.known_map[side] is not node.unknown_map[side] for side in (0, 1)):
        return -1
    return 4 * (node.children[0] >= 0) + 2 * (node.children[1] >= 0) + int(node.conditioned)


def _subtree_features(order: list[int], left: list[int], right: list[int], own_bit: list[int]) -> list[int]:
    """The features split on in each node's subtree, as bit sets (``order``: postorder)."""
    inside = [0] * len(left)
    for u in order:
        if left[u] >= 0:
            inside[u] = inside[left[u]] | inside[right[u]] | own_bit[u]
    return inside


def _outside_features(
    order: list[int], left: list[int], right: list[int], own_bit: list[int], inside: list[int]
) -> list[int]:
    """The features split on outside each node's subtree, as bit sets: a child's are its parent's,
    the parent's own and its sibling's subtree's (``order``: postorder, read backwards)."""
    outside = [0] * len(left)
    for u in reversed(order):
        if left[u] >= 0:
            above = outside[u] | own_bit[u]
            outside[left[u]] = above | inside[right[u]]
            outside[right[u]] = above | inside[left[u]]
    return outside


def _members(features: int) -> tuple[int, ...]:
    """The features of a bit set, lowest first."""
    out = []
    while features:
        low = features & -features
        out.append(low.bit_length() - 1)
        features ^= low
    return tuple(out)


def _branch_maps(bits: tuple[int, ...], child_open: tuple[int, ...] | None, own: int, conditioned: bool):
    """A child's state maps for the known and the unknown branch (``None`` for a leaf): one array
    for both (the same object, which the passes test) when the child does not read the split's own
    feature."""
    if child_open is None:
        return None, None
    unknown = _state_map(len(bits), _sources(bits, child_open, 0), conditioned, 0)
    if own not in child_open:
        return unknown, unknown
    return _state_map(len(bits), _sources(bits, child_open, 1), conditioned, 1), unknown


def _quadrature_count(order: list[int], left: list[int], right: list[int], own_bit: list[int], budget: int) -> int:
    """:func:`~shap_rsq.kernels.lca.plan.quadrature_nodes` from the node lists, without building every leaf's
    path (which took a quarter of compiling a LightGBM tree): ``ceil(|U| / 2)`` for the largest
    union ``U`` of the features on two leaves' paths (``order``: postorder; features as bit sets),
    counted over the pairs of leaves' feature sets where that lowers the bound of the widest
    leaves (:func:`~shap_rsq.kernels.leaf_paths.widest_pair`, at most ``budget`` pairs)."""
    above = [0] * len(left)  # distinct features strictly above each node
    for u in reversed(order):
        if left[u] >= 0:
            above[left[u]] = above[right[u]] = above[u] | own_bit[u]
    widest = [0] * len(left)  # most distinct features on a path to a leaf below each node
    largest = 0
    for u in order:
        if left[u] < 0:
            widest[u] = above[u].bit_count()
            largest = max(largest, widest[u])
            continue
        a, b = widest[left[u]], widest[right[u]]
        widest[u] = max(a, b)
        # two leaves meeting at u share the features down to u's split
        largest = max(largest, a + b - (above[u] | own_bit[u]).bit_count())
    sets = bit_words([above[u] for u in order if left[u] < 0], max(own_bit).bit_length())
    largest = widest_pair(sets, sets, widest[order[-1]], largest, budget)
    return exact_nodes(largest)


def _postorder(tree: TreeTable) -> list[int]:
    left, right = tree.left.tolist(), tree.right.tolist()
    order, stack = [], [0]
    while stack:
        u = stack.pop()
        order.append(u)
        if left[u] >= 0:
            stack += [left[u], right[u]]
    return order[::-1]


def _sources(bits: tuple[int, ...], child_open: tuple[int, ...], own_known: int) -> tuple[int, ...]:
    """For each of the child's open features, the parent's state bit it reads, or ``-1 - own_known``
    for the parent's own feature (not among the bits: fixed by the branch)."""
    return tuple(bits.index(f) if f in bits else -1 - own_known for f in child_open)


@lru_cache(maxsize=4096)
def _state_map(n_bits: int, sources: tuple[int, ...], halved: bool, known: int) -> np.ndarray:
    """The child's open state read by each parent state of a branch (the upper half of the states
    for the known branch of a conditioned split, the lower half for its unknown branch)."""
    states = np.arange(1 << n_bits)
    if halved:
        states = states[len(states) // 2 :] if known else states[: len(states) // 2]
    child = np.zeros_like(states)
    for k, bit in enumerate(sources):
        child |= (((states >> bit) & 1) if bit >= 0 else -1 - bit) << k
    child.flags.writeable = False
    return child


@dataclass(frozen=True)
class SubPatterns:
    """A node's distinct sub-patterns: each one's decision (True = left) and children's sub-patterns.

    A node seen by nearly every row keeps every row instead (:func:`sub_patterns`); ``same[side]``
    says that the child on that side does too, so that its sub-patterns are this node's, in order.
    """

    count: int
    decision: np.ndarray
    child: tuple[np.ndarray, np.ndarray]
    same: tuple[bool, bool] = (False, False)


def sub_patterns(
    plan: JunctionPlan, left: np.ndarray, whole: float = DEFAULT_TUNING.junction_whole_rows
) -> tuple[list[SubPatterns], list[np.ndarray]]:
    """Each node's distinct sub-patterns over rows with split decisions ``left (m, splits)``
    (postorder), and each node's sub-pattern of each row (the root's last).

    A node with at least ``whole m`` distinct sub-patterns keeps all ``m`` rows, in order, as its
    sub-patterns (see :attr:`~shap_rsq.tuning.Tuning.junction_whole_rows`).
    """
    m = left.shape[0]
    row_pattern: list[np.ndarray] = []
    out: list[SubPatterns] = []
    zeros = np.zeros(m, dtype=np.int64)
    every = np.arange(m)
    kept_all: list[bool] = []
    for node in plan.nodes:
        child = [row_pattern[c] if c >= 0 else zeros for c in node.children]
        n_child = [out[c].count if c >= 0 else 1 for c in node.children]
        # above a child that keeps every row (so that ``m >= whole m``), each row is a sub-pattern
        # of its own: no need to count them
        keep = any(c >= 0 and kept_all[c] for c in node.children)
        if not keep:
            key = _packed(left[:, node.split], child, n_child)
            distinct, inverse = ranked_keys(key, 2 * n_child[0] * n_child[1])
            keep = len(distinct) >= whole * m
        if keep:
            same = tuple(c >= 0 and kept_all[c] for c in node.children)
            row_pattern.append(every)
            kept_all.append(True)
            out.append(SubPatterns(m, left[:, node.split].astype(bool), (child[0], child[1]), same))
            continue
        row_pattern.append(inverse)
        kept_all.append(False)
        rest, right = _digit(distinct, n_child[1])
        decision, left_child = _digit(rest, n_child[0])
        out.append(SubPatterns(len(distinct), decision.astype(bool), (left_child, right)))
    return out, row_pattern


def pattern_predictions(plan: JunctionPlan, left: np.ndarray) -> np.ndarray:
    """The tree's value on rows with split decisions ``left (m, splits)`` (postorder, as
    :func:`sub_patterns` reads them): each node picks its left or its right child's value by the
    rows' decisions, from the leaves up.

    One selection per split on decisions the recursion reads anyway, where walking the rows down
    the tree (``TreeTable.leaf_of``) gathered ``X`` and compared it level by level: 0.8 ms a tree
    against 0.2-0.3 ms within a call on LightGBM's trees of 31 leaves on 1,000 rows.
    """
    below: list[np.ndarray | None] = []
    for node in plan.nodes:
        sides = [below[c] if c >= 0 else v for c, v in zip(node.children, node.leaf, strict=True)]
        below.append(np.where(left[:, node.split], *sides))
        for c in node.children:  # each node's values are read once, by its parent
            if c >= 0:
                below[c] = None
    return below[-1]


def _packed(decision: np.ndarray, child: list[np.ndarray], n_child: list[int]) -> np.ndarray:
    """Each row's key ``(decision n0 + c0) n1 + c1`` from its decision and children's sub-patterns
    (a child of one sub-pattern adds nothing: it is 0 on every row)."""
    key = decision.astype(np.int64)
    for c, n in zip(child, n_child, strict=True):
        if n > 1:
            key *= n
            key += c
    return key


def _digit(key: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``divmod(key, n)``, without dividing by 1."""
    return (key, np.zeros_like(key)) if n == 1 else np.divmod(key, n)


def expected_junction_work(plan: JunctionPlan, n_rows: int, per_leaf: float) -> float:
    """:func:`junction_work` before the sub-patterns are found, as if each node saw ``per_leaf``
    sub-patterns per leaf below it (at most one per row)."""
    return float(plan.n_q * plan.node_states @ np.minimum(per_leaf * plan.node_leaves, n_rows))


def junction_work(plan: JunctionPlan, patterns: list[SubPatterns]) -> float:
    """States x sub-patterns x quadrature nodes, summed over the nodes: the elements of the arrays
    one pass of the recursion touches."""
    return float(plan.n_q * sum((1 << node.n_bits) * p.count for node, p in zip(plan.nodes, patterns, strict=True)))
