"""Interaction indices and Shapley values of one tree's game from its values on every subset.

A tree that splits on few players (``K``) has only ``2^K`` coalitions, so its game can be taken
as it stands: ``m_S(x)`` for every subset ``S`` of its players, from one bottom-up pass over its
nodes, then ``v(S) = w_quad m_S^2 + w_lin m_S`` and the indices as fixed weighted sums of the
``v(S)`` (the definitions, players outside the tree being dummies).  Nothing grows with the
leaves squared: a node's table covers only the subsets of the players that split in its own
subtree (``2^{s_u}`` of them), so its work per row is ``sum_u 2^{s_u}``, at most ``nodes x 2^K``
and mostly far below it, since deep nodes see few players.

At a split on player ``k`` with children ``l`` and ``r`` (cover fractions ``rho_l``, ``rho_r``):
``m_S = m^{child taken}_S`` when ``k`` is in ``S``, else ``rho_l m^l_S + rho_r m^r_S``.  Leaf values
are centred on the tree's mean ``c`` first (``m_S - c``: the weights of the leaves sum to one for
every ``S``), so that the subset differences of ``v`` do not cancel the mean away; the game of
``m`` is recovered exactly from that of ``m - c`` (:func:`subset_interactions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from math import factorial

import numpy as np

from ...models.forest import TreeTable
from ...models.node_arrays import cover_fractions
from ...tuning import DEFAULT_TUNING, Tuning
from ..lca.pairs import PairPlan, compile_pairs
from ..leaf_paths import subtree_features
from ..row_patterns import split_decisions

__all__ = [
    "SubsetPlan",
    "compile_subsets",
    "shapley_weights",
    "subset_interactions",
    "subset_plan_bytes",
    "subset_sizes",
    "subset_work",
]


@dataclass(frozen=True)
class SubsetStep:
    """One split of the bottom-up pass.

    The split's table is indexed by subsets of its subtree's players, its own player the top bit:
    the lower half has it unknown, the upper half known.  ``left_unknown`` (and the others) index
    each child's table at those subsets; a leaf child's table is its one centred value.
    """

    node: int
    left: int
    right: int
    split: int  # column of the split decisions
    to_left: float
    to_right: float
    left_unknown: np.ndarray
    right_unknown: np.ndarray
    left_known: np.ndarray
    right_known: np.ndarray


@dataclass(frozen=True)
class SubsetPlan:
    """Row-independent tables of one tree's pass over subsets of its ``K`` players.

    ``pairs`` holds the routing fields and the players (``features``, no pair nodes); ``steps``
    are the splits, children before parents (depth-first postorder, so that few tables are held
    at once); ``root_order`` maps the root's subset index to the subset whose bit ``j`` is
    tree-local player ``j``; ``live`` is the most table elements a row holds at once.
    """

    pairs: PairPlan
    steps: tuple[SubsetStep, ...]
    leaf_value: np.ndarray  # (nodes,) centred values at the leaves (0 elsewhere)
    mean: float  # the tree's cover-weighted mean c
    root_order: np.ndarray  # (2^K,)
    live: int

    @property
    def features(self) -> np.ndarray:
        """``(K,)`` the players of the tree: what its local columns stand for."""
        return self.pairs.features

    @cached_property
    def nbytes(self) -> int:
        """Bytes of the plan's arrays, counted once: walking its step records field by field
        (``engine.worker_plans.plan_bytes``), as every call does for the plans it keeps, took
        40 ms a call on 244 LightGBM trees."""
        steps = self.steps
        maps = [m for s in steps for m in (s.left_unknown, s.right_unknown, s.left_known, s.right_known)]
        routing = [value for value in vars(self.pairs).values() if isinstance(value, np.ndarray)]  # no pair nodes
        return sum(a.nbytes for a in (*maps, *routing, self.leaf_value, self.root_order))

    @property
    def n_players(self) -> int:
        return len(self.pairs.features)


def subset_work(tree: TreeTable) -> float:
    """``sum_u 2^{s_u}`` over the splits ``u`` of a tree (``s_u``: the players splitting in ``u``'s
    subtree): the table elements of one row's pass."""
    splits = tree.left >= 0
    if not splits.any():
        return 0.0
    return float(_table_sizes(tree)[splits].sum())


def _table_sizes(tree: TreeTable) -> np.ndarray:
    """``(nodes,)`` each node's table elements a row, ``2^{s_u}`` (1 at a leaf)."""
    inside = subtree_features(tree, np.unique(tree.player[tree.left >= 0]))
    return np.left_shift(1, inside.sum(axis=1))


