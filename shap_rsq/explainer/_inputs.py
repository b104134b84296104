"""The model's record and the rows, target and weights of a call that needs R², checked.

A mixin of :class:`~shap_rsq.RSquaredExplainer`.  For a model whose R² has no exact decomposition
(the explainer is then shap's alone) the record raises the reason, so every call that needs R²
stops there, before it reads its inputs.
"""

from __future__ import annotations

import numpy as np

from ..engine.rows import check_rows
from ..engine.validation import check_target, check_weights, ratio_weights, weighted_mean
from ..models.inspect import ModelInfo, UnsupportedModelError

__all__ = ["ExplainerInputs"]


class ExplainerInputs:
    """Mixin of :class:`~shap_rsq.RSquaredExplainer`: the model's record and checked inputs."""

    _model_info: ModelInfo | None = None  # None where the explainer is shap's alone
    _unsupported: str | None = None  # why, then: the message of every call that needs R²

    @property
    def model_info(self) -> ModelInfo:
        """What the explainer read from the model (:class:`~shap_rsq.models.info.ModelInfo`).

        Raises
        ------
        UnsupportedModelError
            For a model whose R² has no exact decomposition (the explainer is then shap's alone).
        """
        if self._model_info is None:
            raise UnsupportedModelError(self._unsupported)
        return self._model_info

    @model_info.setter
    def model_info(self, info: ModelInfo) -> None:
        self._model_info = info

    def _inputs(self, X, y, sample_weight):
        rows, target, weights = self._rows_target_weights(X, y, sample_weight, require_variance=True)
        sst = float(np.sum(weights * (target - weighted_mean(target, weights)) ** 2))
        return rows, target, weights, sst

    def _rows_target_weights(self, X, y, sample_weight, *, require_variance: bool):
        rows, weights = self._rows_weights(X, sample_weight, require_variance=require_variance)
        target = check_target(y, rows.array.shape[0], weights, require_variance=require_variance)
        return rows, target, weights

    def _rows_weights(self, X, sample_weight, *, require_variance: bool):
        """The rows in the model's order and their weights, for one output or several."""
        # R² needs two rows to vary; the loss decomposition is defined for one
        min_rows = 2 if require_variance else 1
        info = self.model_info
        names, precision = self._names_for_matching(), self.forest.input_dtype
        rows = check_rows(X, info.n_features, names, info.family, min_rows, precision)
        weights = check_weights(sample_weight, rows.array)
        if require_variance:  # R², a ratio: the loss decomposition keeps the weights' own scale
            weights = ratio_weights(weights)
        return rows, weights
