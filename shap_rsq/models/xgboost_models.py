"""XGBoost: which models are accepted (squared error, ``gbtree``, NaN as missing), how they predict, and
each target's base score for multi-target models (shap reads the first target's for all)."""

from __future__ import annotations

import dataclasses
import json
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from sklearn.exceptions import NotFittedError

from .categories import CategoricalModel, CategorySplit
from .category_codes import CategoricalColumn, coded_rows
from .forest import Forest
from .info import ModelInfo, UnsupportedModelError, as_names, refuse

__all__ = ["xgboost_info"]


def xgboost_info(model: Any) -> ModelInfo:
    """Record of an ``XGBRegressor`` or ``xgboost.Booster``; refuses what cannot be decomposed.

    Parameters
    ----------
    model : xgboost.XGBRegressor or xgboost.Booster
        A fitted XGBoost model.

    Returns
    -------
    ModelInfo
        The model's record.
    """
    import xgboost

    is_booster = isinstance(model, xgboost.Booster)
    booster = model if is_booster else model.get_booster()  # raises NotFittedError when unfitted
    config = _xgboost_config(booster)
    _check_xgboost_settings(model, is_booster, config)
    if booster.num_boosted_rounds() == 0:  # shap's loader fails on it with an IndexError
        raise UnsupportedModelError(
            "XGBoost model has no trees (n_estimators=0 or num_boost_round=0): it predicts its base_score "
            "for every row, so no feature has a share of its R²."
        )
    n_features = booster.num_features()
    loss, power = _xgboost_loss(config)
    outputs, bases = _xgboost_targets(config)
    classes = None
    if loss == "log_loss" and config["objective"]["name"].startswith(("binary:", "multi:")):
        outputs, bases, classes = _xgboost_classes(model, is_booster, config)
    margin = loss != "squared_error"  # the games are of the margin, the model predicts its link of it
    if is_booster:
        predict = partial(_booster_predict, booster, margin=margin)  # a module-level function: explainers pickle
        # Booster.predict uses every tree; shap would stop at best_iteration, also in its own calls
        tree_limit = shap_tree_limit = len(booster.get_dump())  # shap counts trees, not rounds
    else:
        predict = partial(_margin_predict, model) if margin else model.predict
        tree_limit = shap_tree_limit = None
    names = as_names(booster.feature_names)
    categorical = _categorical_model(booster, names)
    if categorical is not None:
        predict = partial(_predict_codes, model, categorical, booster, margin=margin)
    return ModelInfo(
        model,
        None,
        n_features,
        names,
        tree_limit,
        predict,
        "xgboost",
        adjust=_compared_in_float32,
        outputs=outputs,
        bases=bases,
        shap_tree_limit=shap_tree_limit,
        tree_outputs=_tree_outputs(booster, config, len(outputs)),
        classes=classes,
        loss=loss,
        loss_power=power,
        categorical=categorical,
    )


# each objective's loss of the margin; the boosters' own Hessians (multi:softprob's 2 p (1 - p), the
# Poisson max_delta_step shift) are stand-ins the games do not use
_XGBOOST_LOSSES = {
    "reg:squarederror": "squared_error",
    "reg:linear": "squared_error",
    "binary:logistic": "log_loss",
    "binary:logitraw": "log_loss",
    "reg:logistic": "log_loss",
    "multi:softprob": "log_loss",
    "multi:softmax": "log_loss",
    "count:poisson": "poisson",
    "reg:gamma": "gamma",
    "reg:tweedie": "tweedie",
}


def _xgboost_loss(config: dict) -> tuple[str, float]:
    """The loss the objective boosted, and Tweedie's variance power."""
    objective = config["objective"]
    loss = _XGBOOST_LOSSES[objective["name"]]
    if loss != "tweedie":
        return loss, 0.0
    return loss, float(objective.get("tweedie_regression_param", {}).get("tweedie_variance_power", "1.5"))


def _xgboost_classes(model: Any, is_booster: bool, config: dict):
    """Outputs, base margins and classes of a classifier: one output (the margin) when binary, one
    per class (a softmax) otherwise."""
    parameters = config["learner_model_param"]
    n_classes = int(parameters.get("num_class", "0"))
    classes = getattr(model, "classes_", None) if not is_booster else None
    if classes is None:
        classes = np.arange(max(n_classes, 2))
    classes = np.asarray(classes)
    if n_classes <= 1:
        return (), None, classes
    # XGBoost keeps one base margin per class; shap reads the first for all
    bases = tuple(float(b) for b in parameters["base_score"].strip("[]").split(","))
    return tuple(str(c) for c in classes), bases, classes


def _margin_predict(model: Any, X: Any) -> np.ndarray:
    """The margin (sum of the trees and base) an XGBoost estimator predicts."""
    return model.predict(X, output_margin=True)


