"""What the rest of the library is told about a model, and the error for models it cannot decompose."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exceptions import UnsupportedModelError
from .categories import CategoricalModel
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
    loss : str
        The loss the model was boosted with, of its margin (the sum of its trees):
        ``"squared_error"`` (exact games of R²; also forest classifiers' Brier score), or
        ``"log_loss"``, ``"poisson"``, ``"gamma"``, ``"tweedie"`` (second-order games of D²).
        A boosted classifier has ``classes`` and ``loss="log_loss"``: one output (its margin) when
        binary, one per class (a softmax) otherwise; ``predict`` then gives the margins.
    loss_power : float
        Tweedie's variance power (``loss="tweedie"``).
    categorical : CategoricalModel or None
        The model's categorical features (how their values become codes) and its splits on
        sets of categories (:mod:`~shap_rsq.models.categories`); ``None`` without any.
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
    loss: str = "squared_error"
    loss_power: float = 0.0

    @property
    def second_order(self) -> bool:
        """Whether the games are second-order expansions of a booster's loss (not squared error).

        Returns
        -------
        bool
            True for boosted classifiers and Poisson, Gamma and Tweedie boosters.
        """
        return self.loss != "squared_error"

    categorical: CategoricalModel | None = None

    @property
    def categorical_columns(self) -> dict:
        """The categorical features by position (empty without any).

        Returns
        -------
        dict of int to CategoricalColumn
            How each one's values become codes.
        """
        return {} if self.categorical is None else self.categorical.features

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
            True for forest classifiers and models with several outputs (a boosted classifier's
        classes share one softmax game instead).
        """
        return (self.n_outputs > 1 or self.classes is not None) and not self.second_order


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
    "its probability is a weighted vote of its estimators, not the link of a margin boosted on a loss, so "
    "neither its Brier score nor a second-order expansion of a loss decomposes.  Use a gradient-boosted "
    "classifier (HistGradientBoostingClassifier, XGBClassifier, LGBMClassifier, CatBoostClassifier) or a "
    "forest classifier (RandomForestClassifier, ExtraTreesClassifier)."
)
NO_SECOND_DERIVATIVE = (
    "its loss has no usable second derivative (absolute error and quantile losses are piecewise linear, "
    "with a Hessian of zero; ranking and survival objectives are no loss of each row's own prediction), so "
    "neither its R² nor a second-order expansion of its loss decomposes.  Supported losses: squared error, "
    "log-loss (classifiers, cross-entropy), Poisson, Gamma and Tweedie."
)
# losses of a row's prediction that are piecewise linear, or not a loss of each row alone
_NO_SECOND_DERIVATIVE = (
    "reg:absoluteerror",
    "reg:quantileerror",
    "rank",
    "survival",
    "binary:hinge",
    "multi:softmax_hinge",
    "l1",
    "regression_l1",
    "mae",
    "mean_absolute_error",
    "quantile",
    "lambdarank",
    "rank_xendcg",
    "huber",
    "fair",
    "absolute_error",
    "MAE",
    "Quantile",
    "MultiQuantile",
    "Expectile",
    "YetiRank",
    "PairLogit",
    "QueryRMSE",
    "QuerySoftMax",
    "Huber",
    "Lq",
    "LogLinQuantile",
    "MAPE",
    "mape",
)


def refuse(family: str, what: str, value: Any) -> None:
    """Raise the error for a model setting that cannot be decomposed.

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
    if str(value).startswith(_NO_SECOND_DERIVATIVE):
        raise UnsupportedModelError(f"{family} with {what}={value!r} is not supported: {NO_SECOND_DERIVATIVE}")
    raise UnsupportedModelError(
        f"{family} with {what}={value!r} is not supported: the decomposition needs a model fitted with squared "
        "error, or a booster of log-loss, Poisson, Gamma or Tweedie deviance."
    )
