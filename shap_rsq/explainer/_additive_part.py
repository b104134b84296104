"""The additive part of each row's R² contributions: the control variate of :func:`estimate_rsq`.

Row ``i``'s game for tree ``t`` is ``v(S) = a m_S + b m_S²``, with ``m_S`` the tree's expected
prediction knowing the features in ``S`` (path-dependent), ``a = 2 w (r + c_t)``, ``b = -w``,
``r = y - f`` the residual before the tree and ``c_t = m_∅`` the tree's mean
(:func:`~shap_rsq.engine.run.decompose`).  Were ``m_S = c_t + sum_{j in S} phi_j`` additive, with
``phi`` the tree's TreeSHAP values, the Shapley values of ``m_S²`` would be ``phi_j (m + c_t)``, so
the game's would be ``phi_j w (2 r - (m - c_t))``: this is the additive part.  A booster's
second-order game of another loss has other row weights, ``v(S) = w_lin m_S + w_quad m_S²``
(:class:`~shap_rsq.engine.losses.TreeLosses`), and its additive part is ``phi_j (w_lin + w_quad (m + c_t))``
alike.  It is exact for
stumps and close for trees whose predictions vary little (each tree of a large forest), and it
costs one TreeSHAP pass a tree, for every row: subtracted from the sampled rows' exact
contributions and added back summed over all rows, it leaves only the non-additive rest to be
sampled (a fully grown forest of 5 trees: standard errors 20 times smaller; a depth-7 forest of 30
trees: 100-400 times).

Each tree's TreeSHAP values come from shap's own TreeSHAP, given the tree as read here
(:func:`~shap_rsq.models.shap_trees.forest_model`), one tree at a time: the additive part weighs
each tree's values by the row's own residual before it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.estimates import progress_bar
from ..engine.losses import TreeLosses
from ..engine.run import tree_shap_function
from ..models.forest import Forest
from ..models.shap_trees import forest_model
from ._shap_calls import ShapTreeExplainer

__all__ = ["AdditivePart", "additive_part"]


@dataclass(frozen=True)
class AdditivePart:
    """The additive part of the rows' contributions (loss units, not divided by ``SST``).

    Attributes
    ----------
    total : ndarray of shape (n_features,)
        Summed over every row.
    sampled : ndarray of shape (n_sampled, n_features)
        Of each sampled row.
    """

    total: np.ndarray
    sampled: np.ndarray


def additive_part(
    forest: Forest,
    order: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    pick: np.ndarray,
    memory_budget: int,
    progress: bool | str = False,
    loss: TreeLosses | None = None,
) -> AdditivePart:
    """The additive part of the contributions of every row of ``X``, and of the rows ``pick``.

    Parameters
    ----------
    forest : Forest
        The game's forest (the explainer's, trees as its units play them).
    order : ndarray of int
        The trees in the order the units play them: each tree's residual is ``y`` minus the
        predictions of the trees before it in this order.
    X, y, w : ndarray
        Rows in the model's feature order, the target, the weights.
    pick : ndarray of int
        The sampled rows (indices into ``X``).
    memory_budget : int
        Bytes: rows go through shap's TreeSHAP in chunks whose ``(rows, features)`` arrays fit an
        eighth of it.
    progress : bool or str
        Draw a bar over the trees.
    loss : TreeLosses, optional
        The second-order games of a booster's loss (``y`` its target: a class's 0/1 column, with the
        softmax offsets of every row of ``X``); squared error when ``None``.

    Returns
    -------
    AdditivePart
        The sums over all rows and the sampled rows' own parts.
    """
    n = X.shape[0]
    X = forest.routing_rows(X)
    step = max(1, memory_budget // (8 * 8 * (X.shape[1] + 1)))
    f = np.full(n, forest.expected_value)
    total = np.zeros(forest.n_players)
    sampled = np.zeros((len(pick), forest.n_players))
    with progress_bar(len(order), progress) as bar:
        for t in order:
            tree_values = _tree_values(forest, forest.trees[t])
            for start in range(0, n, step):
                rows = slice(start, min(n, start + step))
                phi = tree_values(X[rows])
                shift = phi.sum(axis=1)  # TreeSHAP's values add up to the tree's prediction minus its mean
                weight = _factor(loss, forest, t, f, y, w, rows, shift)
                total += weight @ phi
                inside = pick[(pick >= rows.start) & (pick < rows.stop)]
                sampled[np.searchsorted(pick, inside)] += weight[inside - rows.start, None] * phi[inside - rows.start]
                f[rows] += shift
            if bar is not None:
                bar.update(1)
    return AdditivePart(total, sampled)


def _factor(loss: TreeLosses | None, forest: Forest, t: int, f, y, w, rows: slice, shift: np.ndarray) -> np.ndarray:
    """What multiplies tree ``t``'s TreeSHAP values in the additive part of its game on ``rows``,
    ``f`` being the margin before it (itself at its mean ``c_t``, as the games play it)."""
    if loss is None:
        return w[rows] * (2.0 * (y[rows] - f[rows]) - shift)
    mean = forest.nodes.tree_mean[t : t + 1]
    w_quad, w_lin = loss.row_weights(f[rows, None], mean, y[rows], w[rows], rows, np.array([t]))
    return w_lin[:, 0] + w_quad[:, 0] * (2.0 * mean[0] + shift)


def _tree_values(forest: Forest, tree):
    """The path-dependent SHAP values of one tree as read here, as a function of rows: shap's
    TreeSHAP, or, for a game whose players are not the columns the trees read (a categorical
    feature's routing columns, or a group of features: one player each), this package's, where
    shap's would play each column apart."""
    if forest.players is not None:
        return tree_shap_function(tree, forest.n_players, forest.input_dtype)
    single = Forest.from_trees((tree,), 0.0, forest.input_dtype, forest.n_features)
    explainer = ShapTreeExplainer(forest_model(single), feature_perturbation="tree_path_dependent")
    return lambda rows: explainer.shap_values(rows, check_additivity=False)