def _categorical_model(booster: Any, names: list[str] | None) -> CategoricalModel | None:
    """The categorical features (``feature_types`` ``"c"``) and the splits on them.

    A categorical split lists the codes that go right; every other code goes left, and so do
    negative codes and codes beyond any category (XGBoost casts a number to an integer, truncating
    it), NaN to the default child.  A model fitted on pandas categories stores them (XGBoost 3.1+)
    and recodes a frame's columns to them by value; it refuses a category it was not fitted on.
    """
    types = booster.feature_types or []
    features = [j for j, kind in enumerate(types) if kind == "c"]
    if not features:
        return None
    stored = _stored_categories(booster)
    columns = tuple(
        CategoricalColumn(
            j,
            names[j] if names else str(j),
            stored.get(j),
            unseen="refuse" if j in stored else "other",
        )
        for j in features
    )
    trees = json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
    splits = {}
    for t, tree in enumerate(trees):
        sets = tree["categories"]
        for node, start, size in zip(
            tree["categories_nodes"], tree["categories_segments"], tree["categories_sizes"], strict=True
        ):
            members = frozenset(int(c) for c in sets[start : start + size])
            missing_left = bool(tree["default_left"][node])
            splits[t, int(node)] = CategorySplit(int(tree["split_indices"][node]), members, True, missing_left)
    return CategoricalModel(columns, splits)


def _stored_categories(booster: Any) -> dict[int, np.ndarray]:
    """The categories a model fitted on a DataFrame stores, by feature (none before XGBoost 3.1, or
    for a model fitted on codes)."""
    if not hasattr(booster, "get_categories"):
        return {}
    try:
        categories = booster.get_categories(export_to_arrow=True)
    except Exception:  # a version that stores none, or a model with none
        return {}
    if categories is None or categories.empty():
        return {}
    return {
        j: np.asarray(values.to_pylist(), dtype=object)
        for j, (_, values) in enumerate(categories.to_arrow())
        if values is not None
    }


def _predict_codes(model: Any, categorical: CategoricalModel, booster: Any, X: Any, margin: bool = False) -> np.ndarray:
    """The model's ``predict`` of rows in its order, categories as values or as the codes this
    package reads: stored categories go back to a frame of pandas categories, codes stay numbers."""
    import xgboost

    X = coded_rows(categorical.features, X)
    names = booster.feature_names or [f"f{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=names)
    for column in categorical.columns:
        if column.categories is not None:
            codes = np.where(np.isnan(X[:, column.feature]), -1, X[:, column.feature]).astype(np.int64)
            frame[names[column.feature]] = pd.Categorical.from_codes(codes, categories=pd.Index(column.categories))
    if isinstance(model, xgboost.Booster):
        types = booster.feature_types
        matrix = xgboost.DMatrix(frame, missing=np.nan, enable_categorical=True, feature_types=types)
        return booster.predict(matrix, output_margin=margin)
    return model.predict(frame, output_margin=margin)


def _tree_outputs(booster: Any, config: dict, n_outputs: int) -> np.ndarray | None:
    """The target each tree adds to, where shap's reading (tree ``i`` to target ``i % targets``) is
    wrong: a multi-target model with ``num_parallel_tree > 1`` (``XGBRFRegressor`` on several
    targets) grows a round's parallel trees of one target next to each other."""
    parallel = int(config["gradient_booster"].get("gbtree_model_param", {}).get("num_parallel_tree", "1"))
    if n_outputs <= 1 or parallel <= 1:
        return None
    model = json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["model"]
    return np.asarray(model["tree_info"], dtype=np.int64)


def _compared_in_float32(forest: Forest) -> Forest:
    """XGBoost compares ``float32(x) < split``: rows are rounded to float32 before they meet the
    thresholds (shap reads them as ``x <= the float32 below split``, which a float64 ``x`` just above
    that float, rounding onto it, passes in XGBoost and fails here)."""
    return dataclasses.replace(forest, input_dtype=np.dtype(np.float32))


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
    if objective not in _XGBOOST_LOSSES:
        refuse("XGBoost model", "objective", objective)
    name = config["gradient_booster"]["name"]
    if name != "gbtree":
        # dart scales each tree by its dropout at predict time and gblinear has no trees: neither is
        # a sum of the trees as written (LightGBM's dart writes its trees already scaled)
        raise UnsupportedModelError(
            f"XGBoost model with booster={name!r} is not supported: only booster='gbtree' predicts with the "
            "sum of its trees as written."
        )
    if config.get("learner_train_param", {}).get("multi_strategy") == "multi_output_tree" or _vector_leaves(
        config, _booster_of(model, is_booster).num_boosted_rounds()
    ):
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


def _vector_leaves(config: dict, rounds: int) -> bool:
    """Whether a multi-target model's trees hold one leaf per target each: a model loaded from a
    file reports the default multi_strategy whatever it was fitted with, but holds one tree per
    round and parallel tree, not one per target too."""
    targets = max(int(config["learner_model_param"].get("num_target", "1")), 1)
    trees = config["gradient_booster"].get("gbtree_model_param", {})
    if targets == 1 or "num_trees" not in trees:
        return False
    return int(trees["num_trees"]) < rounds * targets * int(trees.get("num_parallel_tree", "1"))


def _booster_of(model: Any, is_booster: bool) -> Any:
    """The ``xgboost.Booster`` of a model (itself, or the scikit-learn estimator's)."""
    return model if is_booster else model.get_booster()


def _booster_predict(booster: Any, X: Any, margin: bool = False) -> np.ndarray:
    """``booster.predict`` on rows (the margin when ``margin``); rows given as an array take the
    names it was trained with."""
    import xgboost

    names = None if hasattr(X, "columns") else booster.feature_names
    return booster.predict(xgboost.DMatrix(X, missing=np.nan, feature_names=names), output_margin=margin)
