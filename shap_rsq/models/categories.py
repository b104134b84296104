"""Categorical splits as splits on derived 0/1 routing columns.

A split on a set of categories sends a row one way when its category is in the set and the other
way otherwise; NaN goes where the library sends it.  The path-dependent game needs no order of
the categories: a known feature routes its row, an unknown one averages the children by cover.
So each distinct categorical split becomes a *routing column*, ``0.0`` where the row goes left and
``1.0`` where it goes right, split at ``0.5``, whose player is the categorical feature.  The kernels
then read columns and players as they do for grouped features (the columns route rows, the
players toss the coins), and every kernel, per-row value, interaction and group works unchanged.

Two steps turn input values into routing columns:

1. :class:`~shap_rsq.models.category_codes.CategoricalColumn` maps a feature's input values to
   the *codes* the model's splits test, matched by value (a pandas column whose categories come
   in another order, or with other categories, reads the same), with NaN for missing values.
   This happens once, when the rows are checked: the rows then hold codes where they held
   categories.
2. :class:`CategoricalRouting` maps codes to the routing columns inside the engine: the
   ``(n, p + D)`` routing rows exist only for a call (their size counts against the budget).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

__all__ = ["CategoricalModel", "CategoricalRouting", "CategorySplit"]


@dataclass(frozen=True)
class CategorySplit:
    """A split on a categorical feature: every code goes one way but the ``exceptions``.

    Attributes
    ----------
    feature : int
        The split feature.
    exceptions : frozenset of int
        The codes that go the other way from the rest.
    rest_left : bool
        Where codes outside ``exceptions`` (and unseen ones) go.
    missing_left : bool
        Where NaN goes.
    """

    feature: int
    exceptions: frozenset
    rest_left: bool = False
    missing_left: bool = False

    def key(self) -> tuple[tuple, bool]:
        """The routing column this split reads, and whether its children swap.

        A split whose rest goes left reads the column of the same partition with the rest on the
        right and its children swapped: both are one column.
        """
        missing_left = self.missing_left != self.rest_left
        return (self.feature, tuple(sorted(self.exceptions)), missing_left), self.rest_left


@dataclass(frozen=True)
class CategoricalRouting:
    """The routing columns of a forest: the first ``n_features`` are the model's features, the
    others each hold one categorical split's side (``0.0`` left, ``1.0`` right).

    Attributes
    ----------
    n_features : int
        The model's features.
    column_feature : ndarray of int
        The feature each routing column reads (``arange(n_features)`` first).
    blocks : tuple
        Per categorical feature ``(feature, columns, codes, table)``: its routing columns, the
        sorted codes its splits name, and the side ``(len(codes) + 2, len(columns))`` of each
        code, of any other code, and of NaN.
    matched : tuple of str
        The categorical features whose values are matched to the model's categories by value when
        the rows are checked (rows that skip that check, dask blocks, must not hold them).
    """

    n_features: int
    column_feature: np.ndarray
    blocks: tuple = field(default=())
    matched: tuple = field(default=())

    @property
    def width(self) -> int:
        """The number of routing columns."""
        return len(self.column_feature)

    @classmethod
    def of(cls, n_features: int, keys: list[tuple]) -> CategoricalRouting:
        """Routing columns for the distinct split ``keys`` (:meth:`CategorySplit.key`), sorted."""
        column_feature = np.concatenate([np.arange(n_features), [k[0] for k in keys]]).astype(np.int64)
        blocks = []
        for j in sorted({k[0] for k in keys}):
            mine = [(n_features + i, k) for i, k in enumerate(keys) if k[0] == j]
            codes = np.array(sorted({c for _, k in mine for c in k[1]}), dtype=np.float64)
            table = np.ones((len(codes) + 2, len(mine)))
            for d, (_, (_, exceptions, missing_left)) in enumerate(mine):
                table[np.searchsorted(codes, exceptions), d] = 0.0
                table[-1, d] = 0.0 if missing_left else 1.0
            blocks.append((j, np.array([c for c, _ in mine], dtype=np.int64), codes, table))
        return cls(n_features, column_feature, tuple(blocks))

    def rows(self, X: np.ndarray) -> np.ndarray:
        """The routing rows of rows ``X`` (codes in the categorical features).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The rows, as checked.

        Returns
        -------
        ndarray of shape (n_samples, width)
            ``X`` followed by each split's side, in ``X``'s dtype.
        """
        out = np.empty((X.shape[0], self.width), dtype=X.dtype)
        out[:, : self.n_features] = X
        for j, columns, codes, table in self.blocks:
            # a feature's columns are side by side (:meth:`of` takes keys sorted by feature)
            out[:, columns[0] : columns[-1] + 1] = table.astype(X.dtype)[_code_index(X[:, j], codes)]
        return out


def _code_index(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Row of each value in a split table: its code's, ``len(codes)`` for any other, the last for NaN."""
    values = values.astype(np.float64)
    index = np.searchsorted(codes, values)
    found = index < len(codes)
    found[found] = codes[index[found]] == values[found]
    index = np.where(found, index, len(codes))
    index[np.isnan(values)] = len(codes) + 1
    return index


