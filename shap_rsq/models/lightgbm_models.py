"""LightGBM: which models are accepted (L2 objectives, constant leaves), the fixes of shap's reading:
splits that send NaN as 0.0, and random-forest mode's average of its trees, and categorical splits
(pandas categories or ``categorical_feature=`` on integer codes) as sets of codes."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from .categories import CategoricalModel, CategorySplit
from .category_codes import CategoricalColumn, coded_rows
from .forest import Forest
from .info import ModelInfo, UnsupportedModelError, as_names, refuse

__all__ = ["lightgbm_info"]

_LIGHTGBM_L2 = {
    "regression",
    "regression_l2",
    "l2",
    "mean_squared_error",
    "mse",
    "l2_root",
    "root_mean_squared_error",
    "rmse",
}


def lightgbm_info(model: Any) -> ModelInfo:
    """Record of an ``LGBMRegressor`` or ``lightgbm.Booster``; refuses what cannot be decomposed.

    Parameters
    ----------
    model : lightgbm.LGBMRegressor or lightgbm.Booster
        A fitted LightGBM model.

    Returns
    -------
    ModelInfo
        The model's record.
    """
    import lightgbm

    booster = model if isinstance(model, lightgbm.Booster) else model.booster_  # raises when unfitted
    dump, splits = _numeric_dump(booster) or _json_dump(booster)
    loss, power = _check_lightgbm_objective(dump)
    if loss == "tweedie":  # the model file keeps the power among its parameters, not in its objective
        power = float(booster.params.get("tweedie_variance_power", power))
    n_classes = int(dump.get("num_class", 1))
    if (n_classes > 1 or int(dump.get("num_tree_per_iteration", 1)) > 1) and not dump["objective"].startswith(
        "multiclass"
    ):
        raise UnsupportedModelError(
            "LightGBM model has several outputs; only single-output models and softmax classifiers are supported."
        )
    categorical = _categorical_model(dump, splits)
    best = booster.best_iteration
    tree_limit = best * booster.num_model_per_iteration() if best and best > 0 else None
    nan_as_zero, average = _nan_as_zero(splits), bool(dump.get("average_output"))
    classes = None
    if dump["objective"].startswith(("binary", "multiclass")):
        classes = getattr(model, "classes_", None) if not isinstance(model, lightgbm.Booster) else None
        classes = np.arange(max(n_classes, 2)) if classes is None else np.asarray(classes)
    outputs = tuple(str(c) for c in classes) if n_classes > 1 else ()
    # LightGBM's raw score of a random forest is its trees' sum, where its predictions link their mean
    iterations = (best if best and best > 0 else booster.current_iteration()) if average else 1
    # the games are of the margin; the model predicts its link of it
    predict = model.predict if loss == "squared_error" else partial(_raw_predict, model, iterations=iterations)
    return ModelInfo(
        model,
        None,
        booster.num_feature(),
        as_names(booster.feature_name()),
        tree_limit,
        predict
        if categorical is None
        else partial(_predict_codes, model, categorical, raw=loss != "squared_error", iterations=iterations),
        "lightgbm",
        partial(_fix_lightgbm_forest, nan_as_zero=nan_as_zero, average=average),
        # shap explains through LightGBM's pred_contrib, which sums a random forest's trees; its
        # interaction values come from its own parse, which sends NaN to a default child
        shap_explains_wrong=average,
        shap_interactions_wrong=len(nan_as_zero[0]) > 0,
        outputs=outputs,
        classes=classes,
        loss=loss,
        loss_power=power,
        categorical=categorical,
    )


def _json_dump(booster: Any) -> tuple[dict, list[list[dict]]]:
    """The booster's JSON dump (every iteration) and each tree's split nodes."""
    dump = booster.dump_model(num_iteration=-1)
    return dump, [_lightgbm_splits(tree["tree_structure"]) for tree in dump["tree_info"]]


# bits of a split's ``decision_type`` in LightGBM's text model (its tree.h): categorical (1), default
# left (2), then two bits of missing type
_DEFAULT_LEFT_BIT = 2
_MISSING_TYPES = ("None", "Zero", "NaN")


def _numeric_dump(booster: Any) -> tuple[dict, list[list[dict]]] | None:
    """What :func:`_json_dump` gives of a model with numeric splits only, read from its text model;
    ``None`` for a model with categorical splits, pandas categories or linear leaves.

    shap's reading dumps the model to JSON as well, and a dump is slow: on 1,000 trees of 255
    leaves ``dump_model`` took 8.5 CPU s and ``model_to_string`` 0.9 s.  The header carries the
    fields the record reads (objective, classes, trees per iteration, random-forest mode, feature
    names), and each split's node is built as the JSON dump's, in the same order.
    """
    text = booster.model_to_string(num_iteration=-1)
    head, _, rest = text.partition("\nTree=")
    trees_text, _, tail = rest.partition("\nend of trees")
    if "pandas_categorical:null" not in tail:
        return None
    lines = head.splitlines()
    header = dict(line.split("=", 1) for line in lines if "=" in line)
    dump: dict = {
        "num_class": int(header.get("num_class", 1)),
        "num_tree_per_iteration": int(header.get("num_tree_per_iteration", 1)),
        "average_output": "average_output" in lines,
        "feature_names": header.get("feature_names", "").split(),
        "pandas_categorical": None,
    }
    if "objective" in header:  # absent for a custom objective function, as in the JSON dump
        dump["objective"] = header["objective"]
    splits = []
    for block in ("Tree=" + trees_text).split("\nTree=") if trees_text else []:
        fields = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        # num_cat counts the tree's categorical splits
        if int(fields.get("num_cat", 0)) > 0 or int(fields.get("is_linear", 0)) != 0:
            return None
        splits.append(_numeric_splits(fields))
    return dump, splits


def _numeric_splits(fields: dict) -> list[dict]:
    """One tree's numeric split nodes, from its text fields, in :func:`_lightgbm_splits`'s order."""
    if int(fields.get("num_leaves", 1)) <= 1:
        return []
    feature = [int(v) for v in fields["split_feature"].split()]
    threshold = [float(v) for v in fields["threshold"].split()]
    decision = [int(v) for v in fields["decision_type"].split()]
    children = [[int(v) for v in fields[name].split()] for name in ("left_child", "right_child")]
    splits, stack = [], [0]  # the JSON dump's order: depth first, the right child popped first
    while stack:
        i = stack.pop()
        if i < 0:  # a leaf
            continue
        splits.append(
            {
                "split_index": i,
                "split_feature": feature[i],
                "threshold": threshold[i],
                "decision_type": "<=",
                "default_left": bool(decision[i] & _DEFAULT_LEFT_BIT),
                "missing_type": _MISSING_TYPES[(decision[i] >> 2) & 3],
            }
        )
        stack.extend((children[0][i], children[1][i]))
    return splits


def _raw_predict(model: Any, X: Any, iterations: int = 1) -> np.ndarray:
    """The margin a LightGBM model predicts: the sum of its trees, or in random-forest mode their
    mean (its raw score is their sum over its ``iterations``)."""
    return model.predict(X, raw_score=True) / iterations


def _categorical_model(dump: dict, splits: list[list[dict]]) -> CategoricalModel | None:
    """The categorical features (declared, or pandas categories) and the splits on them.

    A split ``decision_type == "=="`` sends the codes listed in its threshold (``"1||4"``) left and
    every other code right: NaN, negative codes and codes no category has (LightGBM casts a
    number to an integer, truncating it: 2.7 reads as 2).  LightGBM recodes a pandas column to the
    categories it was fitted with, so a category it never saw reads as NaN.
    """
    names = dump.get("feature_names") or []
    declared = {int(node["split_feature"]) for tree in splits for node in tree if _is_categorical(node)}
    pandas = [list(c) for c in dump.get("pandas_categorical") or []]
    # LightGBM gives a pandas frame's category columns, in order, the categories it lists
    from_pandas = _pandas_features(dump, len(pandas))
    declared |= set(from_pandas)
    if not declared:
        return None
    columns = tuple(
        CategoricalColumn(
            j,
            names[j] if j < len(names) else str(j),
            np.asarray(pandas[from_pandas.index(j)], dtype=object) if j in from_pandas else None,
            unseen="missing" if j in from_pandas else "other",
        )
        for j in sorted(declared)
    )
    found = {
        (t, int(node["split_index"])): CategorySplit(int(node["split_feature"]), _codes(node["threshold"]))
        for t, tree in enumerate(splits)
        for node in tree
        if _is_categorical(node)
    }
    return CategoricalModel(columns, found)


def _pandas_features(dump: dict, n_pandas: int) -> list[int]:
    """The features that were a pandas frame's category columns, in order (LightGBM lists their
    categories in ``pandas_categorical``, and the values of categorical features in ``feature_infos``)."""
    if n_pandas == 0:
        return []
    infos = dump.get("feature_infos") or {}
    names = dump.get("feature_names") or []
    marked = [j for j, name in enumerate(names) if _categorical_info(infos.get(name))]
    if len(marked) == n_pandas:
        return marked
    raise UnsupportedModelError(
        f"LightGBM model lists the categories of {n_pandas} pandas column(s) but marks {len(marked)} feature(s) as "
        "categorical: which column holds which categories is unknown."
    )


def _categorical_info(info: dict | None) -> bool:
    # a categorical feature's info lists its categories ("values"); a numeric one's only its bounds
    return isinstance(info, dict) and bool(info.get("values"))


def _is_categorical(node: dict) -> bool:
    return node.get("decision_type", "<=") == "=="


def _codes(threshold: Any) -> frozenset:
    return frozenset(int(code) for code in str(threshold).split("||"))


def _predict_codes(
    model: Any, categorical: CategoricalModel, X: Any, raw: bool = False, iterations: int = 1
) -> np.ndarray:
    """The model's ``predict`` of rows in its order, categories as values or as the codes this
    package reads (:func:`~.category_codes.coded_rows`): its pandas features go back to categories
    over the model's own lists, as LightGBM's predict wants them (``raw``: the margin, the trees' sum,
    or in random-forest mode its raw score over its ``iterations``, their mean)."""
    X = coded_rows(categorical.features, X)
    if all(c.categories is None for c in categorical.columns):
        return model.predict(X, raw_score=raw) / (iterations if raw else 1)
    frame = pd.DataFrame(X)
    for c in categorical.columns:
        if c.categories is not None:
            codes = np.where(np.isnan(X[:, c.feature]), -1, X[:, c.feature]).astype(np.int64)
            frame[c.feature] = pd.Categorical.from_codes(codes, categories=pd.Index(c.categories))
    frame.columns = list(model.booster_.feature_name() if hasattr(model, "booster_") else model.feature_name())
    return model.predict(frame, raw_score=raw) / (iterations if raw else 1)


# the objectives' losses of the margin (not LightGBM's own Hessians: multiclass's K / (K - 1) factor
# and the Poisson max_delta_step shift are stand-ins the games do not use)
_LIGHTGBM_LOSSES = {
    "binary": "log_loss",
    "multiclass": "log_loss",
    "cross_entropy": "log_loss",
    "xentropy": "log_loss",
    "poisson": "poisson",
    "gamma": "gamma",
    "tweedie": "tweedie",
}


def _option(options: list[str], name: str, default: float) -> float:
    """A numeric option of a LightGBM objective string (``"tweedie tweedie_variance_power:1.3"``)."""
    for option in options:
        key, _, value = option.partition(":")
        if key == name:
            return float(value)
    return default


def _check_lightgbm_objective(dump: dict) -> tuple[str, float]:
    """The loss and Tweedie power of the model's objective; refuses the others."""
    if "objective" not in dump:
        # a custom objective function leaves no name in the model: it may not be squared error
        raise UnsupportedModelError(
            "LightGBM model trained with a custom objective function is not supported: the R² decomposition "
            "needs a regressor fitted with squared error, and the model does not record which loss it used."
        )
    objective, *options = str(dump["objective"]).split()
    if objective in _LIGHTGBM_L2:
        if "sqrt" in options:
            # the model predicts the square of its trees' sum
            refuse("LightGBM model", "reg_sqrt", True)
        return "squared_error", 0.0
    if objective not in _LIGHTGBM_LOSSES:
        refuse("LightGBM model", "objective", objective)
    if objective == "binary" and _option(options, "sigmoid", 1.0) != 1.0:
        # its probability is sigmoid(sigmoid * F): the games are of the margin it boosted
        refuse("LightGBM model", "sigmoid", _option(options, "sigmoid", 1.0))
    return _LIGHTGBM_LOSSES[objective], 1.5 if objective == "tweedie" else 0.0


