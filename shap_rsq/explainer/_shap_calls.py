"""shap's own calls (no ``y``) on an :class:`~shap_rsq.RSquaredExplainer`: what they are given.

Without ``y`` the explainer is shap's ``TreeExplainer``.  Two gaps of shap are filled here: shap
reads a DataFrame whose columns come in another order than the model's by position (here its
columns are matched to the model's features by name, and the values come back in the DataFrame's
own column order), and for some models shap's reading misses a fix made when the trees are read
(:mod:`~shap_rsq.models.shap_trees`): those calls explain the fixed trees.

shap's class is taken from the module that defines it, here alone (:data:`ShapTreeExplainer`): code
that swaps the explainer in with ``shap.TreeExplainer = RSquaredExplainer`` makes the global name
point at this package's class, and a call through it would come back here.  shap's own calls are
not held to ``memory_budget``: it bounds the R² calls, which are this package's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import shap
from shap.explainers._tree import TreeExplainer as ShapTreeExplainer
from shap.utils._exceptions import InvalidModelError

from ..engine.columns import aligned_frame, in_input_order
from ..engine.run import tree_shap_function
from ..engine.validation import check_width
from ..models.shap_trees import outputs_model

__all__ = [
    "ROUTED_INTERACTIONS",
    "PredictionShap",
    "ShapTreeExplainer",
    "background_by_name",
    "explanation_in_input_order",
]

ROUTED_INTERACTIONS = (
    "SHAP interaction values of the predictions are not available for this model: shap reads its categorical "
    "splits wrong (or sums a random forest's trees), and the trees as read here split on sets of categories, "
    "which shap's TreeSHAP cannot play as one feature.  Interaction shares of R² (with y) are exact; SHAP values "
    "of the predictions (interactions=False) are computed here."
)


class PredictionShap:
    """Mixin of :class:`~shap_rsq.RSquaredExplainer`: the rows and trees shap's own calls are given."""

    _fixed_trees_explainer: ShapTreeExplainer | None = None

    def _explain_predictions_only(self, model: Any, data: Any, shap_options: dict, error: Exception) -> None:
        """Be shap's ``TreeExplainer`` of ``model`` alone (``data`` and ``shap_options`` as shap takes
        them), for a model whose R² has no exact decomposition (``error`` says why; every call with
        ``y`` raises it).  A model shap cannot explain either is refused with shap's message and
        ``error``'s, as an :class:`~shap_rsq.UnsupportedModelError` (a subclass of shap's
        ``InvalidModelError``); shap's other errors (a bad ``feature_perturbation``) are shap's."""
        recorded = _recorded_names(model)
        try:
            ShapTreeExplainer.__init__(self, model, background_by_name(data, *recorded), **shap_options)
        except Exception as shap_error:
            if _shap_reads(model):  # the model is fine: shap refuses the options, with its own error
                raise
            # shap's loader fails on it (an InvalidModelError, or a bare IndexError on a booster
            # without trees): ours says why first, then shap's words, and is an InvalidModelError too
            shaps = f"  (shap.TreeExplainer: {shap_error})" if isinstance(shap_error, InvalidModelError) else ""
            raise type(error)(f"{error}{shaps}") from None
        self.feature_names = shap_options.get("feature_names")
        self._unsupported = str(error)
        self._recorded = recorded
        self._recorded_width = _fitted_width(model)

    @property
    def expected_value(self) -> Any:
        """shap's expected value of the model's predictions (set by shap's own calls)."""
        value = self._expected_value
        # shap's generic reading of the fixed trees it is handed keeps one value per output, as an
        # array: a single-output model's is a number, as shap gives for the model itself
        info = self._model_info
        if info is not None and info.shap_explains_wrong and info.n_outputs == 1 and np.size(value) == 1:
            return np.float64(np.ravel(value)[0])
        return value

    @expected_value.setter
    def expected_value(self, value: Any) -> None:
        self._expected_value = value

    def _shap_tree_limit(self, tree_limit: int | None) -> int | None:
        """The ``tree_limit`` shap's own calls are given: the caller's, or, left out, the rounds the
        model predicts with where shap's default stops earlier (:attr:`ModelInfo.shap_tree_limit`).

        Refused where shap is handed the trees as read and fixed here: they are one ensemble, and
        the first trees of it are not what the model predicts with fewer iterations.
        """
        if self._model_info is None:
            return tree_limit
        if tree_limit is not None and self.model_info.shap_explains_wrong:
            raise ValueError(
                f"tree_limit is not available for this {self.model_info.family} model: shap's own reading of it "
                "is wrong, so shap is given the trees as read and fixed here (docs/models.md), which know no "
                "iterations.  Leave tree_limit out."
            )
        return self.model_info.shap_tree_limit if tree_limit is None else tree_limit

    def _fixed_shap(self) -> ShapTreeExplainer:
        """shap's explainer of the trees as read and fixed here, for the calls where shap's own
        reading of the model misses a fix (:attr:`ModelInfo.shap_interactions_wrong`), with the
        explainer's background data and feature perturbation."""
        if self._fixed_trees_explainer is None:
            self._fixed_trees_explainer = ShapTreeExplainer(
                outputs_model(self.forests),
                self.data,
                feature_perturbation=self.feature_perturbation,
                feature_names=self.feature_names,
            )
        return self._fixed_trees_explainer

    def _routed_for_shap(self) -> bool:
        """Whether shap's calls run on the fixed trees of a model with categorical splits, which read
        routing columns (:mod:`~shap_rsq.models.categories`): rows go to shap as routing rows, and
        each routing column's values back to its feature."""
        info = self._model_info
        return info is not None and info.categorical is not None and info.shap_explains_wrong

    def _routed_shap_values(self, X: Any):
        """Path-dependent SHAP values of the predictions of a model with categorical splits whose
        trees shap is handed fixed: computed here, each feature one player with its routing columns
        (shap's TreeSHAP would play each column apart, another game), and the rows as checked."""
        rows = self._inputs.rows_weights(X, None, require_variance=False)[0]
        outputs = [_routed_tree_shap(forest, rows.array) for forest in self.forests]
        # several outputs (a softmax's classes) stack on the last axis, as shap's own values do
        return (outputs[0] if len(outputs) == 1 else np.stack(outputs, axis=-1)), rows

    def _routed_explanation(self, X, interactions: bool) -> shap.Explanation:
        """The Explanation of SHAP values of a model with categorical splits whose trees shap is
        handed fixed (:meth:`_routed_shap_values`); data: the rows' codes."""
        if interactions:
            raise ValueError(ROUTED_INTERACTIONS)
        values, rows = self._routed_shap_values(X)
        explanation = shap.Explanation(
            values=values,
            base_values=np.broadcast_to(self.expected_value, (len(values), *np.shape(self.expected_value))).copy(),
            data=rows.array,
            feature_names=rows.columns or self.feature_names or self.model_info.feature_names,
        )
        return explanation_in_input_order(explanation, rows.order)

    def shap_values(
        self, X: Any, y: Any = None, tree_limit=None, approximate=False, check_additivity=True, from_call=False
    ):
        """shap's SHAP values of ``X``, or, for a model with categorical splits whose trees shap is
        handed fixed, those computed here.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to explain (aligned to the model by the explainer, or as given for such a model).
        y : None
            shap's parameter (unused by shap).
        tree_limit, approximate, check_additivity, from_call
            shap's parameters.

        Returns
        -------
        ndarray of shape (n_samples, n_features) or (n_samples, n_features, n_outputs)
            SHAP values of the predictions (in ``X``'s column order for such a model), one slice a
            class of a softmax.
        """
        if self._routed_for_shap():
            values, rows = self._routed_shap_values(X)
            return in_input_order(values, rows.order)
        return super().shap_values(X, y, tree_limit, approximate, check_additivity, from_call)

    def __call__(self, X: Any, y: Any = None, interactions=False, check_additivity=True, approximate=False):
        """shap's Explanation of ``X``, or, for a model with categorical splits whose trees shap is
        handed fixed, :meth:`_routed_explanation`.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Rows to explain.
        y : None
            shap's parameter (unused by shap).
        interactions, check_additivity, approximate : bool
            shap's parameters.

        Returns
        -------
        shap.Explanation
            SHAP values of the predictions.
        """
        if self._routed_for_shap():
            return self._routed_explanation(X, interactions)
        return super().__call__(
            X, y, interactions=interactions, check_additivity=check_additivity, approximate=approximate
        )

    def _aligned(self, X: Any) -> tuple[Any, list[int] | None]:
        """``X`` for shap's prediction SHAP values, a DataFrame's columns in the model's order, and
        that order (:func:`~shap_rsq.engine.columns.in_model_order`).  A model with categorical
        splits whose trees shap is handed fixed takes ``X`` as it is (:meth:`shap_values`)."""
        if self._routed_for_shap():
            return X, None
        info = self._model_info
        if info is None:  # shap's explainer alone: a frame matched by the names the model recorded
            names, family = self._recorded
            aligned = aligned_frame(X, names, family) if names is not None else (X, None)
            _check_width(aligned[0], self._recorded_width)
            return aligned
        aligned = aligned_frame(X, self._inputs.names_for_matching(), info.family)
        _check_width(aligned[0], info.n_features)
        return aligned


