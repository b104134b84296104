"""CatBoost, where shap's loader falls short: scale and bias, ``nan_mode``, and non-symmetric trees.

shap 0.51 reads CatBoost's symmetric trees but drops the model's scale and
bias and sends missing values left whatever ``nan_mode`` says; it cannot read
``Depthwise`` / ``Lossguide`` trees at all, which are read here from CatBoost's
JSON export.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from sklearn.exceptions import NotFittedError

from .catboost_categories import in_output, output_trees, symmetric_categorical_trees
from .forest import Forest
from .info import ModelInfo, UnsupportedModelError, as_names, refuse

__all__ = ["catboost_info"]


def catboost_info(model: Any) -> ModelInfo:
    """Record of a CatBoost regressor, classifier or ``catboost.CatBoost``; refuses what cannot be decomposed.

    Parameters
    ----------
    model : catboost.CatBoost
        A fitted CatBoost model.

    Returns
    -------
    ModelInfo
        The model's record.
    """
    if not model.is_fitted():
        raise NotFittedError(f"This {type(model).__name__} instance is not fitted yet. Call 'fit' first.")
    params = _training_params(model)
    loss_function = str(params.get("loss_function", "RMSE"))
    loss = loss_function.split(":")[0]
    if loss in ("MultiRMSE", "MultiClassOneVsAll", "MultiLogloss", "MultiCrossEntropy"):
        raise UnsupportedModelError(
            f"CatBoost model with loss_function={loss!r} has several outputs and is not supported; supported are "
            "RMSE, Logloss, CrossEntropy, MultiClass (a softmax), Poisson and Tweedie."
        )
    if loss not in _CATBOOST_LOSSES:
        refuse("CatBoost model", "loss_function", loss)
    game_loss, power = _CATBOOST_LOSSES[loss], _tweedie_power(loss_function)
    for kind in ("text", "embedding"):
        indices = getattr(model, f"get_{kind}_feature_indices", lambda: [])()
        if indices:
            raise UnsupportedModelError(f"CatBoost model with {kind} features {indices} is not supported.")
    if type(model).__name__ == "CatBoost":
        model = _as_estimator(model, classifier=game_loss == "log_loss")
    extra = {"loss": game_loss, "loss_power": power}
    predict = model.predict
    if game_loss != "squared_error":  # the games are of the margin; the model predicts its link of it
        predict = partial(_raw_predict, model)
    if game_loss == "log_loss" and loss in ("Logloss", "MultiClass"):
        classes = getattr(model, "classes_", None)
        extra["classes"] = np.asarray([0, 1] if classes is None else classes)
    scale, bias = model.get_scale_and_bias()
    names = as_names(model.feature_names_)
    if loss == "MultiClass" and not model.get_cat_feature_indices():
        return _softmax_info(model, params, names, predict, extra)
    bias = float(np.ravel(bias)[0]) if np.size(bias) else 0.0
    if model.get_cat_feature_indices():
        return _categorical_info(model, params, names, scale, extra)
    if params.get("grow_policy", "SymmetricTree") == "SymmetricTree":
        # shap reads symmetric trees (and explains predictions natively); fix what its loader drops.
        # NaN goes left except under nan_mode='Max', and even then only on features that had NaN in
        # training: only the JSON export says which, so it is read only in that case.
        nan_right = _nan_right_features(_catboost_json(model)) if params.get("nan_mode", "Min") == "Max" else set()
        adjust = partial(_fix_catboost_forest, scale=scale, bias=bias, nan_right=frozenset(nan_right))
        # with a scale, which CatBoost's own SHAP values (those shap returns) refuse, shap gets the
        # fixed trees; the bias and NaN it explains right, once its expected value has the bias
        # (the explainer's, tests/test_library_gaps.py)
        wrong = scale != 1.0
        return ModelInfo(
            model, None, len(names), names, None, predict, "catboost", adjust, shap_explains_wrong=wrong, **extra
        )
    document = _catboost_json(model)
    trees = _nonsymmetric_trees(document, scale, bias, _nan_right_features(document))
    # CatBoost's own SHAP values of these trees, which shap returns, do not add up to its predictions
    return ModelInfo(model, trees, len(names), names, None, predict, "catboost", shap_explains_wrong=True, **extra)


def _softmax_info(model: Any, params: dict, names: list[str], predict: Any, extra: dict) -> ModelInfo:
    """A ``MultiClass`` model: each tree holds a vector of the classes' values in every leaf, read here
    as one tree per class (shap reads one value per leaf), in the order round by round, class by class.

    The softmax's second-order games take a round's class trees in turn, as XGBoost's are: the loss
    change of adding a tree's vector is the sum of the changes of adding its classes' values one
    after the other, each a game of one margin with the exact gradient and Hessian where it starts.
    """
    document = _catboost_json(model)
    scale = document.get("scale_and_bias", [1.0, [0.0]])[0]
    classes = extra["classes"]
    k = len(classes)
    nan_right = _nan_right_features(document)
    if params.get("grow_policy", "SymmetricTree") == "SymmetricTree":
        per_class = [_symmetric_tree_classes(tree, scale, nan_right, k) for tree in document["oblivious_trees"]]
    else:
        per_class = [_nonsymmetric_tree_classes(tree, scale, nan_right, k) for tree in document["trees"]]
    trees = {
        "trees": [tree for round_trees in per_class for tree in round_trees],
        "base_offset": 0.0,
        "input_dtype": np.float32,
        "tree_output": "raw_value",
        "objective": "squared_error",
    }
    bases = _class_bases(document, k)
    outputs = tuple(str(c) for c in classes)
    # CatBoost's own SHAP values (those shap returns) refuse a scale; shap then gets the read trees
    return ModelInfo(
        model,
        trees,
        len(names),
        names,
        None,
        predict,
        "catboost",
        outputs=outputs,
        bases=bases,
        shap_explains_wrong=scale != 1.0,
        **extra,
    )


def _class_bases(document: dict, k: int) -> tuple[float, ...]:
    """Each of a ``MultiClass`` model's ``k`` classes' bias (one for all where the export has one)."""
    bias = document.get("scale_and_bias", [1.0, [0.0]])[1]
    return tuple(float(b) for b in np.broadcast_to(np.ravel(bias) if np.size(bias) else 0.0, k))


def _symmetric_tree_classes(tree: dict, scale: float, nan_right: set[int], k: int) -> list[dict]:
    """A symmetric tree of ``k`` values a leaf as ``k`` trees (:func:`.catboost_categories.output_trees`)."""
    features = [_split_feature(split) for split in tree["splits"]]
    levels = [(f, float(split["border"]), f in nan_right) for f, split in zip(features, tree["splits"], strict=True)]
    return output_trees(levels, tree, scale, k)


def _nonsymmetric_tree_classes(tree: dict, scale: float, nan_right: set[int], k: int) -> list[dict]:
    """A Depthwise / Lossguide tree of ``k`` values a leaf as ``k`` trees, as :func:`_symmetric_tree_classes`."""
    return [in_output(_nonsymmetric_tree(tree, scale, nan_right, c), c, k) for c in range(k)]


# the losses of the margin: Logloss and CrossEntropy take the logit, MultiClass the softmax's
# margins, Poisson and Tweedie the log
_CATBOOST_LOSSES = {
    "RMSE": "squared_error",
    "Logloss": "log_loss",
    "MultiClass": "log_loss",
    "CrossEntropy": "log_loss",
    "Poisson": "poisson",
    "Tweedie": "tweedie",
}


def _tweedie_power(loss_function: str) -> float:
    """The ``variance_power`` of ``"Tweedie:variance_power=1.5"`` (0 for other losses)."""
    if not loss_function.startswith("Tweedie"):
        return 0.0
    options = dict(part.split("=", 1) for part in loss_function.split(":")[1].split(";") if "=" in part)
    return float(options["variance_power"])


def _raw_predict(model: Any, X: Any) -> np.ndarray:
    """The margin (``RawFormulaVal``: the sum of the trees, scaled, plus the bias)."""
    return model.predict(X, prediction_type="RawFormulaVal")


def _categorical_info(model: Any, params: dict, names: list[str], scale: float, extra: dict) -> ModelInfo:
    """A model with categorical features: its symmetric trees read here (a ``MultiClass`` model's as
    one tree per class, as :func:`_softmax_info` reads them), its categorical splits on routing
    columns asked of the model (:mod:`.catboost_categories`)."""
    policy = params.get("grow_policy", "SymmetricTree")
    if policy != "SymmetricTree":
        raise UnsupportedModelError(
            f"CatBoost model with categorical features {model.get_cat_feature_indices()} and grow_policy={policy!r} "
            "is not supported: the sides of its categorical splits are read from symmetric trees only.  Fit it with "
            "grow_policy='SymmetricTree' (the default)."
        )
    document = _catboost_json(model)
    k = len(extra["classes"]) if str(params.get("loss_function", "")).startswith("MultiClass") else 1
    trees, categorical = symmetric_categorical_trees(model, document, names, scale, _nan_right_features(document), k)
    cat_features = sorted(categorical.features)
    predict = partial(_predict_categories, model, categorical, names, cat_features)
    # CatBoost's own SHAP values (shap's) are of the model, categories included: shap keeps the model
    if k == 1:
        return ModelInfo(model, trees, len(names), names, None, predict, "catboost", categorical=categorical, **extra)
    bases = _class_bases(document, k)
    outputs = tuple(str(c) for c in extra["classes"])
    return ModelInfo(
        model,
        {**trees, "base_offset": 0.0},
        len(names),
        names,
        None,
        predict,
        "catboost",
        categorical=categorical,
        outputs=outputs,
        bases=bases,
        **extra,
    )


def _predict_categories(model: Any, categorical: Any, names: list[str], cat_features: list[int], X: Any) -> np.ndarray:
    """The model's margin (``RawFormulaVal``: what its trees add up to, scaled, plus the bias) of rows
    in its order: as given, or as the codes this package reads (their categories put back)."""
    from catboost import Pool

    if isinstance(X, np.ndarray) and X.dtype.kind == "f":
        frame = pd.DataFrame(X, columns=names).astype({names[j]: object for j in cat_features})
        for j in cat_features:
            values = np.asarray(categorical.features[j].values, dtype=object)
            frame[names[j]] = values[X[:, j].astype(np.int64)]
        X = frame
    return model.predict(Pool(X, cat_features=cat_features), prediction_type="RawFormulaVal")


def _training_params(model: Any) -> dict:
    from catboost import CatBoostError

    try:
        return model.get_all_params()
    except CatBoostError as error:  # e.g. a model built by catboost.sum_models keeps no training parameters
        raise UnsupportedModelError(
            f"This {type(model).__name__} model carries no training parameters (models built by "
            "catboost.sum_models do not), so its loss function cannot be checked to be RMSE."
        ) from error


def _as_estimator(model: Any, classifier: bool) -> Any:
    """A ``CatBoostClassifier`` or ``CatBoostRegressor`` copy of a base-class ``catboost.CatBoost`` model.

    shap reads the trees of the two estimators but not of the base class, which
    ``catboost.CatBoost({"loss_function": ...})`` creates; the saved model is the same.
    """
    import catboost

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.cbm")
        model.save_model(path)
        copy = catboost.CatBoostClassifier() if classifier else catboost.CatBoostRegressor()
        copy.load_model(path)
    return copy


def _nan_right_features(document: dict) -> set[int]:
    """Features whose NaN CatBoost sends right (``x > border`` true).

    ``AsTrue`` (nan_mode='Max' on a feature with NaN in training) reads NaN as
    above every border; ``AsFalse`` (nan_mode='Min') and ``AsIs`` (no NaN seen in
    training, where the comparison with NaN is false) send it left.
    """
    return {
        int(f["flat_feature_index"])
        for f in document["features_info"].get("float_features", [])
        if f.get("nan_value_treatment") == "AsTrue"
    }


def _catboost_json(model: Any) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="json")
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)


def _fix_catboost_forest(forest: Forest, scale: float, bias: float, nan_right: frozenset[int]) -> Forest:
    """shap's symmetric trees with CatBoost's scale and bias, float32 comparisons and NaN routing."""
    nodes = forest.nodes
    go_right = (nodes.left >= 0) & np.isin(nodes.feature, list(nan_right))
    fixed = replace(nodes, value=nodes.value * scale, default=np.where(go_right, nodes.right, nodes.left))
    return replace(forest, nodes=fixed, base_offset=forest.base_offset + bias, input_dtype=np.dtype(np.float32))


def _nonsymmetric_trees(document: dict, scale: float, bias: float, nan_right: set[int]) -> dict:
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

    def __init__(self, nan_right: set[int], scale: float, output: int | None = None):
        self.left: list[int] = []
        self.right: list[int] = []
        self.default: list[int] = []
        self.feature: list[int] = []
        self.threshold: list[float] = []
        self.value: list[float] = []
        self.cover: list[float] = []
        self.nan_right = nan_right
        self.scale = scale
        self.output = output  # which class's value of a leaf's vector (MultiClass), or None

    def node(self) -> int:
        for column in (self.left, self.right, self.default, self.feature):
            column.append(-1)
        self.threshold.append(0.0)
        self.value.append(0.0)
        self.cover.append(0.0)
        return len(self.left) - 1

    def leaf(self, index: int, value: float | list, weight: float) -> None:
        self.value[index] = (value if self.output is None else value[self.output]) * self.scale
        self.cover[index] = weight

    def split(self, index: int, split: dict, left: int, right: int) -> None:
        feature = _split_feature(split)
        self.feature[index] = feature
        self.threshold[index] = float(split["border"])
        self.left[index], self.right[index] = left, right
        self.default[index] = right if feature in self.nan_right else left
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


def _nonsymmetric_tree(tree: dict, scale: float, nan_right: set[int], output: int | None = None) -> dict:
    builder = _TreeBuilder(nan_right, scale, output)

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