def subset_plan_bytes(table_elements: float, n_players: int) -> float:
    """Bytes of a tree's plan with ``table_elements`` a row (:func:`subset_work`) on ``n_players``
    players: the four ``int64`` index maps of each split (half its table each), and the weights of
    the indices on every subset (``2^K x (K + K (K - 1) / 2)`` floats, kept for the trees on
    ``K`` players: 13 MB at 14)."""
    return 16.0 * table_elements + 8.0 * 2.0**n_players * (n_players + n_players * (n_players - 1) / 2)


def compile_subsets(tree: TreeTable) -> SubsetPlan:
    """The bottom-up pass of a tree with at least one split."""
    pairs = compile_pairs(tree, np.zeros(tree.n_nodes, dtype=bool))
    feature_ids = pairs.features
    inside = subtree_features(tree, feature_ids)
    split_index = np.full(tree.n_nodes, -1, dtype=np.int64)
    split_index[pairs.split_node] = np.arange(len(pairs.split_node))
    kid = np.full(tree.n_nodes, -1, dtype=np.int64)
    kid[pairs.split_node] = np.searchsorted(feature_ids, tree.player[pairs.split_node])
    order = _postorder(tree)
    lists = {int(u): _players_of(inside[u], int(kid[u])) for u in order}
    sizes = np.left_shift(1, inside.sum(axis=1))
    fractions = _cover_fractions(tree)
    value = np.asarray(tree.value, dtype=np.float64)
    mean = _tree_mean(tree, order, fractions, value)
    leaf_value = np.where(tree.left < 0, value - mean, 0.0)
    steps = []
    for u in order:
        u = int(u)
        mine, left, right = lists[u], int(tree.left[u]), int(tree.right[u])
        maps = [_child_index(mine, lists.get(child, ())) for child in (left, right)]
        half = 1 << (len(mine) - 1)
        steps.append(
            SubsetStep(
                u, left, right, int(split_index[u]), float(fractions[left]), float(fractions[right]),
                maps[0][:half], maps[1][:half], maps[0][half:], maps[1][half:],
            )
        )  # fmt: skip
    root = lists[0]
    index = np.arange(1 << len(root))
    local = ((index[:, None] >> np.arange(len(root))) & 1) @ (np.int64(1) << np.asarray(root, dtype=np.int64))
    root_order = np.empty_like(index)
    root_order[local] = index
    live = _live_elements(order, tree.left, tree.right, sizes)
    return SubsetPlan(pairs, tuple(steps), leaf_value, mean, root_order, live)


def _postorder(tree: TreeTable) -> np.ndarray:
    """The splits of a tree, each after both its children (depth-first)."""
    order, stack = [], [(0, False)]
    while stack:
        node, done = stack.pop()
        if tree.left[node] < 0:
            continue
        if done:
            order.append(node)
        else:
            stack.extend(((node, True), (int(tree.right[node]), False), (int(tree.left[node]), False)))
    return np.array(order, dtype=np.int64)


def _players_of(inside: np.ndarray, own: int) -> tuple[int, ...]:
    """A split's players in the order of its subset bits: the others ascending, its own last."""
    others = [int(k) for k in np.flatnonzero(inside) if k != own]
    return (*others, own)


def _child_index(parent: tuple[int, ...], child: tuple[int, ...]) -> np.ndarray:
    """``(2^|parent|,)`` the child's subset index of each of the parent's subsets (0 for a leaf)."""
    index = np.arange(1 << len(parent))
    bits = (index[:, None] >> np.arange(len(parent))) & 1
    position = {k: i for i, k in enumerate(child)}
    weight = np.array([1 << position[k] if k in position else 0 for k in parent], dtype=np.int64)
    return bits @ weight


def _cover_fractions(tree: TreeTable) -> np.ndarray:
    """``(nodes,)`` each node's share of its parent's cover (1 at the root; an unreached split halves)."""
    fraction = np.ones(tree.n_nodes)
    splits = np.flatnonzero(tree.left >= 0)
    left, right = tree.left[splits], tree.right[splits]
    cover = np.asarray(tree.cover, dtype=np.float64)
    fraction[left], fraction[right] = cover_fractions(cover[splits], cover[left], cover[right])
    return fraction


def _tree_mean(tree: TreeTable, order: np.ndarray, fractions: np.ndarray, value: np.ndarray) -> float:
    """The cover-weighted mean of the leaves, ``m`` with no player known."""
    mean = np.where(tree.left < 0, value, 0.0)
    for u in order:
        mean[u] = fractions[tree.left[u]] * mean[tree.left[u]] + fractions[tree.right[u]] * mean[tree.right[u]]
    return float(mean[0])


