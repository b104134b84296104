"""Units of work: one tree through the LCA kernel, or consecutive small trees through enumeration.

Every unit answers two questions for a chunk of rows: what each of its trees
predicts (:meth:`prepare`), and, given the row weights of each tree's game,
what Shapley values those games add (:meth:`contribute`).  The engine owns the
residuals that turn predictions into weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _enumerate, _kernel, _recursion
from ._plan import TreePlan, compile_tree
from ._trees import Forest, NodeArrays

__all__ = ["build_units"]

# Trees at most this deep go through batched enumeration (heap of 7 splits, patterns < 2^7).
_HEAP_DEPTH = 3
_BATCH_TREES = 256
_CHUNK_ELEMENTS = 1 << 22
# Distinct patterns per LCA kernel call: (patterns x items) index arrays of up to 2^24 entries (128 MB) keep
# the cell tables of a tree computed once for typical data sizes.
_PATTERN_ELEMENTS = 1 << 24


@dataclass
class LcaUnit:
    """One tree through the compiled LCA kernel (``_plan`` / ``_kernel``).

    All rows are first routed to split patterns (in row blocks) and merged
    across the whole dataset, so a tree with few distinct patterns costs little
    however many rows there are; the kernel then runs over blocks of patterns.
    """

    trees: np.ndarray
    means: np.ndarray
    plan: TreePlan

    @property
    def work(self) -> float:
        return float(len(self.plan.item_leaf) * self.plan.n_q)

    def chunk_rows(self) -> int | None:
        return None  # all rows at once: routing is blocked inside

    def prepare(self, X: np.ndarray, dtype) -> tuple[tuple, np.ndarray]:
        step = max(256, _CHUNK_ELEMENTS // max(1, self.plan.path_split.size))
        keys, prediction = [], []
        for start in range(0, X.shape[0], step):
            left = _kernel.split_decisions(self.plan, X[start : start + step], dtype)
            keys.append(_pattern_keys(left[:, :-1]))
            prediction.append(self.plan.leaf_value[_kernel.reached_leaf(self.plan, left)])
        _, first, inverse = np.unique(np.concatenate(keys), return_index=True, return_inverse=True)
        return (X, dtype, first, inverse.ravel()), np.concatenate(prediction)[:, None]

    def contribute(self, state, w_quad: np.ndarray, w_lin: np.ndarray, out: np.ndarray, local: bool) -> None:
        X, dtype, first, inverse = state
        n_patterns = len(first)
        per_quad = np.bincount(inverse, weights=w_quad[:, 0], minlength=n_patterns)
        per_lin = np.bincount(inverse, weights=w_lin[:, 0], minlength=n_patterns)
        if local:
            g_quad = np.empty((n_patterns, self.plan.n_features))
            g_lin = np.empty_like(g_quad)
        step = max(64, _PATTERN_ELEMENTS // max(len(self.plan.item_leaf), 1))
        for start in range(0, n_patterns, step):
            block = slice(start, min(n_patterns, start + step))
            left = _kernel.split_decisions(self.plan, X, dtype, rows=first[block])
            codes = _kernel.leaf_codes(self.plan, left)
            if local:
                g_quad[block], g_lin[block] = _kernel.pattern_gradients(self.plan, codes)
            else:
                out[self.plan.features] += _kernel.weighted_gradient(self.plan, codes, per_quad[block], per_lin[block])
        if local:
            out[:, self.plan.features] += w_quad[:, :1] * g_quad[inverse] + w_lin[:, :1] * g_lin[inverse]


def _pattern_keys(decisions: np.ndarray) -> np.ndarray:
    """One sortable key per row of split decisions (an integer, or packed bytes past 62 splits)."""
    if decisions.shape[1] <= 62:
        return decisions @ (np.int64(1) << np.arange(decisions.shape[1], dtype=np.int64))
    packed = np.ascontiguousarray(np.packbits(decisions, axis=1))
    return packed.view(np.dtype((np.void, packed.shape[1]))).ravel()


@dataclass
class HeapUnit:
    """Consecutive trees of depth <= 3 by subset enumeration over distinct split patterns."""

    trees: np.ndarray
    means: np.ndarray
    batch: _enumerate.HeapBatch
    method: str = "auto"  # or force "enumerate" / "recursion" (tests)

    @property
    def work(self) -> float:
        return float(np.sum(np.left_shift(1, self.batch.depth + self.batch.players_per_tree)))

    def chunk_rows(self) -> int:
        return max(256, _CHUNK_ELEMENTS // (len(self.trees) * ((1 << self.batch.depth) - 1)))

    def prepare(self, X: np.ndarray, dtype) -> tuple[tuple, np.ndarray]:
        left = _enumerate.heap_decisions(self.batch, X, dtype)  # (n, T, N)
        n_splits = left.shape[2]
        packed = np.packbits(left, axis=2, bitorder="little").astype(np.int64)  # bytes of the pattern, low first
        key = (packed << (8 * np.arange(packed.shape[2]))).sum(axis=2)  # (n, T) < 2^N
        slots = np.arange(len(self.trees), dtype=np.int64) << n_splits
        seen = np.zeros(len(self.trees) << n_splits, dtype=bool)
        seen[key + slots] = True
        # distinct patterns per tree, ranked within their tree
        present = seen.reshape(len(self.trees), -1)
        rank = np.cumsum(present, axis=1) - 1
        pattern = rank[np.arange(len(self.trees)), key]  # (n, T)
        n_patterns = present.sum(axis=1)
        tree_index, pattern_key = np.nonzero(present)
        decisions = np.zeros((len(self.trees), max(1, int(n_patterns.max())), n_splits), dtype=bool)
        decisions[tree_index, rank[tree_index, pattern_key]] = (pattern_key[:, None] >> np.arange(n_splits)) & 1 == 1
        # route the distinct patterns, not the rows, to their leaves
        trees = np.arange(len(self.trees))
        leaf = _enumerate.heap_leaf(self.batch, np.swapaxes(decisions, 0, 1)).T  # (T, U)
        prediction = self.batch.leaf_value[trees, leaf[trees, pattern]]
        return (pattern, decisions, n_patterns), prediction

    def contribute(self, state, w_quad: np.ndarray, w_lin: np.ndarray, out: np.ndarray, local: bool) -> None:
        pattern, decisions, n_patterns = state
        # per tree the cheaper exact method: 2^K subsets, or the recursion over 2^R repeated-feature states;
        # trees sharing a method and size are evaluated together, padding patterns only within the group
        players = self.batch.players_per_tree
        repeated = _recursion.repeated_players(self.batch).sum(axis=1)
        recurse = (1 << repeated) * max(1, self.batch.depth) * 5 < (1 << players)
        if self.method != "auto":
            recurse = np.full(len(players), self.method == "recursion")
        size = np.where(recurse, repeated, players)
        for use_recursion, k in sorted({(bool(r), int(s)) for r, s in zip(recurse, size, strict=True)}):
            group = np.flatnonzero((recurse == use_recursion) & (size == k))
            width = max(1, int(n_patterns[group].max()))
            rows = (pattern[:, group], width, w_quad[:, group], w_lin[:, group])
            if use_recursion:
                batch = self.batch.select(group, self.batch.n_players)
                _add_recursion_shapley(batch, decisions[group, :width], *rows, out, local)
            else:
                batch = self.batch.select(group, k)
                values = _enumerate.subset_values(batch, decisions[group, :width])  # (T_k, 2^k, U)
                _add_subset_shapley(values, *rows, _enumerate.shapley_matrix(k), batch.features, out, local)


@dataclass
class ObliviousUnit:
    """Consecutive symmetric trees of one depth; rows fall into the 2^depth level-bit patterns."""

    trees: np.ndarray
    means: np.ndarray
    batch: _enumerate.HeapBatch
    values: np.ndarray = field(init=False)

    def __post_init__(self):
        self.values = _enumerate.oblivious_subset_values(self.batch)  # (T, 2^K, 2^D), row-independent

    @property
    def work(self) -> float:
        return float(self.values.size)

    def chunk_rows(self) -> int:
        return max(256, _CHUNK_ELEMENTS // (len(self.trees) * self.batch.depth))

    def prepare(self, X: np.ndarray, dtype) -> tuple[tuple, np.ndarray]:
        depth = self.batch.depth
        level = (1 << np.arange(depth)) - 1  # first heap node of each level stands for the level
        batch = self.batch
        left = _enumerate.goes_left(
            X, batch.feature[:, level], batch.threshold[:, level], batch.default_left[:, level], dtype
        )
        # pattern bits, level 0 most significant: pack them big-endian and drop the padding bits
        packed = np.packbits(~left, axis=2, bitorder="big").astype(np.int64)
        pattern = (packed << (8 * np.arange(packed.shape[2] - 1, -1, -1))).sum(axis=2) >> (8 * packed.shape[2] - depth)
        prediction = batch.leaf_value[np.arange(len(self.trees)), pattern]
        return (pattern,), prediction

    def contribute(self, state, w_quad: np.ndarray, w_lin: np.ndarray, out: np.ndarray, local: bool) -> None:
        (pattern,) = state
        _add_subset_shapley(
            self.values,
            pattern,
            1 << self.batch.depth,
            w_quad,
            w_lin,
            _enumerate.shapley_matrix(self.batch.n_players),
            self.batch.features,
            out,
            local,
        )


def _add_subset_shapley(values, pattern, n_patterns, w_quad, w_lin, shapley, features, out, local) -> None:
    """Shapley values of ``w_quad m_S^2 + w_lin m_S`` from the subset tables ``values (T, 2^K, U)``.

    ``pattern (n, T)`` maps rows to patterns; ``features (T, K)`` maps players to columns.
    """
    n_trees = values.shape[0]
    used = features >= 0
    if local:
        unit_quad = np.einsum("tsu,sk->tuk", values * values, shapley)
        unit_lin = np.einsum("tsu,sk->tuk", values, shapley)
        trees = np.arange(n_trees)[None, :]
        phi = w_quad[:, :, None] * unit_quad[trees, pattern] + w_lin[:, :, None] * unit_lin[trees, pattern]
        _scatter_local(phi, features, out)
        return
    flat = (pattern + np.arange(n_trees) * n_patterns).ravel()
    per_quad = np.bincount(flat, weights=w_quad.ravel(), minlength=n_trees * n_patterns).reshape(n_trees, -1)
    per_lin = np.bincount(flat, weights=w_lin.ravel(), minlength=n_trees * n_patterns).reshape(n_trees, -1)
    game = np.einsum("tu,tsu->ts", per_quad, values * values) + np.einsum("tu,tsu->ts", per_lin, values)
    phi = game @ shapley  # (T, K)
    np.add.at(out, features[used], phi[used])


def _add_recursion_shapley(batch, decisions, pattern, n_patterns, w_quad, w_lin, out, local) -> None:
    """Like :func:`_add_subset_shapley`, through the two-particle recursion."""
    n_trees = decisions.shape[0]
    used = batch.features >= 0
    if local:
        ones, zeros = np.ones((n_trees, n_patterns)), np.zeros((n_trees, n_patterns))
        unit_quad = _recursion.recursion_gradients(batch, decisions, ones, zeros)  # (T, U, K)
        unit_lin = _recursion.recursion_gradients(batch, decisions, zeros, ones)
        trees = np.arange(n_trees)[None, :]
        phi = w_quad[:, :, None] * unit_quad[trees, pattern] + w_lin[:, :, None] * unit_lin[trees, pattern]
        _scatter_local(phi, batch.features, out)
        return
    flat = (pattern + np.arange(n_trees) * n_patterns).ravel()
    per_quad = np.bincount(flat, weights=w_quad.ravel(), minlength=n_trees * n_patterns).reshape(n_trees, -1)
    per_lin = np.bincount(flat, weights=w_lin.ravel(), minlength=n_trees * n_patterns).reshape(n_trees, -1)
    phi = _recursion.recursion_gradients(batch, decisions, per_quad, per_lin).sum(axis=1)  # (T, K)
    np.add.at(out, batch.features[used], phi[used])


def _scatter_local(phi: np.ndarray, features: np.ndarray, out: np.ndarray) -> None:
    """Add per-row player values ``phi (n, T, K)`` into ``out (n, p)`` columns ``features (T, K)``."""
    used = features >= 0
    columns, position = np.unique(features[used], return_inverse=True)
    n_rows = phi.shape[0]
    keys = (np.arange(n_rows)[:, None] * len(columns) + position[None, :]).ravel()
    dense = np.bincount(keys, weights=phi[:, used].ravel(), minlength=n_rows * len(columns))
    out[:, columns] += dense.reshape(n_rows, len(columns))


def distinct_rows(decisions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First occurrence and inverse map of each distinct row of split decisions."""
    _, first, inverse = np.unique(_pattern_keys(decisions), return_index=True, return_inverse=True)
    return first, inverse.ravel()