@dataclass(frozen=True)
class CategoricalModel:
    """A model's categorical features and splits.

    Attributes
    ----------
    columns : tuple of CategoricalColumn
        How each categorical feature's input becomes codes (:mod:`.category_codes`).
    splits : dict
        ``(tree, node) -> CategorySplit`` in the numbering of the forest as read.
    """

    columns: tuple
    splits: dict
    routing: CategoricalRouting | None = None  # set where the trees read routing columns already

    @property
    def features(self) -> dict:
        """The categorical features by position."""
        return {c.feature: c for c in self.columns}

    def already_routed(self, routing: CategoricalRouting) -> CategoricalModel:
        """The same features, for trees whose splits read ``routing``'s columns already."""
        return replace(self, splits={}, routing=routing)

    def routed(self, forest):
        """``forest`` with its categorical splits on routing columns (:class:`CategoricalRouting`).

        Parameters
        ----------
        forest : Forest
            The trees as read (node numbering of :attr:`splits`).

        Returns
        -------
        Forest
            The same function of the routing rows.
        """
        matched = tuple(c.name for c in self.columns if c.categories is not None or c.reads_text)
        if self.routing is not None:
            routing = replace(self.routing, matched=matched)
            return replace(forest, routing=routing, n_features=routing.width, players=routing.column_feature)
        nodes = forest.nodes
        at = [(t, u, s) for (t, u), s in self.splits.items() if t < forest.n_trees]
        keys = sorted({s.key()[0] for _, _, s in at})  # by feature: each feature's columns side by side
        routing = replace(CategoricalRouting.of(forest.n_features, keys), matched=matched)
        players = routing.column_feature
        if not at:
            return replace(forest, routing=routing, n_features=routing.width, players=players)
        column = {k: forest.n_features + i for i, k in enumerate(keys)}
        t = np.array([a[0] for a in at])
        u = np.array([a[1] for a in at])
        swap = np.array([s.key()[1] for _, _, s in at])
        feature, threshold = nodes.feature.copy(), nodes.threshold.copy()
        left, right, default = nodes.left.copy(), nodes.right.copy(), nodes.default.copy()
        feature[t, u] = [column[s.key()[0]] for _, _, s in at]
        threshold[t, u] = 0.5
        old_left, old_right = nodes.left[t, u], nodes.right[t, u]
        left[t, u] = np.where(swap, old_right, old_left)
        right[t, u] = np.where(swap, old_left, old_right)
        default[t, u] = left[t, u]  # routing columns hold no NaN: the default child is never taken
        routed = replace(nodes, feature=feature, threshold=threshold, left=left, right=right, default=default)
        return replace(forest, nodes=routed, routing=routing, n_features=routing.width, players=players)