def _live_elements(order: np.ndarray, left: np.ndarray, right: np.ndarray, size: np.ndarray) -> int:
    """The most table elements per row held at once during the postorder pass (``size``: each
    node's table elements, ``left`` and ``right`` its children)."""
    live, held, most = {}, 0, 1
    for u in order:
        most = max(most, held + int(size[u]))
        for child in (int(left[u]), int(right[u])):
            held -= live.pop(child, 0)
        live[int(u)] = int(size[u])
        held += int(size[u])
    return most


def subset_sizes(tree: TreeTable) -> tuple[float, int]:
    """``(elements, live)`` of a tree with a split, without compiling its plan: its table elements a
    row (:func:`subset_work`) and the most of them a row holds at once in the pass."""
    size = _table_sizes(tree)
    return float(size[tree.left >= 0].sum()), _live_elements(_postorder(tree), tree.left, tree.right, size)


def subset_tables(plan: SubsetPlan, X: np.ndarray, dtype=None, rows: np.ndarray | None = None) -> np.ndarray:
    """``(2^K, n)`` the centred ``m_S - c`` on every subset ``S`` (bit ``j``: local player ``j``) of
    each row, subsets first.

    Each table is laid out subsets first, so that a child's table spreads over its parent's
    subsets by whole rows (a copy of ``n`` floats each) and a split's decisions mask contiguous
    runs: with rows first, the same gathers picked one float at a time and took 9 ns a table
    element on LightGBM's trees (3 ns now, the same values; about 2 ns in blocks of patterns in cache).
    """
    decisions = np.ascontiguousarray(split_decisions(plan.pairs, X, dtype, rows).T)  # (splits, n)
    tables: dict[int, np.ndarray] = {}
    for step in plan.steps:
        lo = tables.pop(step.left) if step.left in tables else plan.leaf_value[step.left]
        hi = tables.pop(step.right) if step.right in tables else plan.leaf_value[step.right]
        tables[step.node] = _split_table(step, lo, hi, decisions[step.split])
    return tables[0][plan.root_order]


def _split_table(step: SubsetStep, lo: np.ndarray, hi: np.ndarray, decision: np.ndarray) -> np.ndarray:
    """A split's table from its children's (a leaf's: its one value), rows going left by ``decision``."""
    half = len(step.left_unknown)
    table = np.empty((2 * half, len(decision)))
    unknown, known = table[:half], table[half:]
    # own player unknown: the children weighed by their cover fractions; a leaf's weighted value is
    # one number, added to the other child's rows (a sum of two products either way round)
    if lo.ndim == 0:
        np.multiply(_spread(hi, step.right_unknown, unknown), step.to_right, out=unknown)
        unknown += lo * step.to_left
    else:
        np.multiply(_spread(lo, step.left_unknown, unknown), step.to_left, out=unknown)
        if hi.ndim == 0:
            unknown += step.to_right * hi
        else:
            other = _spread(hi, step.right_unknown, np.empty_like(unknown))
            other *= step.to_right
            unknown += other
    # own player known: the child each row's decision takes
    _spread(hi, step.right_known, known)
    np.copyto(known, lo if lo.ndim == 0 else _spread(lo, step.left_known, np.empty_like(known)), where=decision)
    return table