def build_units(forest: Forest, strategy: str = "auto") -> list:
    """Group a forest's trees into units, in order; single-leaf trees only shift the mean.

    ``strategy`` forces a kernel for testing: ``"lca"`` sends every tree through
    the LCA kernel, ``"enumerate"`` / ``"recursion"`` send every eligible tree
    through subset enumeration / the two-particle recursion.
    """
    nodes = forest.nodes
    kinds = _kinds(nodes, strategy)
    depths, means = nodes.tree_depth, nodes.tree_mean
    units: list = []
    start = 0
    while start < len(kinds):
        kind = kinds[start]
        if kind == "constant":
            start += 1
            continue
        if kind == "lca":
            units.append(LcaUnit(np.array([start]), means[[start]], compile_tree(forest.trees[start])))
            start += 1
            continue
        stop = start + 1
        while (
            stop < len(kinds)
            and stop - start < _BATCH_TREES
            and kinds[stop] == kind
            and (kind == "heap" or depths[stop] == depths[start])
        ):
            stop += 1
        index = np.arange(start, stop)
        batch = _enumerate.heap_layout(nodes, index, int(depths[index].max()), oblivious=kind == "oblivious")
        if kind == "oblivious":
            units.append(ObliviousUnit(index, means[index], batch))
        else:
            method = strategy if strategy in ("enumerate", "recursion") else "auto"
            units.append(HeapUnit(index, means[index], batch, method))
        start = stop
    return units


def _kinds(nodes: NodeArrays, strategy: str) -> list[str]:
    depth = nodes.tree_depth
    internal = (nodes.left >= 0) & (nodes.depth >= 0)
    ordered = np.sort(np.where(internal, nodes.feature, -1), axis=1)
    players = np.sum((ordered[:, 1:] != ordered[:, :-1]) & (ordered[:, 1:] >= 0), axis=1) + (ordered[:, 0] >= 0)
    oblivious = _enumerate.oblivious_trees(nodes)
    kinds = np.full(len(depth), "lca", dtype=object)
    if strategy != "lca":
        # shallow trees all go to heap batches (symmetric or not) so that batches stay long
        forced = strategy in ("enumerate", "recursion")
        shallow = (depth <= _HEAP_DEPTH) | (forced & (depth <= 4))
        small_oblivious = oblivious & ~shallow & ((depth + players <= 16) | forced)
        kinds[shallow] = "heap"
        kinds[small_oblivious] = "oblivious"
    kinds[depth == 0] = "constant"
    return list(kinds)
