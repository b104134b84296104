"""What a call of :class:`~shap_rsq.RSquaredExplainer` that needs R² reads: the model's record,
the names its columns are matched by, and its rows, target and weights, checked.

One :class:`CallInputs` per explainer, made once the model is known to have an exact
decomposition; the explainer asks it for everything a call reads before any work starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine.columns import generic_names
from ..engine.rows import Rows, check_rows
from ..engine.validation import check_target, check_weights, ratio_weights, weighted_mean
from ..models.inspect import ModelInfo
from ._groups import Players, resolve_groups

__all__ = ["CallInputs"]


@dataclass(frozen=True)
class CallInputs:
    """The model's record and the names of its features, and the checks of a call's inputs.

    Parameters
    ----------
    info : ModelInfo
        What was read from the model.
    feature_names : list of str or None
        The names given to the explainer (checked against the model's), else the model's own.
    precision : numpy.dtype
        The precision the model compares rows in (rows are checked to be representable in it).
    """

    info: ModelInfo
    feature_names: list[str] | None
    precision: np.dtype

    def names_for_matching(self) -> list[str] | None:
        """The names a DataFrame's columns are matched to.

        Returns
        -------
        list of str or None
            The model's recorded names; the explainer's ``feature_names`` where the model recorded
            none, or only names its library made up for an array (LightGBM's ``Column_0``,
            CatBoost's ``'0'``, ...).
        """
        recorded = self.info.feature_names
        if recorded is None or (self.feature_names is not None and generic_names(recorded, self.info.family)):
            return self.feature_names
        return recorded

    def rows_weights(self, X: Any, sample_weight: Any, *, require_variance: bool) -> tuple[Rows, np.ndarray]:
        """The rows in the model's order and their weights, for one output or several.

        Parameters
        ----------
        X : array-like or DataFrame
            The rows.
        sample_weight : array-like or None
            Row weights.
        require_variance : bool
            True for R² (a ratio, which needs two rows and keeps only the weights' ratios); False
            for the loss reduction, defined on one row and on the weights' own scale.

        Returns
        -------
        rows : Rows
            The checked rows.
        weights : ndarray of shape (n_rows,)
            The checked weights.
        """
        min_rows = 2 if require_variance else 1
        names, info = self.names_for_matching(), self.info
        rows = check_rows(X, info.n_features, names, info.family, min_rows, self.precision, info.categorical_columns)
        weights = check_weights(sample_weight, rows.array)
        if require_variance:
            weights = ratio_weights(weights)
        return rows, weights

    def rows_target_weights(
        self, X: Any, y: Any, sample_weight: Any, *, require_variance: bool
    ) -> tuple[Rows, np.ndarray, np.ndarray]:
        """The rows, the target and the weights of a call, checked against each other.

        Parameters
        ----------
        X, y, sample_weight
            As passed to the call.
        require_variance : bool
            As in :meth:`rows_weights`; R² also needs a target that varies.

        Returns
        -------
        rows : Rows
        target : ndarray of shape (n_rows,)
        weights : ndarray of shape (n_rows,)
        """
        rows, weights = self.rows_weights(X, sample_weight, require_variance=require_variance)
        target = check_target(y, rows.array.shape[0], weights, require_variance=require_variance)
        return rows, target, weights

    def for_rsq(self, X: Any, y: Any, sample_weight: Any) -> tuple[Rows, np.ndarray, np.ndarray, float]:
        """The rows, target and weights of an R² call, with the weighted total sum of squares.

        Parameters
        ----------
        X, y, sample_weight
            As passed to the call.

        Returns
        -------
        rows, target, weights
            As :meth:`rows_target_weights` returns them.
        sst : float
            ``sum w (y - mean_w y)²``, the denominator of R².
        """
        rows, target, weights = self.rows_target_weights(X, y, sample_weight, require_variance=True)
        sst = float(np.sum(weights * (target - weighted_mean(target, weights)) ** 2))
        return rows, target, weights, sst

    def players(self, groups: Any, rows: Rows | None) -> Players | None:
        """The players of a grouped game, columns named as in ``X`` (or as the model names them).

        Parameters
        ----------
        groups : mapping or None
            ``groups=`` as passed to the call.
        rows : Rows or None
            The call's checked rows, whose column labels the groups may use; None for names alone.

        Returns
        -------
        Players or None
            None for the game of single features.
        """
        if groups is None:
            return None
        if rows is None or rows.columns is None:
            return resolve_groups(groups, self.names_for_matching(), self.info.n_features)
        return resolve_groups(groups, rows.columns, self.info.n_features, rows.labels, rows.order)

    def explanation_names(self, names: Any, groups: Any, n_players: int) -> list[str]:
        """The feature names of an Explanation.

        Parameters
        ----------
        names : sequence or None
            The columns' (or players') labels of a DataFrame's call, else None.
        groups : mapping or None
            ``groups=`` as passed to the call.
        n_players : int
            The Explanation's number of columns.

        Returns
        -------
        list of str
            The labels as text (shap's plots write them so); for an array, the grouped players'
            names or the explainer's feature names (``"Feature j"`` where it has none).
        """
        if names is not None:
            return [str(name) for name in names]
        if groups is not None:  # a grouped game's players: the groups, then the ungrouped features
            return self.players(groups, None).names
        if self.feature_names is not None and len(self.feature_names) == n_players:
            return list(self.feature_names)
        return [f"Feature {j}" for j in range(n_players)]
