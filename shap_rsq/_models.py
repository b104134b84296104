"""What shap-rsq accepts: inspect a model and refuse what cannot be decomposed.

shap parses the trees of every supported family.  This layer only decides
whether a model is a fitted single-output squared-error regressor without
categorical splits, says where its trees are read from and how to check them
against the model's own predictions.  Where shap's loader misreads a model
this layer fixes it: LightGBM splits that read NaN as 0.0 and LightGBM's
random-forest mode (here), CatBoost (in ``_catboost``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
from shap.utils import safe_isinstance
from sklearn.base import is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ._catboost import catboost_info
from ._model_info import ModelInfo, UnsupportedModelError, as_names, refuse
from ._trees import Forest

__all__ = ["ModelInfo", "UnsupportedModelError", "inspect_model"]


_SKLEARN_TREES = [
    "sklearn.tree.DecisionTreeRegressor",
    "sklearn.tree.ExtraTreeRegressor",
    "sklearn.ensemble.RandomForestRegressor",
    "sklearn.ensemble.ExtraTreesRegressor",
]
# their predict_proba is a sum of trees (each tree's leaf class fractions, averaged)
_SKLEARN_FOREST_CLASSIFIERS = [
    "sklearn.tree.DecisionTreeClassifier",
    "sklearn.tree.ExtraTreeClassifier",
    "sklearn.ensemble.RandomForestClassifier",
    "sklearn.ensemble.ExtraTreesClassifier",
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
    if safe_isinstance(model, _SKLEARN_FOREST_CLASSIFIERS):
        return _sklearn_forest_classifier(model)
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
        return catboost_info(model)
    raise UnsupportedModelError(f"{type(model).__name__} is not a supported tree model. Supported: {_SUPPORTED}.")


def _refuse_classifier(model: Any) -> None:
    try:
        classifier = is_classifier(model)
    except (AttributeError, TypeError):  # boosters and other non-estimators carry no sklearn tags
        classifier = getattr(model, "_estimator_type", None) == "classifier"
    if classifier:
        raise UnsupportedModelError(
            f"{type(model).__name__} is a boosted classifier: its probabilities are a sigmoid or softmax of a sum "
            "of trees, not a sum of trees, so their squared error (the Brier score) has no exact Shapley "
            "decomposition.  Use a forest classifier (DecisionTreeClassifier, RandomForestClassifier, "
            "ExtraTreesClassifier), or a squared-error regressor fitted on the 0/1 target."
        )


# ---------------------------------------------------------------- scikit-learn


def _sklearn_common(model: Any, several_outputs: bool = False) -> None:
    check_is_fitted(model)
    if getattr(model, "n_outputs_", 1) != 1 and not several_outputs:
        raise UnsupportedModelError(
            f"{type(model).__name__} has {model.n_outputs_} outputs; only single-output models are supported."
        )


def _sklearn_info(model: Any, shap_model: Any = None, **outputs: Any) -> ModelInfo:
    """scikit-learn models: shap reads the trees (from ``shap_model`` when given), predict checks them."""
    names = as_names(getattr(model, "feature_names_in_", None))
    predict = model.predict_proba if outputs.get("classes") is not None else model.predict
    return ModelInfo(shap_model or model, None, model.n_features_in_, names, None, predict, "sklearn", **outputs)


def _sklearn_tree(model: Any) -> ModelInfo:
    _sklearn_common(model, several_outputs=True)
    if model.criterion not in _SQUARED_CRITERIA:
        refuse(type(model).__name__, "criterion", model.criterion)
    n_outputs = model.n_outputs_
    return _sklearn_info(model, outputs=tuple(f"output {k}" for k in range(n_outputs)) if n_outputs > 1 else ())


def _sklearn_forest_classifier(model: Any) -> ModelInfo:
    """Forest classifiers: class k's probability is a sum of trees, so its squared error decomposes."""
    check_is_fitted(model)
    if model.n_outputs_ != 1:
        raise UnsupportedModelError(
            f"{type(model).__name__} has {model.n_outputs_} outputs (multi-label); only one label per row is supported."
        )
    classes = np.asarray(model.classes_)
    return _sklearn_info(model, outputs=tuple(str(c) for c in classes), classes=classes)


def _sklearn_gradient_boosting(model: Any) -> ModelInfo:
    _sklearn_common(model)
    if model.loss != "squared_error":
        refuse("GradientBoostingRegressor", "loss", model.loss)
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
        refuse("HistGradientBoostingRegressor", "loss", model.loss)
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
    config = _xgboost_config(booster)
    _check_xgboost_settings(model, is_booster, config)
    if booster.feature_types is not None and "c" in booster.feature_types:
        categorical = [i for i, t in enumerate(booster.feature_types) if t == "c"]
        raise UnsupportedModelError(
            f"XGBoost model with categorical features {categorical} is not supported: categorical splits "
            "have no threshold order."
        )
    n_features = booster.num_features()
    outputs, bases = _xgboost_targets(config)
    if is_booster:

        def predict(X):
            # rows given as an array take the names the booster was trained with
            names = None if hasattr(X, "columns") else booster.feature_names
            return booster.predict(xgboost.DMatrix(X, missing=np.nan, feature_names=names))

        # Booster.predict uses every tree; shap would stop at best_iteration
        tree_limit = len(booster.get_dump())
    else:
        predict = model.predict
        tree_limit = None
    names = as_names(booster.feature_names)
    return ModelInfo(model, None, n_features, names, tree_limit, predict, "xgboost", outputs=outputs, bases=bases)