def _lightgbm_splits(root: dict) -> list[dict]:
    """The split nodes of one tree of a LightGBM dump; linear leaves are refused on the way."""
    splits, stack = [], [root]
    while stack:
        node = stack.pop()
        if "leaf_coeff" in node:
            raise UnsupportedModelError(
                "LightGBM model with linear_tree=True is not supported: leaves must be constants."
            )
        if "split_index" in node:
            splits.append(node)
            stack.extend((node["left_child"], node["right_child"]))
    return splits


def _nan_as_zero(splits: list[list[dict]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Splits where LightGBM reads NaN as 0.0: ``(tree, node, 0.0 goes left)``.

    LightGBM only sends NaN to the default child at splits whose ``missing_type``
    is ``NaN``.  Where it is ``None`` (no NaN seen in training, or
    ``use_missing=False``) NaN is replaced by 0.0 and compared with the
    threshold, whatever ``default_left`` says; shap uses ``default_left``.
    Where it is ``Zero`` (``zero_as_missing=True``) zeros and NaN take the
    default child, which a threshold can only express when it agrees with
    where 0.0 falls.  shap numbers a split node by its ``split_index``.
    """
    found = []
    for t, tree in enumerate(splits):
        for node in (node for node in tree if not _is_categorical(node)):
            zero_left = 0.0 <= float(node["threshold"])
            kind = node.get("missing_type", "None")
            if kind == "Zero" and bool(node["default_left"]) != zero_left:
                raise UnsupportedModelError(
                    "LightGBM model with zero_as_missing=True is not supported: it sends zeros to the default "
                    "child at splits whose threshold sends them the other way.  Use NaN for missing values."
                )
            if kind == "None":
                found.append((t, int(node["split_index"]), zero_left))
    table = np.array(found, dtype=np.int64).reshape(-1, 3)
    return table[:, 0], table[:, 1], table[:, 2].astype(bool)


def _fix_lightgbm_forest(
    forest: Forest, nan_as_zero: tuple[np.ndarray, np.ndarray, np.ndarray], average: bool
) -> Forest:
    """NaN routed as LightGBM routes it, values within its zero threshold read as 0, and
    random-forest mode's average of the trees."""
    nodes = forest.nodes
    tree, node, zero_left = nan_as_zero
    used = tree < forest.n_trees  # early stopping may have dropped trailing trees
    tree, node, zero_left = tree[used], node[used], zero_left[used]
    default = nodes.default.copy()
    default[tree, node] = np.where(zero_left, nodes.left[tree, node], nodes.right[tree, node])
    # boosting='rf' predicts the mean of its trees, which shap reads as their sum
    value = nodes.value / forest.n_trees if average else nodes.value
    # LightGBM reads |x| <= kZeroThreshold as 0 and splits negatives from zeros at -kZeroThreshold:
    # x equal to that threshold goes right (as 0 does), so the threshold moves just below it
    threshold = np.where(nodes.threshold == -_K_ZERO, np.nextafter(-_K_ZERO, -np.inf), nodes.threshold)
    return replace(forest, nodes=replace(nodes, default=default, value=value, threshold=threshold))


_K_ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold, a float literal widened to double
