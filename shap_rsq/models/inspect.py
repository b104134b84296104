"""What shap-rsq accepts: inspect a model and refuse what cannot be decomposed.

shap parses the trees of every supported family.  This layer only decides whether a model is a
fitted squared-error regressor (or a forest classifier) without categorical splits, says where its
trees are read from and how to check them against the model's own predictions.  Where shap's loader
misreads a model, the family's module fixes it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd
from shap.explainers._tree import TreeEnsemble
from shap.utils import safe_isinstance
from sklearn.base import is_classifier

from .catboost_models import catboost_info
from .forest import Forest
from .info import BOOSTED_CLASSIFIER, ModelInfo, UnsupportedModelError
from .lightgbm_models import lightgbm_info
from .shap_trees import forest_model, outputs_model, tree_outputs
from .sklearn_models import sklearn_info
from .xgboost_models import xgboost_info

__all__ = [
    "ModelInfo",
    "UnsupportedModelError",
    "frame_for_categories",
    "inspect_model",
    "read_forests",
    "refuse_boosted_classifier",
]

_SUPPORTED = (
    "scikit-learn DecisionTreeRegressor, ExtraTreeRegressor, RandomForestRegressor, ExtraTreesRegressor, "
    "GradientBoostingRegressor, HistGradientBoostingRegressor; XGBRegressor or xgboost.Booster; "
    "LGBMRegressor or lightgbm.Booster; CatBoostRegressor; forest classifiers (RandomForestClassifier, "
    "ExtraTreesClassifier, DecisionTreeClassifier, ExtraTreeClassifier); and gradient-boosting classifiers and "
    "Poisson, Gamma and Tweedie boosters (GradientBoostingClassifier, HistGradientBoostingClassifier, "
    "XGBClassifier, LGBMClassifier, CatBoostClassifier)"
)


def inspect_model(model: Any) -> ModelInfo:
    """Check that ``model`` can be decomposed and describe it; raise a clear error otherwise.

    Parameters
    ----------
    model : object
        A fitted model.

    Returns
    -------
    ModelInfo
        What the engine needs to know about it.

    Raises
    ------
    UnsupportedModelError
        For a model that cannot be decomposed, with the reason.
    """
    info = _family_info(unfrozen(model))
    return _with_fixed_trees_for_shap(info) if info.shap_explains_wrong else info


def unfrozen(model: Any) -> Any:
    """The model inside scikit-learn's ``FrozenEstimator`` (a fitted model that ``fit`` leaves as
    it is, for Pipelines and cross-validation), or ``model`` itself.

    Parameters
    ----------
    model : object
        A model, frozen or not.

    Returns
    -------
    object
        The model whose trees are read.
    """
    while safe_isinstance(model, "sklearn.frozen._frozen.FrozenEstimator"):
        model = model.estimator
    return model


def _family_info(model: Any) -> ModelInfo:
    info = sklearn_info(model)
    if info is not None:
        return info
    _refuse_classifier(model)
    if safe_isinstance(model, ["xgboost.sklearn.XGBModel", "xgboost.core.Booster"]):
        return xgboost_info(model)
    if safe_isinstance(model, ["lightgbm.sklearn.LGBMModel", "lightgbm.basic.Booster"]):
        return lightgbm_info(model)
    if safe_isinstance(model, "catboost.core.CatBoost"):
        return catboost_info(model)
    raise UnsupportedModelError(f"{type(model).__name__} is not a supported tree model. Supported: {_SUPPORTED}.")


def _with_fixed_trees_for_shap(info: ModelInfo) -> ModelInfo:
    """``info`` whose ``shap_model`` is its trees as read and fixed: shap's own SHAP values of the
    model would not add up to its predictions (:mod:`.shap_trees`)."""
    forests = read_forests(
        TreeEnsemble(info.shap_model, model_output="raw") if info.trees is None else None, info, "model"
    )
    if len(forests) > 1:
        if info.trees is not None:  # several outputs read by this package (a CatBoost softmax): exact
            return dataclasses.replace(info, shap_model=outputs_model(forests), tree_limit=None, adjust=None)
        # read by shap (a scikit-learn softmax with categorical splits): the engine reads the fixed
        # trees, in the model's order, as the one-output case below does
        categorical = None if info.categorical is None else info.categorical.already_routed(forests[0].routing)
        return dataclasses.replace(
            info,
            shap_model=outputs_model(forests),
            trees=outputs_model(forests, for_shap=False),
            tree_outputs=tree_outputs(forests),
            tree_limit=None,
            adjust=None,
            categorical=categorical,
        )
    (forest,) = forests
    # shap's copy has vanishing covers where no training row went; the engine reads the exact ones
    exact = forest_model(forest, for_shap=False)
    # the fixed trees read routing columns already: they keep the routing, not the splits to route
    categorical = None if info.categorical is None else info.categorical.already_routed(forest.routing)
    return dataclasses.replace(
        info, shap_model=forest_model(forest), trees=exact, tree_limit=None, adjust=None, categorical=categorical
    )


def _refuse_classifier(model: Any) -> None:
    if not _is_classifier(model) or safe_isinstance(model, _GRADIENT_BOOSTED):
        return
    refuse_boosted_classifier(model)
    # a bagging, calibrated or voting ensemble, a Pipeline, a linear model: not a boosted one
    raise UnsupportedModelError(f"{type(model).__name__} is not a supported tree model. Supported: {_SUPPORTED}.")


def refuse_boosted_classifier(model: Any) -> None:
    """Refuse a boosted classifier that has no loss of a margin, fitted or not (AdaBoost).

    Gradient-boosted classifiers (XGBoost, LightGBM, CatBoost, scikit-learn) are boosted on the
    log-loss of their margin and are decomposed through its second-order games.

    Parameters
    ----------
    model : object
        A model or an unfitted estimator (the selector asks before it fits one).

    Raises
    ------
    UnsupportedModelError
        For AdaBoost classifiers.
    """
    if _is_classifier(model) and safe_isinstance(model, _BOOSTED_CLASSIFIERS):
        raise UnsupportedModelError(f"{type(model).__name__} is a boosted classifier: {BOOSTED_CLASSIFIER}")


def _is_classifier(model: Any) -> bool:
    try:
        return is_classifier(model)
    except (AttributeError, TypeError):  # boosters and other non-estimators carry no sklearn tags
        return getattr(model, "_estimator_type", None) == "classifier"


# boosted classifiers whose probabilities are no link of a margin boosted on a loss
_BOOSTED_CLASSIFIERS = ["sklearn.ensemble._weight_boosting.AdaBoostClassifier"]
# classifiers boosted on the log-loss of their margin: their family's module reads them
_GRADIENT_BOOSTED = [
    "xgboost.sklearn.XGBModel",
    "xgboost.core.Booster",
    "lightgbm.sklearn.LGBMModel",
    "lightgbm.basic.Booster",
    "catboost.core.CatBoost",
]


# estimators that may split on a DataFrame's category (or text) columns natively
_CATEGORICAL_MODELS = [
    "lightgbm.sklearn.LGBMModel",
    "xgboost.sklearn.XGBModel",
    "catboost.core.CatBoost",
    "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.BaseHistGradientBoosting",
]


def frame_for_categories(model: Any, X: Any) -> bool:
    """Whether ``X`` is a pandas DataFrame with category or text columns and ``model`` (fitted or
    not) one that may split on them natively: the frame then goes to it as it is.

    Parameters
    ----------
    model : object
        An estimator.
    X : object
        The rows.

    Returns
    -------
    bool
        True for such a frame and model.
    """
    if not isinstance(X, pd.DataFrame) or all(map(pd.api.types.is_numeric_dtype, X.dtypes)):
        return False
    return safe_isinstance(unfrozen(model), _CATEGORICAL_MODELS)


def read_forests(shap_model: Any, info: ModelInfo, model_name: str) -> list[Forest]:
    """One forest table per output, from shap's parsed model (or the trees ``info`` fixed up).

    ``shap_model`` is the ``TreeEnsemble`` shap's ``TreeExplainer`` built from the model.

    Parameters
    ----------
    shap_model : shap.explainers._tree.TreeEnsemble
        shap's parse of the model.
    info : ModelInfo
        The model's record.
    model_name : str
        The model's class name, for messages.

    Returns
    -------
    list of Forest
        One per output.
    """
    ensemble = shap_model if info.trees is None else TreeEnsemble(info.trees)
    if ensemble.trees is None:
        raise UnsupportedModelError(f"shap could not read the trees of this {model_name}.")
    if info.categorical is None and np.any((ensemble.threshold_types > 0) & (ensemble.children_left >= 0)):
        raise UnsupportedModelError("Models with categorical splits are not supported.")
    tree_limit = info.tree_limit if info.tree_limit is not None else ensemble.tree_limit
    return [_read_forest(ensemble, info, tree_limit, k) for k in range(info.n_outputs)]


def _read_forest(ensemble, info: ModelInfo, tree_limit: int | None, output: int) -> Forest:
    """One output's trees; trees that never touch it (another target's, in XGBoost) are dropped.

    A softmax's class trees keep their positions among all trees: each class's games need the
    margins the other classes' trees reached before it."""
    forest = Forest.from_ensemble(ensemble, info.n_features, tree_limit, output, info.tree_outputs)
    if info.adjust is not None:
        forest = info.adjust(forest)
    if info.categorical is not None:
        forest = info.categorical.routed(forest)
    if info.bases is not None:
        forest = dataclasses.replace(forest, base_offset=info.bases[output])
    if info.n_outputs == 1:
        return forest
    if info.second_order:
        trees = np.arange(forest.n_trees)
        mine = trees % info.n_outputs == output if info.tree_outputs is None else info.tree_outputs[trees] == output
        return forest.of_output(np.flatnonzero(mine))
    return forest.without_zero_trees()
