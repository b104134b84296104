"""scikit-learn trees, forests and gradient boosting: which are accepted, and how shap reads them.

shap parses their trees; this module checks that the model is a fitted squared-error regressor (or a
forest classifier, whose class probabilities are sums of trees) and hands shap a model it can read
where it cannot read the original (``GradientBoostingRegressor(init="zero")``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from shap.utils import safe_isinstance
from sklearn.utils.validation import check_is_fitted

from .categories import CategoricalModel, CategorySplit
from .category_codes import CategoricalColumn, coded_rows
from .forest import Forest
from .info import ModelInfo, UnsupportedModelError, as_names, refuse

__all__ = ["SKLEARN_FOREST_CLASSIFIERS", "SKLEARN_TREES", "sklearn_info"]

SKLEARN_TREES = [
    "sklearn.tree.DecisionTreeRegressor",
    "sklearn.tree.ExtraTreeRegressor",
    "sklearn.ensemble.RandomForestRegressor",
    "sklearn.ensemble.ExtraTreesRegressor",
]
# their predict_proba is a sum of trees (each tree's leaf class fractions, averaged)
SKLEARN_FOREST_CLASSIFIERS = [
    "sklearn.tree.DecisionTreeClassifier",
    "sklearn.tree.ExtraTreeClassifier",
    "sklearn.ensemble.RandomForestClassifier",
    "sklearn.ensemble.ExtraTreesClassifier",
]
_SQUARED_CRITERIA = {"squared_error", "friedman_mse"}


def sklearn_info(model: Any) -> ModelInfo | None:
    """The model's record if it is a supported scikit-learn model, else ``None``.

    Parameters
    ----------
    model : object
        Any model.

    Returns
    -------
    ModelInfo or None
        The record of a supported scikit-learn tree model; ``None`` for other libraries' models.
    """
    if safe_isinstance(model, SKLEARN_FOREST_CLASSIFIERS):
        return _sklearn_forest_classifier(model)
    if safe_isinstance(model, SKLEARN_TREES):
        return _sklearn_tree(model)
    if safe_isinstance(model, "sklearn.ensemble.GradientBoostingRegressor"):
        return _sklearn_gradient_boosting(model)
    if safe_isinstance(model, "sklearn.ensemble.HistGradientBoostingRegressor"):
        return _sklearn_hist_gradient_boosting(model)
    if safe_isinstance(model, "sklearn.ensemble.HistGradientBoostingClassifier"):
        return _sklearn_hist_gradient_boosting(model)
    if safe_isinstance(model, "sklearn.ensemble.GradientBoostingClassifier"):
        return _sklearn_gradient_boosting_classifier(model)
    return None


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


# each loss of the margin: the regressors' Poisson and Gamma have the log link, the classifier's the logit
_HIST_LOSSES = {"squared_error": "squared_error", "poisson": "poisson", "gamma": "gamma", "log_loss": "log_loss"}


def _sklearn_hist_gradient_boosting(model: Any) -> ModelInfo:
    check_is_fitted(model)
    if model.loss not in _HIST_LOSSES:
        refuse(type(model).__name__, "loss", model.loss)
    loss = _HIST_LOSSES[model.loss]
    info = _hist_numeric_info(model, loss)
    categorical = getattr(model, "is_categorical_", None)
    if categorical is not None and np.any(categorical):
        return _hist_categorical(model, info, _HIST_MARGINS[loss])
    return info


def _hist_numeric_info(model: Any, loss: str) -> ModelInfo:
    """The record of a HistGradientBoosting model as shap reads it (categorical splits read as numeric)."""
    if loss == "squared_error":
        return _sklearn_info(model)
    if loss == "log_loss":
        return _boosted_classifier(model, model, model.n_trees_per_iteration_)
    names = as_names(getattr(model, "feature_names_in_", None))
    predict = partial(_log_of_predict, model)
    return ModelInfo(model, None, model.n_features_in_, names, None, predict, "sklearn", loss=loss)


def _boosted_classifier(model: Any, shap_model: Any, n_outputs: int) -> ModelInfo:
    """A boosted classifier: its margin (one output, or one per class of a softmax) is a sum of trees."""
    names = as_names(getattr(model, "feature_names_in_", None))
    classes = np.asarray(model.classes_)
    outputs = tuple(str(c) for c in classes) if n_outputs > 1 else ()
    return ModelInfo(
        shap_model,
        None,
        model.n_features_in_,
        names,
        None,
        model.decision_function,
        "sklearn",
        outputs=outputs,
        classes=classes,
        loss="log_loss",
    )


def _log_of_predict(model: Any, X: Any) -> np.ndarray:
    """The margin of a model with the log link: the log of its predicted mean."""
    return np.log(model.predict(X))


def _predict(model: Any, X: Any) -> np.ndarray:
    return model.predict(X)


def _decision_function(model: Any, X: Any) -> np.ndarray:
    return model.decision_function(X)


# what the trees of a HistGradientBoosting model of each loss add up to, asked of the model
_HIST_MARGINS = {
    "squared_error": _predict,
    "log_loss": _decision_function,
    "poisson": _log_of_predict,
    "gamma": _log_of_predict,
}


def _sklearn_gradient_boosting_classifier(model: Any) -> ModelInfo:
    """``GradientBoostingClassifier`` of log-loss; shap reads binary ones, the others are handed to it
    as their trees (one per stage and class, each adding to its class's margin)."""
    check_is_fitted(model)
    if model.loss != "log_loss":
        refuse("GradientBoostingClassifier", "loss", model.loss)
    if not (isinstance(model.init_, str) and model.init_ == "zero") and not safe_isinstance(
        model.init_, "sklearn.dummy.DummyClassifier"
    ):
        raise UnsupportedModelError(
            f"GradientBoostingClassifier with init={type(model.init_).__name__} is not supported: "
            "its starting margin must be a constant (init=None, 'zero' or a DummyClassifier)."
        )
    n_outputs = model.estimators_.shape[1]
    zero = isinstance(model.init_, str)
    if n_outputs == 1 and not zero:
        return _boosted_classifier(model, model, 1)
    base = np.zeros(n_outputs) if zero else model._raw_predict_init(np.zeros((1, model.n_features_in_)))[0]
    trees = []
    for stage in model.estimators_:
        for k, estimator in enumerate(stage):
            tree = _sklearn_tree_dict(estimator.tree_, model.learning_rate)
            values = np.zeros((len(tree["values"]), n_outputs))
            values[:, k] = tree["values"][:, 0]
            trees.append({**tree, "values": values})
    shap_model = {"trees": trees, "base_offset": base, "input_dtype": np.float32, "tree_output": "log_odds"}
    return _boosted_classifier(model, shap_model, n_outputs)


def _hist_categorical(model: Any, info: ModelInfo, margin: Any) -> ModelInfo:
    """A HistGradientBoosting model with categorical features (:func:`hist_categorical_model`): ``info``
    as shap reads it, and ``margin(model, rows)`` what its trees add up to."""
    order = _hist_input_order(model)
    features = hist_categorical_model(model, order)
    return replace(
        info,
        adjust=partial(_in_input_order, order=order),
        predict=partial(_hist_predict_codes, model, features, margin),
        categorical=features,
        # shap reads the categorical splits as numeric ones, on the encoded columns' order: it is
        # given the trees as read here
        shap_explains_wrong=True,
    )


def _hist_input_order(model: Any) -> np.ndarray:
    """The input position of each feature the trees read: a HistGradientBoosting model with
    categorical features encodes them first (an ``OrdinalEncoder`` in a ``ColumnTransformer``),
    and its trees read the encoded columns, then the numeric ones."""
    preprocessor = model._preprocessor
    order = np.empty(model.n_features_in_, dtype=np.int64)
    for name, _, columns in preprocessor.transformers_:
        if name not in preprocessor.output_indices_:
            continue
        inputs = np.flatnonzero(columns) if np.asarray(columns).dtype == bool else np.asarray(columns, dtype=np.int64)
        order[preprocessor.output_indices_[name]] = inputs
    return order


def _in_input_order(forest: Forest, order: np.ndarray) -> Forest:
    """The trees reading the input's columns, not the encoded ones (:func:`_hist_input_order`)."""
    nodes = forest.nodes
    feature = np.where(nodes.left >= 0, order[nodes.feature], nodes.feature)
    return replace(forest, nodes=replace(nodes, feature=feature))


def hist_categorical_model(model: Any, order: np.ndarray) -> CategoricalModel:
    """The categorical features of a HistGradientBoosting model and its splits on them.

    Its encoder matches values to the categories it saw in ``fit`` (sorted) and reads any other
    value as missing.  A split sends the codes of its bitset left, the other known codes right,
    and unknown codes (and NaN) where it sends missing values.
    """
    encoder = model._preprocessor.named_transformers_["encoder"]
    names = as_names(getattr(model, "feature_names_in_", None))
    inputs = np.flatnonzero(model.is_categorical_)
    columns = tuple(
        CategoricalColumn(int(j), names[j] if names else str(j), _without_nan(categories), unseen="missing")
        for j, categories in zip(inputs, encoder.categories_, strict=True)
    )
    known, known_index = model._bin_mapper.make_known_categories_bitsets()
    splits = {}
    # shap reads a classifier's trees iteration by iteration, class by class within one
    predictors = [predictor for iteration in model._predictors for predictor in iteration]
    for t, predictor in enumerate(predictors):
        nodes = predictor.nodes
        for u in np.flatnonzero(nodes["is_categorical"] & ~nodes["is_leaf"].astype(bool)):
            node = nodes[u]
            left = _bits(predictor.raw_left_cat_bitsets[node["bitset_idx"]])
            seen = _bits(known[known_index[node["feature_idx"]]])
            rest_left = bool(node["missing_go_to_left"])  # unknown codes go with the missing values
            exceptions = seen - left if rest_left else left
            feature = int(order[node["feature_idx"]])
            splits[t, int(u)] = CategorySplit(feature, frozenset(exceptions), rest_left, rest_left)
    return CategoricalModel(columns, splits)


def _without_nan(categories: np.ndarray) -> np.ndarray:
    # the encoder lists NaN last when it saw missing values: they are no category
    values = list(categories)
    if values and isinstance(values[-1], float) and np.isnan(values[-1]):
        values = values[:-1]
    return np.asarray(values, dtype=object)


def _bits(bitset: np.ndarray) -> set:
    """The integers whose bits are set in a scikit-learn bitset (8 little-endian uint32 words)."""
    return set(np.flatnonzero(np.unpackbits(np.ascontiguousarray(bitset).view(np.uint8), bitorder="little")).tolist())


def _hist_predict_codes(model: Any, categorical: CategoricalModel, margin: Any, X: Any) -> np.ndarray:
    """``margin(model, rows)`` (:data:`_HIST_MARGINS`) of rows in the model's order, categories as values
    or as the codes this package reads: codes go back to the categories the model's encoder matches
    by value."""
    X = coded_rows(categorical.features, X)
    columns = {}
    for j in range(X.shape[1]):
        column = categorical.features.get(j)
        if column is None:
            columns[j] = X[:, j]
            continue
        values = np.full(X.shape[0], np.nan, dtype=object)
        known = ~np.isnan(X[:, j]) & (X[:, j] >= 0)
        values[known] = column.categories[X[known, j].astype(np.int64)]
        columns[j] = values
    frame = pd.DataFrame(columns)
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        frame.columns = list(names)
        return margin(model, frame)
    return margin(model, frame.to_numpy())
