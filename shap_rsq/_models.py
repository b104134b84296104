"""What shap-rsq accepts: inspect a model, refuse what cannot be decomposed, and patch shap's loading.

shap parses the trees of every supported family.  This layer only decides
whether a model is a fitted single-output squared-error regressor without
categorical splits, and fixes the CatBoost gaps of shap 0.51: its loader drops
the model's scale and bias, routes missing values left whatever ``nan_mode``
says, and cannot read ``Depthwise`` / ``Lossguide`` trees (read here from
CatBoost's JSON export instead).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
from shap.utils import safe_isinstance
from sklearn.base import is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ._trees import Forest

__all__ = ["ModelInfo", "UnsupportedModelError", "inspect_model"]


class UnsupportedModelError(ValueError):
    """The model cannot be decomposed exactly (wrong task, objective, split type or output shape)."""


@dataclass(frozen=True)
class ModelInfo:
    """What the explainer needs to know about a model.

    Attributes
    ----------
    shap_model : object
        Passed to ``shap.TreeExplainer``: the model itself unless shap cannot load it at all.
    trees : object
        What the trees are read from through shap's ``TreeEnsemble``: ``None`` for
        the ensemble shap built for ``shap_model``, or a dict of trees where shap's
        loader cannot read the model.
    n_features : int
    feature_names : list of str or None
        Names the model was fitted with, if it recorded them.
    tree_limit : int or None
        Number of leading trees the model's ``predict`` uses (early stopping).
    predict : callable
        ``predict(X)`` as the model computes it, used to check the trees were read right.
    family : str
    adjust : callable or None
        Fixes applied to the forest read by shap, where its loader is wrong.
    """

    shap_model: Any
    trees: Any
    n_features: int
    feature_names: list[str] | None
    tree_limit: int | None
    predict: Callable[[Any], np.ndarray]
    family: str
    adjust: Callable[[Forest], Forest] | None = None


_SKLEARN_TREES = [
    "sklearn.tree.DecisionTreeRegressor",
    "sklearn.tree.ExtraTreeRegressor",
    "sklearn.ensemble.RandomForestRegressor",
    "sklearn.ensemble.ExtraTreesRegressor",
]
_SQUARED_CRITERIA = {"squared_error", "friedman_mse"}
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
_SUPPORTED = (
    "scikit-learn DecisionTreeRegressor, ExtraTreeRegressor, RandomForestRegressor, ExtraTreesRegressor, "
    "GradientBoostingRegressor, HistGradientBoostingRegressor; XGBRegressor or xgboost.Booster; "
    "LGBMRegressor or lightgbm.Booster; CatBoostRegressor"
)


def inspect_model(model: Any) -> ModelInfo:
    """Check that ``model`` can be decomposed and describe it; raise a clear error otherwise."""
    _refuse_classifier(model)
    if safe_isinstance(model, _SKLEARN_TREES):
        return _sklearn_tree(model)
    if safe_isinstance(model, "sklearn.ensemble.GradientBoostingRegressor"):
        return _sklearn_gradient_boosting(model)
    if safe_isinstance(model, "sklearn.ensemble.HistGradientBoostingRegressor"):
        return _sklearn_hist_gradient_boosting(model)
    if safe_isinstance(model, ["xgboost.sklearn.XGBModel", "xgboost.core.Booster"]):
        return _xgboost(model)
    if safe_isinstance(model, ["lightgbm.sklearn.LGBMModel", "lightgbm.basic.Booster"]):
        return _lightgbm(model)
    if safe_isinstance(model, "catboost.core.CatBoost"):
        return _catboost(model)
    raise UnsupportedModelError(f"{type(model).__name__} is not a supported tree model. Supported: {_SUPPORTED}.")


def _refuse_classifier(model: Any) -> None:
    try:
        classifier = is_classifier(model)
    except (AttributeError, TypeError):  # boosters and other non-estimators carry no sklearn tags
        classifier = getattr(model, "_estimator_type", None) == "classifier"
    if classifier:
        raise UnsupportedModelError(
            f"{type(model).__name__} is a classifier; R^2 decomposition needs a regressor fitted with squared error."
        )


def _names(values) -> list[str] | None:
    return None if values is None else [str(v) for v in values]


def _refuse(family: str, what: str, value: Any) -> None:
    raise UnsupportedModelError(
        f"{family} with {what}={value!r} is not supported: the R^2 decomposition needs a "
        "single-output regressor fitted with squared error."
    )


# ---------------------------------------------------------------- scikit-learn


def _sklearn_common(model: Any) -> None:
    check_is_fitted(model)
    if getattr(model, "n_outputs_", 1) != 1:
        raise UnsupportedModelError(
            f"{type(model).__name__} has {model.n_outputs_} outputs; only single-output models are supported."
        )


def _sklearn_info(model: Any, shap_model: Any = None) -> ModelInfo:
    """scikit-learn models: shap reads the trees (from ``shap_model`` when given), predict checks them."""
    names = _names(getattr(model, "feature_names_in_", None))
    return ModelInfo(shap_model or model, None, model.n_features_in_, names, None, model.predict, "sklearn")


def _sklearn_tree(model: Any) -> ModelInfo:
    _sklearn_common(model)
    if model.criterion not in _SQUARED_CRITERIA:
        _refuse(type(model).__name__, "criterion", model.criterion)
    return _sklearn_info(model)


def _sklearn_gradient_boosting(model: Any) -> ModelInfo:
    _sklearn_common(model)
    if model.loss != "squared_error":
        _refuse("GradientBoostingRegressor", "loss", model.loss)
    shap_model: Any = model
    if isinstance(model.init_, str) and model.init_ == "zero":
        # shap only reads constant init estimators; 'zero' is the constant 0
        shap_model = {
            "trees": [_sklearn_tree_dict(e.tree_, model.learning_rate) for e in model.estimators_[:, 0]],
            "base_offset": 0.0,
            "input_dtype": np.float32,
        }
    elif not safe_isinstance(model.init_, "sklearn.dummy.DummyRegressor"):
        raise UnsupportedModelError(
            f"GradientBoostingRegressor with init={type(model.init_).__name__} is not supported: "
            "its starting prediction must be a constant (init=None, 'zero' or a DummyRegressor)."
        )
    return _sklearn_info(model, shap_model)


def _sklearn_tree_dict(tree: Any, scaling: float) -> dict:
    return {
        "children_left": tree.children_left.astype(np.int32),
        "children_right": tree.children_right.astype(np.int32),
        "children_default": np.where(
            getattr(tree, "missing_go_to_left", np.ones(tree.node_count, bool)), tree.children_left, tree.children_right
        ).astype(np.int32),
        "features": tree.feature.astype(np.int32),
        "thresholds": tree.threshold.astype(np.float64),
        "values": tree.value.reshape(tree.node_count, 1) * scaling,
        "node_sample_weight": tree.weighted_n_node_samples.astype(np.float64),
    }


def _sklearn_hist_gradient_boosting(model: Any) -> ModelInfo:
    check_is_fitted(model)
    if model.loss != "squared_error":
        _refuse("HistGradientBoostingRegressor", "loss", model.loss)
    categorical = getattr(model, "is_categorical_", None)
    if categorical is not None and np.any(categorical):
        raise UnsupportedModelError(
            "HistGradientBoostingRegressor with categorical features is not supported: categorical splits "
            f"(features {np.flatnonzero(categorical).tolist()}) have no threshold order."
        )
    return _sklearn_info(model)


# ---------------------------------------------------------------- XGBoost


def _xgboost(model: Any) -> ModelInfo:
    import xgboost

    is_booster = isinstance(model, xgboost.Booster)
    booster = model if is_booster else model.get_booster()  # raises NotFittedError when unfitted
    config = json.loads(booster.save_config())["learner"]
    objective = config["objective"]["name"]
    if objective not in ("reg:squarederror", "reg:linear"):
        _refuse("XGBoost model", "objective", objective)
    name = config["gradient_booster"]["name"]
    if name != "gbtree":
        _refuse("XGBoost model", "booster", name)
    targets = max(int(config["learner_model_param"].get("num_target", "1")), 1)
    if targets > 1:
        raise UnsupportedModelError(f"XGBoost model has {targets} targets; only single-output models are supported.")
    if booster.feature_types is not None and "c" in booster.feature_types:
        categorical = [i for i, t in enumerate(booster.feature_types) if t == "c"]
        raise UnsupportedModelError(
            f"XGBoost model with categorical features {categorical} is not supported: categorical splits "
            "have no threshold order."
        )
    n_features = booster.num_features()
    if is_booster:

        def predict(X):
            return booster.predict(xgboost.DMatrix(X, missing=np.nan))

        # Booster.predict uses every tree; shap would stop at best_iteration
        tree_limit = len(booster.get_dump())
    else:
        predict = model.predict
        tree_limit = None
    return ModelInfo(model, None, n_features, _names(booster.feature_names), tree_limit, predict, "xgboost")


# ---------------------------------------------------------------- LightGBM


def _lightgbm(model: Any) -> ModelInfo:
    import lightgbm

    booster = model if isinstance(model, lightgbm.Booster) else model.booster_  # raises when unfitted
    dump = booster.dump_model(num_iteration=-1)
    objective = str(dump.get("objective", "regression")).split()[0]
    if objective not in _LIGHTGBM_L2:
        _refuse("LightGBM model", "objective", objective)
    if int(dump.get("num_class", 1)) > 1 or int(dump.get("num_tree_per_iteration", 1)) > 1:
        raise UnsupportedModelError("LightGBM model has several outputs; only single-output models are supported.")
    if any(_has_linear_leaves(tree) for tree in dump["tree_info"]):
        raise UnsupportedModelError("LightGBM model with linear_tree=True is not supported: leaves must be constants.")
    if any(_has_categorical_split(tree["tree_structure"]) for tree in dump["tree_info"]):
        raise UnsupportedModelError(
            "LightGBM model with categorical splits is not supported: categorical splits have no threshold order."
        )
    best = booster.best_iteration
    tree_limit = best * booster.num_model_per_iteration() if best and best > 0 else None
    return ModelInfo(
        model, None, booster.num_feature(), _names(booster.feature_name()), tree_limit, model.predict, "lightgbm"
    )


def _has_linear_leaves(tree: dict) -> bool:
    stack = [tree["tree_structure"]]
    while stack:
        node = stack.pop()
        if "leaf_coeff" in node:
            return True
        stack.extend(node[child] for child in ("left_child", "right_child") if child in node)
    return False


def _has_categorical_split(node: dict) -> bool:
    stack = [node]
    while stack:
        node = stack.pop()
        if node.get("decision_type", "<=") != "<=":
            return True
        stack.extend(node[child] for child in ("left_child", "right_child") if child in node)
    return False


# ---------------------------------------------------------------- CatBoost


def _catboost(model: Any) -> ModelInfo:
    if not model.is_fitted():
        raise NotFittedError(f"This {type(model).__name__} instance is not fitted yet. Call 'fit' first.")
    params = model.get_all_params()
    loss = str(params.get("loss_function", "RMSE")).split(":")[0]
    if loss == "MultiRMSE":
        raise UnsupportedModelError(
            "CatBoost model with loss_function='MultiRMSE' has several outputs; "
            "only single-output models are supported."
        )
    if loss != "RMSE":
        _refuse("CatBoost model", "loss_function", loss)
    if model.get_cat_feature_indices():
        raise UnsupportedModelError(
            f"CatBoost model with categorical features {model.get_cat_feature_indices()} is not supported: "
            "categorical splits have no threshold order."
        )
    for kind in ("text", "embedding"):
        indices = getattr(model, f"get_{kind}_feature_indices", lambda: [])()
        if indices:
            raise UnsupportedModelError(f"CatBoost model with {kind} features {indices} is not supported.")
    scale, bias = model.get_scale_and_bias()
    bias = float(np.ravel(bias)[0]) if np.size(bias) else 0.0
    names = _names(model.feature_names_)
    if params.get("grow_policy", "SymmetricTree") == "SymmetricTree":
        # shap reads symmetric trees (and explains predictions natively); fix what its loader drops.
        # nan_mode is global: 'Max' sends NaN above every border, i.e. right.
        nan_right = params.get("nan_mode", "Min") == "Max"
        adjust = partial(_fix_catboost_forest, scale=scale, bias=bias, nan_right=nan_right)
        return ModelInfo(model, None, len(names), names, None, model.predict, "catboost", adjust)
    document = _catboost_json(model)
    nan_right_by_feature = {
        f["flat_feature_index"]: f.get("nan_value_treatment") == "AsTrue"
        for f in document["features_info"].get("float_features", [])
    }
    trees = _nonsymmetric_trees(document, scale, bias, nan_right_by_feature)
    return ModelInfo(model, trees, len(names), names, None, model.predict, "catboost")


def _catboost_json(model: Any) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="json")
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)


def _fix_catboost_forest(forest: Forest, scale: float, bias: float, nan_right: bool) -> Forest:
    """shap's symmetric trees with CatBoost's scale and bias, float32 comparisons and ``nan_mode`` routing."""
    nodes = forest.nodes
    go_right = (nodes.left >= 0) & nan_right
    fixed = replace(nodes, value=nodes.value * scale, default=np.where(go_right, nodes.right, nodes.left))
    return replace(forest, nodes=fixed, base_offset=forest.base_offset + bias, input_dtype=np.dtype(np.float32))


def _nonsymmetric_trees(document: dict, scale: float, bias: float, nan_right: dict[int, bool]) -> dict:
    """Depthwise / Lossguide trees of a CatBoost JSON export as shap's dict model."""
    return {
        "trees": [_nonsymmetric_tree(tree, scale, nan_right) for tree in document["trees"]],
        "base_offset": bias,
        "input_dtype": np.float32,
        "tree_output": "raw_value",
        "objective": "squared_error",
    }


