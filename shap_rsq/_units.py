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


def _bit_keys(bits: np.ndarray) -> np.ndarray:
    """``sum_j bits[..., j] << j`` for at most 63 bits, in the narrowest unsigned type that holds it.

    One shifted OR per bit over the leading axes: for the few bits of a shallow tree this is
    about ten times faster than ``np.packbits`` along the last axis.
    """
    n_bits = bits.shape[-1]
    dtype = next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if np.iinfo(t).bits >= n_bits)
    key = bits[..., 0].astype(dtype)
    for j in range(1, n_bits):
        key |= bits[..., j].astype(dtype) << dtype(j)
    return key


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
        key = _bit_keys(left).astype(np.int64)  # (n, T) < 2^N
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
        trees = np.arange(len(self.trees))[:, None]
        leaf = _enumerate.heap_leaf(self.batch, np.swapaxes(decisions, 0, 1)).T  # (T, U)
        pattern_value = self.batch.leaf_value[trees, leaf]  # (T, U)
        prediction = pattern_value.ravel()[pattern + trees.T * pattern_value.shape[1]]
        return (pattern, decisions, n_patterns), prediction

    def contribute(self, state, w_quad: np.ndarray, w_lin: np.ndarray, out: np.ndarray, local: bool) -> None:
        pattern, decisions, n_patterns = state
        width = max(1, int(n_patterns.max()))
        per_pattern = None if local else _pattern_weights(pattern, width, w_quad, w_lin)
        for use_recursion, k, group in self._groups():
            cut = max(1, int(n_patterns[group].max()))
            if use_recursion:
                batch = self.batch.select(group, self.batch.n_players)
                tables = _RecursionTables(batch, decisions[group, :cut])
            else:
                batch = self.batch.select(group, k)
                tables = _SubsetTables(_enumerate.subset_values(batch, decisions[group, :cut]), k)
            if local:
                columns = slice(None) if len(group) == len(self.trees) else group
                phi = tables.local(pattern[:, columns], w_quad[:, columns], w_lin[:, columns])
                _scatter_local(phi, batch.features, out)
            else:
                phi = tables.summed(per_pattern[0][group, :cut], per_pattern[1][group, :cut])
                _add_players(phi, batch.features, out)

    def _groups(self):
        """Trees by exact method and size: ``(use_recursion, size, trees)``.

        Per tree the cheaper method: ``2^K`` subsets, or the recursion over ``2^R`` states of
        its repeated features; trees sharing a method and size are evaluated together.
        """
        players = self.batch.players_per_tree
        repeated = _recursion.repeated_players(self.batch).sum(axis=1)
        recurse = (1 << repeated) * max(1, self.batch.depth) * 5 < (1 << players)
        if self.method != "auto":
            recurse = np.full(len(players), self.method == "recursion")
        size = np.where(recurse, repeated, players)
        for use_recursion, k in sorted({(bool(r), int(s)) for r, s in zip(recurse, size, strict=True)}):
            yield use_recursion, k, np.flatnonzero((recurse == use_recursion) & (size == k))


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
        # pattern bits: 1 = right, level 0 most significant
        pattern = _bit_keys(~left[:, :, ::-1]).astype(np.int64)
        prediction = batch.leaf_value[np.arange(len(self.trees)), pattern]
        return (pattern,), prediction

    def contribute(self, state, w_quad: np.ndarray, w_lin: np.ndarray, out: np.ndarray, local: bool) -> None:
        (pattern,) = state
        tables = _SubsetTables(self.values, self.batch.n_players)
        if local:
            _scatter_local(tables.local(pattern, w_quad, w_lin), self.batch.features, out)
        else:
            per_quad, per_lin = _pattern_weights(pattern, 1 << self.batch.depth, w_quad, w_lin)
            _add_players(tables.summed(per_quad, per_lin), self.batch.features, out)


def _pattern_weights(pattern: np.ndarray, n_patterns: int, w_quad: np.ndarray, w_lin: np.ndarray):
    """Row weights ``(n, T)`` summed per tree and pattern: ``(T, n_patterns)`` for each game part."""
    n_trees = pattern.shape[1]
    flat = (pattern + np.arange(n_trees) * n_patterns).ravel()
    size = n_trees * n_patterns
    return tuple(np.bincount(flat, weights=w.ravel(), minlength=size).reshape(n_trees, -1) for w in (w_quad, w_lin))


class _SubsetTables:
    """Shapley values of ``w_quad m_S^2 + w_lin m_S`` from subset tables ``values (T, 2^K, U)``."""

    def __init__(self, values: np.ndarray, n_players: int):
        self.values = values
        self.shapley = _enumerate.shapley_matrix(n_players)

    def summed(self, per_quad: np.ndarray, per_lin: np.ndarray) -> np.ndarray:
        """``(T, K)`` from the weights summed per pattern ``(T, U)``."""
        game = np.einsum("tu,tsu->ts", per_quad, self.values * self.values)
        game += np.einsum("tu,tsu->ts", per_lin, self.values)
        return game @ self.shapley

    def local(self, pattern: np.ndarray, w_quad: np.ndarray, w_lin: np.ndarray) -> np.ndarray:
        """``(n, T, K)`` for rows with patterns ``pattern (n, T)``."""
        unit_quad = np.einsum("tsu,sk->tuk", self.values * self.values, self.shapley)
        unit_lin = np.einsum("tsu,sk->tuk", self.values, self.shapley)
        return _weighted_units(unit_quad, unit_lin, pattern, w_quad, w_lin)


class _RecursionTables:
    """The same through the two-particle recursion over split decisions ``(T, U, N)``."""

    def __init__(self, batch: _enumerate.HeapBatch, decisions: np.ndarray):
        self.batch = batch
        self.decisions = decisions

    def summed(self, per_quad: np.ndarray, per_lin: np.ndarray) -> np.ndarray:
        return _recursion.recursion_gradients(self.batch, self.decisions, per_quad, per_lin).sum(axis=1)

    def local(self, pattern: np.ndarray, w_quad: np.ndarray, w_lin: np.ndarray) -> np.ndarray:
        ones, zeros = np.ones(self.decisions.shape[:2]), np.zeros(self.decisions.shape[:2])
        unit_quad = _recursion.recursion_gradients(self.batch, self.decisions, ones, zeros)  # (T, U, K)
        unit_lin = _recursion.recursion_gradients(self.batch, self.decisions, zeros, ones)
        return _weighted_units(unit_quad, unit_lin, pattern, w_quad, w_lin)


def _weighted_units(unit_quad, unit_lin, pattern, w_quad, w_lin) -> np.ndarray:
    """Per-row values ``(n, T, K)`` from per-pattern unit gradients ``(T, U, K)``."""
    trees = np.arange(pattern.shape[1])[None, :]
    return w_quad[:, :, None] * unit_quad[trees, pattern] + w_lin[:, :, None] * unit_lin[trees, pattern]


def _add_players(phi: np.ndarray, features: np.ndarray, out: np.ndarray) -> None:
    """Add player values ``phi (T, K)`` into ``out (p,)`` at columns ``features (T, K)``."""
    used = features >= 0
    np.add.at(out, features[used], phi[used])


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
