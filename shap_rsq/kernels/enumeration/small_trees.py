"""Units of work for consecutive small trees, each on the cube of its split patterns (or, for
depth-4 heaps, on the patterns that occur), by subset enumeration or the two-particle recursion.

Every unit answers two questions for a chunk of rows: what each of its trees
predicts (:meth:`prepare`), and, given the row weights of each tree's game,
what Shapley values those games add (:meth:`contribute`).  Units whose games
depend on a row only through a small cube of patterns return the weights summed
per pattern instead; the engine adds them up over chunks and hands the total to
:meth:`finish`.  The engine owns the residuals that turn predictions into weights.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import numpy as np

from ...tuning import DEFAULT_TUNING, Tuning
from ..batching.pattern_tables import add_local, add_players, pattern_weights, scatter_local, tree_cells, weighted_units
from ..batching.sparse import offsets
from ..recursion import pattern_recursion, pattern_rows
from . import split_patterns

__all__ = ["HeapUnit", "ObliviousUnit"]


@dataclass
class HeapUnit:
    """Consecutive trees in heap layout, evaluated on the cube of all their split patterns.

    A row enters a tree only through its split pattern, one of ``2^N`` (``N`` heap
    splits).  Every table over the cube is row-independent and computed once per unit;
    rows only add their weights into the cube (global values) or gather per-pattern
    values (local values), so the cost past routing does not grow with ``n``.  An
    ``observed`` unit (depth-4 heaps: a cube of 2^15) runs its root on the patterns that occur.

    ``recursion`` says, per tree, whether it takes the two-particle recursion rather than
    subset enumeration: ``engine.routing`` chooses (both are exact).
    """

    trees: np.ndarray
    means: np.ndarray
    batch: split_patterns.HeapBatch
    recursion: np.ndarray  # (T,) bool: the recursion, else subset enumeration
    observed: bool = False  # the root on the patterns that occur, not on the whole cube
    tuning: Tuning = DEFAULT_TUNING
    _tables: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _fresh: list = field(default_factory=list, init=False, repr=False, compare=False)  # side tables of this call
    # tells this unit's tables apart in a worker's cache (``engine.worker_plans``); copies keep it
    token: str = field(default_factory=lambda: uuid.uuid4().hex, repr=False, compare=False)

    # milliseconds for hundreds of trees (a few a tree for per-row values on 10,000 rows): never
    # worth another process on their own; they go along in the blocks of a forest that is
    parallel_work = 0.0
    compiled_work = None  # nothing compiled apart from the tables: ``work`` is the estimate

    @property
    def work(self) -> float:
        """``2^(2 depth - 1)`` a tree, in the LCA kernel's measure (``lca_work``, about 300 for a
        depth-4 tree): per row, a batched depth-4 tree took 0.3-0.6 times a depth-4 tree through
        the LCA kernel and a depth-3 one 0.02-0.1 times (XGBoost on 1,000-10,000 rows, per-row
        shares and ``rsq``).  Counting the cube, ``2^(depth + players)``, weighed a depth-4 tree
        as 30 LCA trees, and the blocks of a booster that mixes them were 1.6x apart."""
        return float(len(self.trees) << (2 * self.batch.depth - 1))

    @property
    def n_patterns(self) -> int:
        return 1 << ((1 << self.batch.depth) - 1)

    @property
    def local_tabulated(self) -> bool:
        """Whether per-row values have their per-pattern tables (made on the first such call)."""
        return "local" in self._tables

    def chunk_rows(self) -> int:
        splits = len(self.trees) * ((1 << self.batch.depth) - 1)
        return max(self.tuning.min_chunk_rows, self.tuning.chunk_elements_within // splits)

    def prepare(self, X: np.ndarray, dtype) -> tuple[tuple, np.ndarray]:
        keys = split_patterns.heap_keys(self.batch, X, dtype)
        return (tree_cells(keys, self.n_patterns),), self._predictions(keys)

    def contribute(self, state, w_quad: np.ndarray, w_lin: np.ndarray, out: np.ndarray, local: bool):
        (cell,) = state
        if not local:
            return pattern_weights(cell, self.n_patterns, w_quad, w_lin)
        if self.observed:
            unit_quad, unit_lin, cell = self._observed_tables(cell)
        else:
            unit_quad, unit_lin = self._local_tables()
        add_local(
            unit_quad, unit_lin, cell, w_quad, w_lin, self.batch.features, out, self.tuning.local_columns_per_player
        )
        return None

    def _observed_tables(self, cell: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(T, C, K)`` Shapley values of ``m_S^2`` and of ``m_S`` on the patterns of ``cell`` (at
        most ``C`` a tree; a 2^15 cube is out of reach), and each row's cell in those tables."""
        # the cube is 2^15 a tree and batches hold 2^20 / 2^15 trees: mark the cells seen, no sort
        seen = np.zeros(len(self.trees) * self.n_patterns, dtype=bool)
        seen[cell.ravel()] = True
        distinct = np.flatnonzero(seen)
        tree, pattern = np.divmod(distinct, self.n_patterns)
        count = np.bincount(tree, minlength=len(self.trees))
        rank = np.arange(len(distinct)) - offsets(count)[tree]
        patterns = np.zeros((len(self.trees), int(count.max())), dtype=np.int64)  # pads with pattern 0
        patterns[tree, rank] = pattern
        shape = (*patterns.shape, self.batch.n_players)
        unit_quad, unit_lin = np.zeros(shape), np.zeros(shape)
        for _, k, group in self.method_groups():
            batch, key = self.batch.select(group, k), ("sides", k, group[0])
            if key not in self._tables:  # row-independent: kept (keep_tables_within)
                self._tables[key] = pattern_rows.side_tables(batch)
                self._fresh.append(key)
            tables = self._tables[key]
            # each pattern gathers its sides' (columns, states x nodes) derivatives: in blocks
            per_pattern = len(group) * tables.cross[0, 0, 0].size
            step = max(1, self.tuning.root_elements_within // per_pattern)
            for start in range(0, patterns.shape[1], step):
                block = slice(start, start + step)
                quad, lin = pattern_rows.pattern_unit_gradients(batch, tables, patterns[group, block])
                unit_quad[group, block, :k], unit_lin[group, block, :k] = quad, lin
        local_cell = np.zeros(len(seen), dtype=np.int64)
        local_cell[distinct] = tree * patterns.shape[1] + rank
        return unit_quad, unit_lin, local_cell[cell]

    @property
    def side_tables(self) -> dict:
        """The per-row side tables the unit keeps, by key
        (:func:`~shap_rsq.kernels.recursion.pattern_rows.side_tables`)."""
        return {key: table for key, table in self._tables.items() if key[0] == "sides"}

    @property
    def table_bytes(self) -> int:
        """Bytes of the per-row side tables the unit keeps."""
        return sum(table.nbytes for table in self.side_tables.values())

    def keep_tables_within(self, room: int) -> int:
        """Keep the side tables made since the last call if they fit in ``room`` bytes, else drop
        them (they take 1-3 ms a tree to make, and about 0.5 MB a tree of 3 repeated features);
        the bytes kept."""
        size = sum(self._tables[key].nbytes for key in self._fresh)
        if size > room:
            for key in self._fresh:
                del self._tables[key]
            size = 0
        self._fresh.clear()
        return size

    def finish(self, weights: tuple[np.ndarray, np.ndarray], out: np.ndarray) -> None:
        """Add the values of the games weighted by ``weights``, each ``(T, 2^N)`` summed over rows."""
        per_quad, per_lin = weights
        for use_recursion, k, group in self.method_groups():
            batch = self.batch.select(group, k)
            if use_recursion:
                phi = pattern_recursion.summed_recursion_gradients(
                    batch, per_quad[group], per_lin[group], self.tuning.root_elements_within, self.observed
                )
            else:
                phi = self._subset_tables(use_recursion, k, group).summed(per_quad[group], per_lin[group])
            add_players(phi, batch.features, out)

    def _predictions(self, keys: np.ndarray) -> np.ndarray:
        """``(n, T)`` each tree's prediction on rows of patterns ``keys``."""
        if self.observed:  # a cube too large to tabulate
            return np.take_along_axis(
                self.batch.leaf_value.T, split_patterns.pattern_leaf(self.batch.depth, keys), axis=0
            )
        if "values" not in self._tables:
            # in heap layout a pattern reaches the same bottom slot in every tree
            self._tables["values"] = self.batch.leaf_value[
                :, split_patterns.pattern_leaf(self.batch.depth, np.arange(self.n_patterns))
            ]
        return self._tables["values"].ravel()[tree_cells(keys, self.n_patterns)]

    def _cube(self) -> np.ndarray:
        """``(2^N, N)`` the decisions of every pattern."""
        return (np.arange(self.n_patterns)[:, None] >> split_patterns.pattern_bits(self.batch.depth)) & 1 == 1

    def _subset_tables(self, use_recursion: bool, k: int, group: np.ndarray) -> _SubsetTables:
        name = ("subsets", use_recursion, k)
        if name not in self._tables:
            batch = self.batch.select(group, k)
            decisions = np.broadcast_to(self._cube(), (len(group), *self._cube().shape))
            self._tables[name] = _SubsetTables(split_patterns.subset_values(batch, decisions), None, k)
        return self._tables[name]

    def _local_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """``(T, 2^N, K)`` Shapley values of ``m_S^2`` and of ``m_S`` on every pattern."""
        if "local" not in self._tables:
            shape = (len(self.trees), self.n_patterns, self.batch.n_players)
            unit_quad, unit_lin = np.zeros(shape), np.zeros(shape)
            for use_recursion, k, group in self.method_groups():
                if use_recursion:
                    batch = self.batch.select(group, k)
                    decisions = np.broadcast_to(self._cube(), (len(group), *self._cube().shape))
                    ones, zeros = np.ones(decisions.shape[:2]), np.zeros(decisions.shape[:2])
                    quad = pattern_recursion.recursion_gradients(batch, decisions, ones, zeros)
                    lin = pattern_recursion.recursion_gradients(batch, decisions, zeros, ones)
                else:
                    quad, lin = self._subset_tables(use_recursion, k, group).units()
                unit_quad[group, :, :k], unit_lin[group, :, :k] = quad, lin
            self._tables["local"] = unit_quad, unit_lin
        return self._tables["local"]

    def method_groups(self):
        """Trees by exact method: ``(use_recursion, players, trees)``.

        The recursion works over ``2^R`` states of a tree's ``R`` repeated players, enumeration over
        ``2^K`` subsets of its ``K`` players.  Trees with the same ``K`` (subsets) or ``R``
        (recursion) are evaluated together, with ``players`` columns.
        """
        players = self.batch.players_per_tree
        repeated = pattern_recursion.repeated_players(self.batch).sum(axis=1)
        recurse = self.recursion
        size = np.where(recurse, repeated, players)
        for use_recursion, k in sorted({(bool(r), int(s)) for r, s in zip(recurse, size, strict=True)}):
            group = np.flatnonzero((recurse == use_recursion) & (size == k))
            yield use_recursion, self.batch.n_players if use_recursion else k, group


@dataclass
class ObliviousUnit:
    """Consecutive symmetric trees of one depth; rows fall into the 2^depth level-bit patterns."""

    trees: np.ndarray
    means: np.ndarray
    batch: split_patterns.HeapBatch
    tuning: Tuning = DEFAULT_TUNING
    tables: _SubsetTables = field(init=False)

    parallel_work = 0.0  # as for HeapUnit
    compiled_work = None

    def __post_init__(self):
        # (T, 2^D known-level masks, 2^D patterns), row-independent
        self.tables = _SubsetTables(*split_patterns.oblivious_level_values(self.batch), self.batch.n_players)

    @property
    def work(self) -> float:
        return float(self.tables.values.size)

    @property
    def n_patterns(self) -> int:
        return 1 << self.batch.depth

    @property
    def local_tabulated(self) -> bool:
        """Whether per-row values have their per-pattern tables (made on the first such call)."""
        return self.tables.tabulated

    def chunk_rows(self) -> int:
        return max(
            self.tuning.min_chunk_rows, self.tuning.chunk_elements_within // (len(self.trees) * self.batch.depth)
        )

    def prepare(self, X: np.ndarray, dtype) -> tuple[tuple, np.ndarray]:
        depth = self.batch.depth
        level = (1 << np.arange(depth)) - 1  # first heap node of each level stands for the level
        batch = self.batch
        # pattern bits: 1 = right, level 0 most significant
        left = split_patterns.decision_keys(
            X,
            batch.feature[:, level],
            batch.threshold[:, level],
            batch.default_left[:, level],
            dtype,
            np.arange(depth)[::-1],
        )
        cell = tree_cells(((1 << depth) - 1) - left, 1 << depth)
        return (cell,), batch.leaf_value.ravel()[cell]

    def contribute(self, state, w_quad: np.ndarray, w_lin: np.ndarray, out: np.ndarray, local: bool):
        (cell,) = state
        if not local:
            return pattern_weights(cell, self.n_patterns, w_quad, w_lin)
        unit_quad, unit_lin = self.tables.units()
        scatter_local(weighted_units(unit_quad, unit_lin, cell, w_quad, w_lin), self.batch.features, out)
        return None

    def finish(self, weights: tuple[np.ndarray, np.ndarray], out: np.ndarray) -> None:
        add_players(self.tables.summed(*weights), self.batch.features, out)


class _SubsetTables:
    """Shapley values of ``w_quad m_S^2 + w_lin m_S`` from tables ``values (T, M, U)`` of ``m_S`` on
    every pattern ``u``; subset ``S`` of the ``K`` players reads row ``rows[t, S]`` (all ``2^K`` subsets
    by default; symmetric trees tabulate by known levels, which several subsets may share)."""

    def __init__(self, values: np.ndarray, rows: np.ndarray | None, n_players: int):
        self.values = values
        self.rows = rows
        self.shapley = split_patterns.shapley_matrix(n_players)
        self._units: tuple[np.ndarray, np.ndarray] | None = None

    def summed(self, per_quad: np.ndarray, per_lin: np.ndarray) -> np.ndarray:
        """``(T, K)`` from the weights summed per pattern ``(T, U)``."""
        game = np.einsum("tu,tmu->tm", per_quad, self.values * self.values)
        game += np.einsum("tu,tmu->tm", per_lin, self.values)
        if self.rows is not None:
            game = np.take_along_axis(game, self.rows, axis=1)
        return game @ self.shapley

    @property
    def tabulated(self) -> bool:
        """Whether :meth:`units` has made its tables."""
        return self._units is not None

    def units(self) -> tuple[np.ndarray, np.ndarray]:
        """``(T, U, K)`` Shapley values of ``m_S^2`` and of ``m_S`` on every pattern."""
        if self._units is None:
            squares = self.values * self.values
            if self.rows is None:
                self._units = (
                    np.einsum("tsu,sk->tuk", squares, self.shapley),
                    np.einsum("tsu,sk->tuk", self.values, self.shapley),
                )
            else:  # the Shapley weights of the subsets that share each row, summed
                n_trees, n_rows = self.values.shape[:2]
                weights = np.zeros((n_trees, n_rows, self.shapley.shape[1]))
                np.add.at(weights, (np.arange(n_trees)[:, None], self.rows), self.shapley[None])
                self._units = (
                    np.einsum("tmu,tmk->tuk", squares, weights),
                    np.einsum("tmu,tmk->tuk", self.values, weights),
                )
        return self._units
