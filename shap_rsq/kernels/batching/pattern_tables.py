"""A batch of trees' per-pattern tables and the rows: cells, weights summed per cell, values scattered.

A batch of small trees keeps its tables as ``(T, U)`` (or ``(T, U, K)``) arrays over each tree's
``U`` split patterns.  A row reaches tree ``t`` through one *cell*, ``t * U + pattern``: its
weights are summed per cell with one ``bincount`` (global values), or each row gathers its cells'
values and they are added into the ``(n, p)`` output at the trees' columns (per-row values), with
a few NumPy calls for the whole batch whatever its trees.
"""

from __future__ import annotations

import numpy as np

from .sparse import add_pattern_values

__all__ = ["add_local", "add_players", "pattern_weights", "scatter_local", "tree_cells", "weighted_units"]


def tree_cells(pattern: np.ndarray, n_patterns: int) -> np.ndarray:
    """``(n, T)`` flat index ``t * n_patterns + pattern`` into per-tree pattern tables ``(T, n_patterns)``."""
    cell = pattern.astype(np.intp)
    cell += np.arange(pattern.shape[1]) * n_patterns
    return cell


def pattern_weights(cell: np.ndarray, n_patterns: int, w_quad: np.ndarray, w_lin: np.ndarray):
    """Row weights ``(n, T)`` summed per tree and pattern: ``(T, n_patterns)`` for each game part."""
    n_trees = cell.shape[1]
    flat = cell.ravel()
    size = n_trees * n_patterns
    return tuple(np.bincount(flat, weights=w.ravel(), minlength=size).reshape(n_trees, -1) for w in (w_quad, w_lin))


def add_players(phi: np.ndarray, features: np.ndarray, out: np.ndarray) -> None:
    """Add player values ``phi (T, K)`` into ``out (p,)`` at columns ``features (T, K)``."""
    used = features >= 0
    np.add.at(out, features[used], phi[used])


def add_local(
    unit_quad, unit_lin, cell, w_quad, w_lin, features: np.ndarray, out: np.ndarray, columns_per_player: int
) -> None:
    """Add per-row values ``w_quad G_quad + w_lin G_lin`` at ``cell`` (flat ``t, u`` into the unit
    tables ``(T, U, K)``) into ``out (n, p)`` at columns ``features (T, K)``.

    When the batch reads at most ``columns_per_player`` columns per player of a tree
    (``Tuning.local_columns_per_player``), one sparse product: each row adds ``2 T`` table rows
    laid out over those columns.  Otherwise (wide data, each tree
    on its own few of thousands of columns) the ``(n, T, K)`` values are gathered and summed per
    column.
    """
    used = features >= 0
    columns, position = np.unique(features[used], return_inverse=True)
    if len(columns) > columns_per_player * features.shape[1]:
        scatter_local(weighted_units(unit_quad, unit_lin, cell, w_quad, w_lin), features, out)
        return
    n_trees, n_units = unit_quad.shape[:2]
    tree, player = np.nonzero(used)
    tables = []
    for unit in (unit_quad, unit_lin):
        table = np.zeros((n_trees, n_units, len(columns)))
        # a tree's players are distinct columns: a plain assignment, no sums
        table[tree, :, position] = unit[tree, :, player]
        tables.append(table.reshape(n_trees * n_units, -1))
    add_pattern_values(out, columns, cell, (w_quad, tables[0]), (w_lin, tables[1]))


def weighted_units(unit_quad, unit_lin, cell, w_quad, w_lin) -> np.ndarray:
    """Per-row values ``(n, T, K)`` from per-pattern unit gradients ``(T, U, K)`` at ``cell`` (flat ``t, u``)."""
    n_players = unit_quad.shape[2]
    quad, lin = unit_quad.reshape(-1, n_players)[cell], unit_lin.reshape(-1, n_players)[cell]
    return w_quad[:, :, None] * quad + w_lin[:, :, None] * lin


def scatter_local(phi: np.ndarray, features: np.ndarray, out: np.ndarray) -> None:
    """Add per-row player values ``phi (n, T, K)`` into ``out (n, p)`` columns ``features (T, K)``."""
    used = features >= 0
    columns, position = np.unique(features[used], return_inverse=True)
    n_rows = phi.shape[0]
    keys = (np.arange(n_rows)[:, None] * len(columns) + position[None, :]).ravel()
    dense = np.bincount(keys, weights=phi[:, used].ravel(), minlength=n_rows * len(columns))
    out[:, columns] += dense.reshape(n_rows, len(columns))
