"""shap's own calls (no ``y``) on an :class:`~shap_rsq.RSquaredExplainer`: what they are given.

Without ``y`` the explainer is shap's ``TreeExplainer``.  Two gaps of shap are filled here: a
DataFrame whose columns come in another order than the model's is read by position (its columns
are put back in the model's order, by name), and for some models shap's reading misses a fix made
when the trees are read (:mod:`~shap_rsq.models.shap_trees`): those calls explain the fixed trees.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import shap

from .engine.budget import check_shap_output
from .engine.columns import aligned_frame
from .models.shap_trees import forest_model

__all__ = ["PredictionShap"]


class PredictionShap:
    """Mixin of :class:`~shap_rsq.RSquaredExplainer`: the rows and trees shap's own calls are given."""

    _fixed_trees_explainer: shap.TreeExplainer | None = None

    def _fixed_shap(self) -> shap.TreeExplainer:
        """shap's explainer of the trees as read and fixed here, for the calls where shap's own
        reading of the model misses a fix (:attr:`ModelInfo.shap_interactions_wrong`)."""
        if self._fixed_trees_explainer is None:
            self._fixed_trees_explainer = shap.TreeExplainer(
                forest_model(self.forest), feature_perturbation="tree_path_dependent", feature_names=self.feature_names
            )
        return self._fixed_trees_explainer

    def _aligned(self, X: Any, interactions: bool = False) -> Any:
        """``X`` for shap's prediction SHAP values: a DataFrame's columns in the model's order, once
        shap's result for it is known to fit the memory budget (shap forms it in one piece)."""
        shape = np.shape(X)
        n_rows = shape[0] if len(shape) > 1 else 1
        info = self.model_info
        check_shap_output(n_rows, info.n_features, info.n_outputs, interactions, self._tuning.memory_budget)
        return aligned_frame(X, self._names_for_matching(), info.family)
