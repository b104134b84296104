"""Tree tables: the trees of a model as plain arrays, read from shap's ``TreeEnsemble``.

shap already parses every supported model family into dense, padded arrays
(children, default child, feature, threshold, value, cover).  This module only
trims them into one :class:`TreeTable` per tree and offers the two row-level
operations every other module needs: routing rows to leaves and predicting.  Many trees padded
to one table are :class:`~shap_rsq.models.node_arrays.NodeArrays`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .categories import CategoricalRouting
from .node_arrays import NodeArrays, goes_left

__all__ = ["Forest", "TreeTable"]


@dataclass(frozen=True)
class TreeTable:
    """One regression tree as node arrays (node 0 is the root).

    Attributes
    ----------
    left, right : ndarray of int
        Child indices, ``-1`` at leaves.
    default : ndarray of int
        Child taken when the split feature is missing (NaN).
    feature : ndarray of int
        Split feature of each internal node.
    threshold : ndarray of float
        A row goes left when ``x[feature] <= threshold``.
    value : ndarray of float
        Leaf values, already scaled (learning rate, ``1/T`` of a forest).
    cover : ndarray of float
        Training weight that reached each node.
    players : ndarray of int or None
        Which player of the game each feature is (grouped features share one); ``None``: each
        feature is its own player.
    """

    left: np.ndarray
    right: np.ndarray
    default: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    value: np.ndarray
    cover: np.ndarray
    players: np.ndarray | None = None

    @property
    def player(self) -> np.ndarray:
        """The player of each node's split: the coin a subset of players tosses there.

        Kernels read columns through :attr:`feature` and coins through this: splits on features
        of one group share a coin, so the group is one player of the game.
        """
        return self.feature if self.players is None else self.players[self.feature]

    @property
    def is_leaf(self) -> np.ndarray:
        """Whether each node is a leaf."""
        return self.left < 0

    @property
    def n_nodes(self) -> int:
        """The number of nodes."""
        return len(self.left)

    def leaf_of(self, X: np.ndarray, dtype: np.dtype | None = None, rows: np.ndarray | None = None) -> np.ndarray:
        """Index of the leaf each row of ``X`` reaches (NaN follows the default child).

        Values are compared in ``dtype`` (the model's input precision) when given.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The rows.
        dtype : dtype, optional
            The precision thresholds are compared in.
        rows : ndarray of int, optional
            The rows of ``X`` to route, in this order (all of them by default): only their split
            values are read, never whole rows of a wide ``X``.

        Returns
        -------
        ndarray of int of shape (n_samples,) or (len(rows),)
            Node indices of the leaves.
        """
        source = np.arange(X.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
        node = np.zeros(len(source), dtype=np.int64)
        # the rows still on their way down and the split each one is at: gathers and steps touch
        # those only, with no mask over every row at each level
        moving = np.flatnonzero(self.left[node] >= 0)  # every row, or none at a single leaf
        at = node[moving]
        default_left = self.default == self.left
        step = np.stack([self.right, self.left], axis=1).ravel()  # node 2u + goes left: the child
        while moving.size:
            x = X[source[moving], self.feature[at]]
            x = x if dtype is None else x.astype(dtype, copy=False)
            at = step[2 * at + goes_left(x, self.threshold[at], default_left[at])]
            node[moving] = at
            inner = self.left[at] >= 0
            moving, at = moving[inner], at[inner]
        return node


_NODE_FIELDS = tuple(name for name in TreeTable.__dataclass_fields__ if name != "players")  # the node arrays


@dataclass(frozen=True)
class Forest:
    """A sum of regression trees plus a constant: ``f(x) = base_offset + sum_t tree_t(x)``.

    Attributes
    ----------
    nodes : NodeArrays
        All trees' node arrays, padded to one width.
    base_offset : float
    input_dtype : numpy dtype
        Feature values are cast to this dtype before comparing with thresholds,
        exactly as the model does (float32 for scikit-learn and XGBoost).
    n_features : int
        Columns the trees read: the model's features, then any routing columns of categorical
        splits (:attr:`routing`).
    players : ndarray of int or None
        The player of each feature (see :meth:`grouped`); ``None``: every feature is a player.
    steps : ndarray of int or None
        One output's trees of a softmax: each tree's position in the model's order of the trees of
        all outputs (see :meth:`of_output`); ``None`` otherwise.
        The player of each column (see :meth:`grouped`); ``None``: every column is a player.
    routing : CategoricalRouting or None
        How the model's rows become the columns the trees read, where some splits are on sets
        of categories (:mod:`~shap_rsq.models.categories`); ``None``: the rows are the columns.
    """

    nodes: NodeArrays
    base_offset: float
    input_dtype: np.dtype
    n_features: int
    players: np.ndarray | None = None
    steps: np.ndarray | None = None
    routing: CategoricalRouting | None = None

    @classmethod
    def from_trees(cls, trees: tuple[TreeTable, ...], base_offset: float, input_dtype, n_features: int) -> Forest:
        """Stack single trees (in order) into a forest with ``base_offset``, compared in ``input_dtype``."""
        return cls(NodeArrays.stack(tuple(trees)), float(base_offset), np.dtype(input_dtype), int(n_features))

    @classmethod
    def from_ensemble(
        cls, ensemble, n_features: int, tree_limit: int | None = None, output: int = 0, tree_outputs=None
    ) -> Forest:
        """Read the padded arrays of a ``shap.explainers._tree.TreeEnsemble`` (no per-tree loop).

        ``output`` picks one output of a multi-output ensemble (a class's probability, a target).

        Parameters
        ----------
        ensemble : shap.explainers._tree.TreeEnsemble
            shap's parse of the model.
        n_features : int
            The number of features the model reads.
        tree_limit : int, optional
            Use the first ``tree_limit`` trees only.
        output : int, default=0
            Which output to read.
        tree_outputs : ndarray of int, optional
            The output each tree adds to, where shap's parse (tree ``i``'s leaf values under output
            ``i % n_outputs``) is wrong; the other trees' leaves read 0 for ``output``.

        Returns
        -------
        Forest
            The forest.
        """
        n_trees = ensemble.children_left.shape[0]
        if tree_limit is not None and 0 <= tree_limit < n_trees:
            n_trees = tree_limit
        rows = slice(0, n_trees)
        left = ensemble.children_left[rows].astype(np.int64)
        leaf = left < 0
        nodes = NodeArrays.from_padded(
            left=left,
            right=ensemble.children_right[rows].astype(np.int64),
            default=ensemble.children_default[rows].astype(np.int64),
            feature=np.where(leaf, 0, ensemble.features[rows]).astype(np.int64),
            threshold=ensemble.thresholds[rows].astype(np.float64),
            value=np.where(leaf, _leaf_values(ensemble.values[rows], output, tree_outputs), 0.0).astype(np.float64),
            cover=ensemble.node_sample_weight[rows].astype(np.float64),
            n_nodes=np.asarray(ensemble.num_nodes[rows], dtype=np.int64),
        )
        base = float(np.asarray(ensemble.base_offset, dtype=np.float64).reshape(-1)[output])
        return cls(nodes, base, np.dtype(ensemble.input_dtype), int(n_features))

    @property
    def n_trees(self) -> int:
        """The number of trees."""
        return self.nodes.left.shape[0]

    @property
    def n_players(self) -> int:
        """Players of the games: the length of every vector of Shapley values."""
        return self.n_features if self.players is None else int(self.players.max(initial=-1)) + 1

    @property
    def n_model_features(self) -> int:
        """The model's features: the width of the rows before routing (:meth:`routing_rows`)."""
        return self.n_features if self.routing is None else self.routing.n_features

    def grouped(self, players: np.ndarray) -> Forest:
        """The same trees played with ``players[j]`` as the player of the model's feature ``j``.

        Features mapped to one player share its coin: a subset of players knows all of a group's
        features or none of them.  A categorical feature's routing columns follow its player.
        """
        players = np.asarray(players, dtype=np.int64)
        width = self.n_model_features
        if players.shape != (width,) or players.min(initial=0) < 0:
            raise ValueError(f"players must map each of the {width} features to a player index >= 0.")
        if self.routing is not None:
            players = players[self.routing.column_feature]
        return dataclasses.replace(self, players=players)

    def routing_rows(self, X: np.ndarray) -> np.ndarray:
        """The columns the trees read, of the model's rows ``X`` (``X`` itself without categorical splits).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_model_features)
            Rows as checked (codes in categorical features).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The routing rows.
        """
        if self.routing is None or X.shape[1] == self.n_features:  # no routing columns, or routed already
            return X
        return self.routing.rows(X)

    @cached_property
    def columns_per_tree(self) -> float:
        """How many distinct columns a tree's splits read, on average over the trees.

        Returns
        -------
        float
            0 for a forest of stumps without splits.
        """
        distinct = self.nodes.split_players()  # the columns themselves: no players given
        return float(distinct.mean()) if len(distinct) else 0.0

    @cached_property
    def trees(self) -> tuple[TreeTable, ...]:
        """Each tree's own arrays (views of :attr:`nodes` trimmed to its node count).

        Returns
        -------
        tuple of TreeTable
            One per tree.
        """
        n = self.nodes
        return tuple(
            TreeTable(*(getattr(n, name)[t, : n.n_nodes[t]] for name in _NODE_FIELDS), players=self.players)
            for t in range(self.n_trees)
        )

    @property
    def expected_value(self) -> float:
        """The path-dependent expected prediction, ``f`` of the empty coalition: each tree's
        cover-weighted mean plus the base offset (TreeSHAP's base value)."""
        return self.base_offset + float(np.sum(self.nodes.tree_mean))

    def centred(self) -> Forest:
        """The same function with each tree's leaves centred on its cover-weighted mean.

        The means move into :attr:`base_offset`.  The games square tree values: centred, those
        are on the scale of the spread of ``y``, not of ``y`` itself, so shifting the target by
        1e8 costs no digits of the shares.

        Returns
        -------
        Forest
            The centred forest.
        """
        nodes = self.nodes
        means = nodes.tree_mean
        leaves = nodes.is_leaf & (nodes.depth >= 0)
        value = np.where(leaves, nodes.value - means[:, None], nodes.value)
        centred = NodeArrays(**{**{f: getattr(nodes, f) for f in NodeArrays.__dataclass_fields__}, "value": value})
        return dataclasses.replace(self, nodes=centred, base_offset=self.base_offset + float(np.sum(means)))

    def with_covers(self, X: np.ndarray) -> Forest:
        """The same trees with each node's cover the number of rows of ``X`` that pass through it.

        The rows are routed as the model routes them (values compared in :attr:`input_dtype`, NaN
        to the default child): shap's tree-path-dependent values on background data take their
        covers from it this way, and a game on these covers takes its conditional expectations on
        those rows instead of the training data.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The background rows, in the model's feature order.

        Returns
        -------
        Forest
            The forest with the counted covers (the rows' mean prediction is its expected value).
        """
        nodes = self.nodes
        counts = nodes.visits(np.asarray(X, dtype=np.float64), self.input_dtype)
        fields = {f: getattr(nodes, f) for f in NodeArrays.__dataclass_fields__ if f not in ("depth", "mass")}
        return dataclasses.replace(self, nodes=NodeArrays.from_padded(**{**fields, "cover": counts}))

    def without_zero_trees(self) -> Forest:
        """The same function without the trees whose leaves are all zero (at least one tree is kept).

        Returns
        -------
        Forest
            The forest, or ``self`` when every tree has a non-zero leaf.
        """
        keep = np.any(self.nodes.value != 0.0, axis=1)
        if keep.all() or not keep.any():
            return self
        nodes = NodeArrays(**{f: getattr(self.nodes, f)[keep] for f in NodeArrays.__dataclass_fields__})
        return dataclasses.replace(self, nodes=nodes)

    def of_output(self, steps: np.ndarray) -> Forest:
        """The trees at ``steps`` (one output's, in the model's order of all trees), the trees of
        this output whose leaves are all zero left out, with their positions kept as :attr:`steps`.

        Parameters
        ----------
        steps : ndarray of int
            The positions of this output's trees among all trees.

        Returns
        -------
        Forest
            The output's forest.
        """
        steps = np.asarray(steps, dtype=np.int64)
        keep = np.any(self.nodes.value[steps] != 0.0, axis=1)
        steps = steps[keep] if keep.any() else steps[:1]  # at least one tree, as without_zero_trees
        nodes = NodeArrays(**{f: getattr(self.nodes, f)[steps] for f in NodeArrays.__dataclass_fields__})
        return dataclasses.replace(self, nodes=nodes, steps=steps)

    def cast(self, X: np.ndarray) -> np.ndarray:
        """Rows in the dtype the model compares thresholds in (a copy unless already there).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows.

        Returns
        -------
        ndarray
            The rows in :attr:`input_dtype`.
        """
        return np.asarray(X, dtype=self.input_dtype)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Sum of leaf values plus the base offset.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The rows (or their routing rows).

        Returns
        -------
        ndarray of shape (n_samples,)
            The predictions.
        """
        X = self.routing_rows(X)
        out = np.full(X.shape[0], self.base_offset)
        for tree in self.trees:
            out += tree.value[tree.leaf_of(X, self.input_dtype)]
        return out


def _leaf_values(values: np.ndarray, output: int, tree_outputs: np.ndarray | None) -> np.ndarray:
    """Node values ``(trees, nodes)`` of one output from shap's ``(trees, nodes, outputs)``, with each
    tree's values moved to the output it adds to when ``tree_outputs`` says shap misplaced them."""
    if tree_outputs is None:
        return values[:, :, output]
    trees = np.arange(values.shape[0])
    misplaced = values[trees, :, trees % values.shape[2]]  # where shap put each tree's values
    return np.where((tree_outputs[: len(trees)] == output)[:, None], misplaced, 0.0)