def _split_feature(split: dict) -> int:
    if split.get("split_type") != "FloatFeature":
        raise UnsupportedModelError(
            f"CatBoost split of type {split.get('split_type')!r} is not supported: only numeric splits are."
        )
    return int(split["float_feature_index"])


class _TreeBuilder:
    """Nodes appended one at a time; ``x > border`` goes right as in CatBoost."""

    def __init__(self, nan_right: dict[int, bool], scale: float):
        self.left: list[int] = []
        self.right: list[int] = []
        self.default: list[int] = []
        self.feature: list[int] = []
        self.threshold: list[float] = []
        self.value: list[float] = []
        self.cover: list[float] = []
        self.nan_right = nan_right
        self.scale = scale

    def node(self) -> int:
        for column in (self.left, self.right, self.default, self.feature):
            column.append(-1)
        self.threshold.append(0.0)
        self.value.append(0.0)
        self.cover.append(0.0)
        return len(self.left) - 1

    def leaf(self, index: int, value: float, weight: float) -> None:
        self.value[index] = value * self.scale
        self.cover[index] = weight

    def split(self, index: int, split: dict, left: int, right: int) -> None:
        feature = _split_feature(split)
        self.feature[index] = feature
        self.threshold[index] = float(split["border"])
        self.left[index], self.right[index] = left, right
        self.default[index] = right if self.nan_right.get(feature, False) else left
        self.cover[index] = self.cover[left] + self.cover[right]

    def as_dict(self) -> dict:
        return {
            "children_left": np.array(self.left, dtype=np.int32),
            "children_right": np.array(self.right, dtype=np.int32),
            "children_default": np.array(self.default, dtype=np.int32),
            "features": np.array(self.feature, dtype=np.int32),
            "thresholds": np.array(self.threshold, dtype=np.float64),
            "values": np.array(self.value, dtype=np.float64).reshape(-1, 1),
            "node_sample_weight": np.array(self.cover, dtype=np.float64),
        }


def _nonsymmetric_tree(tree: dict, scale: float, nan_right: dict[int, bool]) -> dict:
    builder = _TreeBuilder(nan_right, scale)

    def build(node_json: dict) -> int:
        node = builder.node()
        if "split" not in node_json:
            builder.leaf(node, node_json["value"], node_json.get("weight", 0.0))
            return node
        left = build(node_json["left"])
        right = build(node_json["right"])
        builder.split(node, node_json["split"], left, right)
        return node

    build(tree)
    return builder.as_dict()