def _spread(child: np.ndarray, index: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``out`` filled with the child's table rows ``index`` (a leaf's table: its one value)."""
    if child.ndim == 0:
        out.fill(child)
    else:
        np.take(child, index, axis=0, out=out)
    return out


@lru_cache(maxsize=8)
def shapley_weights(n_players: int) -> np.ndarray:
    """``(2^K, K)``: the Shapley values of a game on ``K`` players as weighted sums of its values
    on every subset (bit ``j`` of the index: player ``j``),
    ``phi_j = sum_{S not j} |S|! (K - |S| - 1)! / K! [v(S + j) - v(S)]``."""
    size = 1 << n_players
    subsets = np.arange(size)
    count = np.array([bin(s).count("1") for s in range(size)])
    shapley = np.zeros((size, n_players))
    weight = np.array([factorial(c) * factorial(n_players - c - 1) for c in range(n_players)]) / factorial(n_players)
    for j in range(n_players):
        off = subsets[(subsets >> j) & 1 == 0]
        shapley[off | (1 << j), j] += weight[count[off]]
        shapley[off, j] -= weight[count[off]]
    shapley.flags.writeable = False  # shared by every caller through the cache
    return shapley


@lru_cache(maxsize=8)
def index_weights(n_players: int) -> tuple[np.ndarray, np.ndarray]:
    """``(2^K, K)`` and ``(2^K, K (K - 1) / 2)``: the Shapley values and the interaction indices
    (pairs ``j < k`` in ``np.triu_indices`` order) of a game on ``K`` players as weighted sums of
    its values on every subset (bit ``j`` of the index: player ``j``).

    ``phi_j = sum_{S not j} |S|! (K - |S| - 1)! / K! [v(S + j) - v(S)]`` and
    ``I_jk = sum_{S not j, k} |S|! (K - |S| - 2)! / (K - 1)! [v(S + jk) - v(S + j) - v(S + k) + v(S)]``.
    """
    size = 1 << n_players
    subsets = np.arange(size)
    count = np.array([bin(s).count("1") for s in range(size)])
    shapley = shapley_weights(n_players)
    j_of, k_of = np.triu_indices(n_players, 1)
    interaction = np.zeros((size, len(j_of)))
    if n_players >= 2:
        weight = np.array([factorial(c) * factorial(n_players - c - 2) for c in range(n_players - 1)]) / factorial(
            n_players - 1
        )
        for p, (j, k) in enumerate(zip(j_of, k_of, strict=True)):
            off = subsets[((subsets >> j) & 1 == 0) & ((subsets >> k) & 1 == 0)]
            w = weight[count[off]]
            interaction[off | (1 << j) | (1 << k), p] += w
            interaction[off | (1 << j), p] -= w
            interaction[off | (1 << k), p] -= w
            interaction[off, p] += w
    return shapley, interaction


def subset_interactions(
    plan: SubsetPlan,
    X: np.ndarray,
    w_quad: np.ndarray | None,
    w_lin: np.ndarray | None,
    tuning: Tuning = DEFAULT_TUNING,
    dtype=None,
    rows: np.ndarray | None = None,
):
    """Interaction indices and Shapley values of the tree's game on rows ``X`` (its rows ``rows``).

    With row weights: ``(K + 1, K + 1)`` ``sum_i I_jk`` at tree-local players ``j < k`` (the upper
    triangle; the last row and column pad, as :func:`~.indices.pattern_interactions` gives them)
    and ``(K,)`` ``sum_i phi_j`` of the games ``w_quad[i] m_S^2 + w_lin[i] m_S``.  Without
    (``None``): per row, the indices of ``m_S^2`` and of ``m_S`` (two ``(n, K + 1, K + 1)``) and
    their Shapley values (two ``(n, K)``).  Rows are taken ``interaction_block_within / live`` at a time.
    """
    index = np.arange(X.shape[0]) if rows is None else rows
    n, n_k = len(index), plan.n_players
    shapley, interaction = index_weights(n_k)
    j, k = np.triu_indices(n_k, 1)
    step = max(1, tuning.interaction_block_within // (2 * plan.live))
    local = w_quad is None
    c = plan.mean
    if local:
        on_m2, on_m = np.zeros((n, n_k + 1, n_k + 1)), np.zeros((n, n_k + 1, n_k + 1))
        phi_m2, phi_m = np.zeros((n, n_k)), np.zeros((n, n_k))
    else:
        game = np.zeros(1 << n_k)
    for start in range(0, n, step):
        chunk = slice(start, min(n, start + step))
        centred = subset_tables(plan, X, dtype, index[chunk]).T  # m_S - c, (rows, 2^K)
        if local:
            # the games of m^2 = (m - c)^2 + 2 c (m - c) + c^2 and of m = (m - c) + c (constants play no part)
            linear = centred @ interaction
            square = np.square(centred) @ interaction + 2.0 * c * linear
            on_m2[chunk, j, k], on_m[chunk, j, k] = square, linear
            linear = centred @ shapley
            phi_m2[chunk], phi_m[chunk] = np.square(centred) @ shapley + 2.0 * c * linear, linear
        else:
            # w_quad m^2 + w_lin m = w_quad (m - c)^2 + (w_lin + 2 c w_quad) (m - c) + constant
            game += w_quad[chunk] @ np.square(centred) + (w_lin[chunk] + 2.0 * c * w_quad[chunk]) @ centred
    if local:
        return on_m2, on_m, phi_m2, phi_m
    out = np.zeros((n_k + 1, n_k + 1))
    out[j, k] = game @ interaction
    return out, game @ shapley