def _xgboost_targets(config: dict) -> tuple[tuple[str, ...], tuple[float, ...] | None]:
    """Names and base scores of a multi-target model's outputs (one tree per target and round).

    shap reads the first target's base score for every target: the config holds them all.
    """
    parameters = config["learner_model_param"]
    targets = max(int(parameters.get("num_target", "1")), 1)
    if targets == 1:
        return (), None
    bases = tuple(float(b) for b in parameters["base_score"].strip("[]").split(","))
    return tuple(f"output {k}" for k in range(targets)), bases


def _xgboost_config(booster: Any) -> dict:
    import xgboost

    try:
        return json.loads(booster.save_config())["learner"]
    except xgboost.core.XGBoostError as error:
        # a Booster() that was never trained nor loaded fails every query with a C++ stack trace
        raise NotFittedError(
            "This xgboost.Booster has no model: train it (xgboost.train) or load one (load_model) first."
        ) from error


def _check_xgboost_settings(model: Any, is_booster: bool, config: dict) -> None:
    objective = config["objective"]["name"]
    if not is_booster and callable(getattr(model, "objective", None)):
        # a custom objective leaves the default name in the booster: it may not be squared error
        refuse("XGBoost model", "objective", f"custom function {getattr(model.objective, '__name__', '?')}")
    if objective not in ("reg:squarederror", "reg:linear"):
        refuse("XGBoost model", "objective", objective)
    name = config["gradient_booster"]["name"]
    if name != "gbtree":
        refuse("XGBoost model", "booster", name)
    if config.get("learner_train_param", {}).get("multi_strategy") == "multi_output_tree":
        raise UnsupportedModelError(
            "XGBoost model with vector leaves (multi_strategy='multi_output_tree') is not supported: shap cannot "
            "read its trees.  Fit it with multi_strategy='one_output_per_tree' (the default)."
        )
    missing = getattr(model, "missing", np.nan)
    if not is_booster and missing is not None and not np.isnan(missing):
        # its predict sends this value to the default child, which no threshold can express
        raise UnsupportedModelError(
            f"XGBoost model with missing={missing!r} is not supported: use NaN for missing values (the default)."
        )


# ---------------------------------------------------------------- LightGBM


def _lightgbm(model: Any) -> ModelInfo:
    import lightgbm

    booster = model if isinstance(model, lightgbm.Booster) else model.booster_  # raises when unfitted
    dump = booster.dump_model(num_iteration=-1)
    _check_lightgbm_objective(dump)
    if int(dump.get("num_class", 1)) > 1 or int(dump.get("num_tree_per_iteration", 1)) > 1:
        raise UnsupportedModelError("LightGBM model has several outputs; only single-output models are supported.")
    splits = [_lightgbm_splits(tree["tree_structure"]) for tree in dump["tree_info"]]
    if any(node.get("decision_type", "<=") != "<=" for tree in splits for node in tree):
        raise UnsupportedModelError(
            "LightGBM model with categorical splits is not supported: categorical splits have no threshold order."
        )
    best = booster.best_iteration
    tree_limit = best * booster.num_model_per_iteration() if best and best > 0 else None
    adjust = partial(_fix_lightgbm_forest, nan_as_zero=_nan_as_zero(splits), average=bool(dump.get("average_output")))
    return ModelInfo(
        model,
        None,
        booster.num_feature(),
        as_names(booster.feature_name()),
        tree_limit,
        model.predict,
        "lightgbm",
        adjust,
    )


def _check_lightgbm_objective(dump: dict) -> None:
    if "objective" not in dump:
        # a custom objective function leaves no name in the model: it may not be squared error
        raise UnsupportedModelError(
            "LightGBM model trained with a custom objective function is not supported: the R^2 decomposition "
            "needs a regressor fitted with squared error, and the model does not record which loss it used."
        )
    objective, *options = str(dump["objective"]).split()
    if objective not in _LIGHTGBM_L2:
        refuse("LightGBM model", "objective", objective)
    if "sqrt" in options:
        # the model predicts the square of its trees' sum
        refuse("LightGBM model", "reg_sqrt", True)


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
        for node in tree:
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
    """NaN routed as LightGBM routes it, and random-forest mode's average of the trees."""
    nodes = forest.nodes
    tree, node, zero_left = nan_as_zero
    used = tree < forest.n_trees  # early stopping may have dropped trailing trees
    tree, node, zero_left = tree[used], node[used], zero_left[used]
    default = nodes.default.copy()
    default[tree, node] = np.where(zero_left, nodes.left[tree, node], nodes.right[tree, node])
    # boosting='rf' predicts the mean of its trees, which shap reads as their sum
    value = nodes.value / forest.n_trees if average else nodes.value
    return replace(forest, nodes=replace(nodes, default=default, value=value))
