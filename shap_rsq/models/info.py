"""What the rest of the library is told about a model, and the error for models it cannot decompose."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exceptions import UnsupportedModelError
from .forest import Forest

__all__ = ["ModelInfo", "UnsupportedModelError", "as_names", "refuse"]


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
    outputs : tuple of str
        Names of the model's outputs when it has several (a classifier's classes, a
        multi-output regressor's targets); empty for a single output.
    classes : ndarray or None
        A classifier's ``classes_`` (labels of any type), ``None`` for regressors: the target
        is then one-hot encoded over them and the loss is the Brier score.
    bases : tuple of float or None
        Each output's base value, where shap's loader reads a wrong one (XGBoost multi-target).
    shap_explains_wrong : bool
        Whether shap's own prediction SHAP values of this model miss the fixes made when its trees
        are read (:mod:`~shap_rsq.models.shap_trees`): shap is then given the fixed trees.
    shap_interactions_wrong : bool
        Whether only shap's interaction values miss those fixes (shap computes them on its own
        parse of the trees, its SHAP values through the library): they come from the fixed trees.
    shap_tree_limit : int or None
        The ``tree_limit`` shap's own calls get when the caller gives none, where shap's default
        stops before the trees the model predicts with (an early-stopped ``xgboost.Booster``:
        shap stops at ``best_iteration``, ``Booster.predict`` uses every round).
    tree_outputs : ndarray of int or None
        The output each tree adds to, where shap's parse puts tree ``i``'s leaf values under output
        ``i % n_outputs`` and that is wrong; ``None`` where it is right.
    """

    shap_model: Any
    trees: Any
    n_features: int
    feature_names: list[str] | None
    tree_limit: int | None
    predict: Callable[[Any], np.ndarray]
    family: str
    adjust: Callable[[Forest], Forest] | None = None
    outputs: tuple[str, ...] = ()
    classes: np.ndarray | None = None
    bases: tuple[float, ...] | None = None
    shap_explains_wrong: bool = False
    shap_interactions_wrong: bool = False
    shap_tree_limit: int | None = None
    tree_outputs: np.ndarray | None = None

    @property
    def n_outputs(self) -> int:
        """The number of outputs: classes of a classifier, targets of a multi-output regressor, else 1.

        Returns
        -------
        int
            At least 1.
        """
        return max(1, len(self.outputs))

    @property
    def by_output(self) -> bool:
        """Whether the target is played output by output: a multi-output regressor, or a classifier
        (even one fitted on a single class, whose one output is still a class probability over a
        one-hot target, not a regression on the labels).

        Returns
        -------
        bool
            True for classifiers and models with several outputs.
        """
        return self.n_outputs > 1 or self.classes is not None


def as_names(values) -> list[str] | None:
    """Feature names as strings, or ``None`` when the model recorded none.

    Parameters
    ----------
    values : sequence or None
        Names as the library stores them.

    Returns
    -------
    list of str or None
        The names.
    """
    return None if values is None else [str(v) for v in values]


BOOSTED_CLASSIFIER = (
    "its probabilities are a sigmoid or softmax of a sum of trees, not a sum of trees, so their squared error "
    "(the Brier score) has no exact Shapley decomposition.  Use a forest classifier (DecisionTreeClassifier, "
    "RandomForestClassifier, ExtraTreesClassifier), or a squared-error regressor fitted on the 0/1 target."
)
# a booster read from a file is no XGBClassifier: its objective says it was a classifier
_CLASSIFIER_OBJECTIVES = ("binary", "multi", "reg:logistic", "cross_entropy", "xentropy", "Logloss", "CrossEntropy")


def refuse(family: str, what: str, value: Any) -> None:
    """Raise the error for a model setting the R² decomposition cannot take.

    Parameters
    ----------
    family : str
        The model, as named in the message (``"XGBoost model"``).
    what : str
        The setting.
    value : object
        Its value.

    Raises
    ------
    UnsupportedModelError
        Always.
    """
    if what in ("objective", "loss_function") and str(value).startswith(_CLASSIFIER_OBJECTIVES):
        raise UnsupportedModelError(f"{family} with {what}={value!r} is a boosted classifier: {BOOSTED_CLASSIFIER}")
    raise UnsupportedModelError(
        f"{family} with {what}={value!r} is not supported: the R² decomposition needs a "
        "single-output regressor fitted with squared error."
    )