def _routed_tree_shap(forest, rows: np.ndarray) -> np.ndarray:
    """Path-dependent SHAP values ``(n, players)`` of one forest's trees on checked rows, each feature
    one player with its routing columns."""
    routed = forest.routing_rows(rows)
    values = np.zeros((len(routed), forest.n_players))
    for tree in forest.trees:
        values += tree_shap_function(tree, forest.n_players, forest.input_dtype)(routed)
    return values


def _shap_reads(model: Any) -> bool:
    """Whether shap's explainer takes ``model`` with its default options."""
    try:
        ShapTreeExplainer(model, feature_perturbation="tree_path_dependent")
    except Exception:  # any failure of shap's loader: the model is what it cannot read
        return False
    return True


def _check_width(X: Any, n_features: int | None) -> None:
    """Refuse rows whose width is not the model's, as the calls with ``y`` do.

    shap does not check it: with fewer columns its interaction values came back without an error
    and wrong (8.3 off the predictions on a random forest), with more the extra columns got
    zeros, and XGBoost aborted the whole process (``free(): invalid next size``).  Inputs
    without a shape (an ``xgboost.DMatrix``, a ``catboost.Pool``) go to shap as they are.
    """
    shape = np.shape(X) if hasattr(X, "shape") else ()
    if n_features is not None and len(shape) in (1, 2):
        check_width(shape[-1], n_features)


