"""A forest table as shap's dict model, for the models whose prediction SHAP values shap gets wrong.

shap explains some models through code that does not see the fixes this package applies when it
reads their trees: a LightGBM random forest (``boosting='rf'``) predicts the mean of its trees,
which LightGBM's own ``pred_contrib`` (shap's source of its values) sums; CatBoost's own SHAP
values of Depthwise and Lossguide trees, which shap returns, do not add up to its predictions;
shap's interaction values of LightGBM come from its own parse, which sends NaN to a default child
where LightGBM reads it as 0.0.  Handing shap the trees as read here makes its ``TreeExplainer``
(its own TreeSHAP) explain what the model predicts.  Models shap explains right keep shap's own
reading.

shap refuses path-dependent values for trees with a node no training row reached (cover 0): its
TreeSHAP divides by a child's cover fraction on the paths a row does not take.  Those nodes get
a cover ``1e-300`` times their parent's instead (half their parent's below a split nobody
reached, as :func:`~shap_rsq.models.node_arrays.cover_fractions` splits it): a fraction that small
changes no digit of the values (tested against subset enumeration on zero covers), and CatBoost's
Depthwise trees have such leaves.
"""

from __future__ import annotations

import numpy as np

from .forest import Forest

__all__ = ["forest_model", "outputs_model", "tree_outputs"]

# the cover fraction standing for 0 below a reached node: far below the precision of any value
_UNREACHED = 1e-300


def forest_model(forest: Forest, *, for_shap: bool = True) -> dict:
    """shap's dict model of ``forest`` (``shap.TreeExplainer`` accepts it as a model).

    Parameters
    ----------
    forest : Forest
        The trees as read and fixed (values already scaled, NaN routed as the model routes it).
    for_shap : bool, default=True
        Give nodes no training row reached a vanishing cover, which shap's TreeSHAP needs; with
        ``False`` the covers stay as they are (for this package's own reading of the trees).

    Returns
    -------
    dict
        ``{"trees": [...], "base_offset": ..., "input_dtype": ...}`` in shap's format: per tree its
        children, default children, features, thresholds (``x <= threshold`` goes left, as in
        every forest table), leaf values ``(nodes, 1)`` and covers.
    """
    trees = [
        {
            "children_left": tree.left.astype(np.int32),
            "children_right": tree.right.astype(np.int32),
            "children_default": tree.default.astype(np.int32),
            "features": tree.feature.astype(np.int32),
            "thresholds": tree.threshold.astype(np.float64),
            "values": tree.value.reshape(-1, 1).astype(np.float64),
            "node_sample_weight": _positive_covers(tree) if for_shap else tree.cover.astype(np.float64),
        }
        for tree in forest.trees
    ]
    return {
        "trees": trees,
        "base_offset": forest.base_offset,
        "input_dtype": forest.input_dtype,
        "tree_output": "raw_value",
        "objective": "squared_error",
    }


def outputs_model(forests: list[Forest], *, for_shap: bool = True) -> dict:
    """shap's dict model of several outputs' forests (a classifier's classes, a regressor's targets).

    Parameters
    ----------
    forests : list of Forest
        One forest per output, as read and fixed.
    for_shap : bool, default=True
        As :func:`forest_model`'s.

    Returns
    -------
    dict
        :func:`forest_model`'s format, each tree's leaf values ``(nodes, n_outputs)`` with zeros
        for the outputs the tree does not add to, and one base offset per output; the trees in the
        model's order (a softmax's round by round, :func:`tree_outputs`).
    """
    if len(forests) == 1:
        return forest_model(forests[0], for_shap=for_shap)
    read = [forest_model(forest, for_shap=for_shap)["trees"] for forest in forests]
    trees = []
    for k, t in _in_model_order(forests):
        tree = read[k][t]
        values = np.zeros((len(tree["values"]), len(forests)))
        values[:, k] = tree["values"][:, 0]
        trees.append({**tree, "values": values})
    return {
        **forest_model(forests[0], for_shap=for_shap),
        "trees": trees,
        "base_offset": np.array([forest.base_offset for forest in forests], dtype=np.float64),
    }


def tree_outputs(forests: list[Forest]) -> np.ndarray:
    """The output each tree of :func:`outputs_model` adds to.

    Parameters
    ----------
    forests : list of Forest
        One forest per output.

    Returns
    -------
    ndarray of int
        One entry per tree, in :func:`outputs_model`'s order.
    """
    return np.array([k for k, _ in _in_model_order(forests)], dtype=np.int64)


def _in_model_order(forests: list[Forest]) -> list[tuple[int, int]]:
    """``(output, tree)`` of every tree, ordered by its position among all the model's trees
    (:attr:`Forest.steps`; a forest without steps keeps its own order, after the others)."""
    keys = []
    for k, forest in enumerate(forests):
        steps = forest.steps if forest.steps is not None else np.arange(forest.n_trees)
        keys.extend((int(step), k, t) for t, step in enumerate(steps))
    return [(k, t) for _, k, t in sorted(keys)]


def _positive_covers(tree) -> np.ndarray:
    """The tree's covers with every 0 replaced, top-down, by a vanishing share of its parent's."""
    cover = tree.cover.astype(np.float64)
    if np.all(cover > 0):
        return cover
    fixed = cover.copy()
    if fixed[0] == 0:  # a tree no training row reached: only its (even) fractions matter
        fixed[0] = 1.0
    frontier = np.array([0])
    while frontier.size:
        inner = frontier[tree.left[frontier] >= 0]
        for children in (tree.left[inner], tree.right[inner]):
            zero = cover[children] == 0
            share = np.where(cover[inner] > 0, _UNREACHED, 0.5)
            fixed[children[zero]] = fixed[inner[zero]] * share[zero]
        frontier = np.concatenate([tree.left[inner], tree.right[inner]])
    return fixed
