"""The names an :class:`~shap_rsq.RSquaredExplainer` matches columns by and labels its results with.

A mixin: which names a DataFrame's columns are matched to (the model's own, or the explainer's
``feature_names`` where the model's were made up for an array), the players of a grouped game,
and the feature names of the Explanations it returns.
"""

from __future__ import annotations

from typing import Any

from ..engine.columns import generic_names
from ..engine.rows import Rows
from ._groups import Players, resolve_groups

__all__ = ["ExplainerNames"]


class ExplainerNames:
    """Mixin of :class:`~shap_rsq.RSquaredExplainer`: the names of its features and players."""

    def _names_for_matching(self) -> list[str] | None:
        # names given to the constructor count as the model's own when the model recorded none, or
        # only names its library made up for an array (LightGBM's Column_0, CatBoost's '0', ...)
        recorded = self.model_info.feature_names
        if recorded is None or (self.feature_names is not None and generic_names(recorded, self.model_info.family)):
            return self.feature_names
        return recorded

    def _players(self, groups: Any, rows: Rows | None) -> Players | None:
        """The players of a grouped game, columns named as in ``X`` (or as the model names them)."""
        if groups is None:
            return None
        if rows is None or rows.columns is None:
            return resolve_groups(groups, self._names_for_matching(), self.model_info.n_features)
        return resolve_groups(groups, rows.columns, self.model_info.n_features, rows.labels, rows.order)

    def _explanation_names(self, names: Any, groups: Any, n_players: int) -> list[str]:
        """The Explanation's feature names: the columns' (or players') labels, else for an array
        the grouped players' names or the explainer's feature names."""
        if names is not None:
            return [str(name) for name in names]  # shap's plots write them as text
        if groups is not None:  # a grouped game's players: the groups, then the ungrouped features
            return self._players(groups, None).names
        return self._array_names(n_players)

    def _array_names(self, n_features: int) -> list[str]:
        if self.feature_names is not None and len(self.feature_names) == n_features:
            return list(self.feature_names)
        return [f"Feature {j}" for j in range(n_features)]