def _fitted_width(model: Any) -> int | None:
    """The number of features a model shap explains was fitted on, where it says (scikit-learn's
    ``n_features_in_``, which XGBoost's, LightGBM's and CatBoost's estimators set too, or a
    booster's own count); ``None`` where it does not."""
    width = getattr(model, "n_features_in_", None)
    for method in ("num_features", "num_feature"):  # xgboost.Booster, lightgbm.Booster
        if width is None and callable(getattr(model, method, None)):
            width = getattr(model, method)()
    return None if width is None else int(width)


def _recorded_names(model: Any) -> tuple[list[str] | None, str]:
    """The feature names a model shap explains recorded (scikit-learn's ``feature_names_in_``, which
    XGBoost's and LightGBM's estimators set too, or CatBoost's ``feature_names_``), and its library.

    Where the explainer is shap's alone, a DataFrame whose columns came in another order was read by
    position: an ``XGBClassifier``'s values went to other columns' names (XGBoost's own predict
    refuses that frame).
    """
    family = type(model).__module__.split(".")[0]
    names = getattr(model, "feature_names_in_", None)
    if names is None and family == "catboost":
        names = getattr(model, "feature_names_", None)
    return (None if names is None else [str(name) for name in names]), family


def background_by_name(data: Any, names: list[str] | None, family: str) -> Any:
    """Background ``data`` as shap is given it: a pandas DataFrame's columns in the model's order
    (``names``, matched by name as the rows of every call are), anything else as it is.

    shap reads a background frame by position: with its columns in another order, each feature's
    background would be another feature's values.
    """
    if not isinstance(data, pd.DataFrame) or names is None:
        return data
    return aligned_frame(data, names, family)[0]


def explanation_in_input_order(
    explanation: shap.Explanation, order: list[int] | None, interactions: bool = False
) -> shap.Explanation:
    """``explanation`` (values, data and feature names in the model's order) with its features in the
    order of the columns it was computed from, as its values are in :meth:`shap_values`'s array."""
    if order is None:
        return explanation
    back = np.argsort(order)
    explanation.values = in_input_order(explanation.values, order, (1, 2) if interactions else (1,))
    if explanation.data is not None:
        explanation.data = in_input_order(explanation.data, order)
    if explanation.feature_names is not None:
        explanation.feature_names = [explanation.feature_names[j] for j in back]
    return explanation
