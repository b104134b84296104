"""What a fitted :class:`~shap_rsq.RSquaredSelector` keeps and reports: its support, the cut-off in
force, the bootstrap selection frequency and the summary table.

A mixin, so that ``threshold`` and ``max_features`` set after ``fit`` apply at once, as in
``SelectFromModel`` (the shares are kept; the rule is read from the parameters on every call).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted

from ._bootstrap import selection_frequency
from ._groups import first_columns, player_support, summary_table
from ._selection_rule import check_max_features, threshold_rule

__all__ = ["SelectorSupport"]


class SelectorSupport:
    """Mixin of :class:`~shap_rsq.RSquaredSelector`: the selection rule applied to the fitted shares."""

    def _get_support_mask(self) -> np.ndarray:
        if getattr(self, "prefit", False):  # unlike SelectFromModel's: the shares need y
            message = (
                "This RSquaredSelector(prefit=True) has no shares yet: call fit(X, y) first, which decomposes "
                "the fitted estimator's R² on (X, y) without refitting it."
            )
            check_is_fitted(self, msg=message)
        check_is_fitted(self)
        # a column the screen dropped is not in estimator_: its share 0 is not a reason to keep it,
        # even above the negative out-of-fold shares of columns the screen kept
        screened = getattr(self, "screen_support_", None)
        rule = threshold_rule(self.threshold)
        return player_support(self.player_rsq_, rule, self._limit(), self.player_of_feature_, screened)

    def _limit(self) -> int | None:
        """The ``max_features`` in force: an int as set now (like ``threshold``), a callable's value in ``fit``."""
        if self.max_features is None:
            return None
        if not callable(self.max_features):
            return check_max_features(self.max_features, None)
        if not hasattr(self, "max_features_"):
            raise NotFittedError("max_features was set to a callable after fit; call fit to evaluate it on X.")
        return self.max_features_

    @property
    def threshold_(self) -> float:
        """The cut-off applied to ``player_rsq_`` (recomputed, so ``set_params(threshold=...)`` applies)."""
        check_is_fitted(self)
        return threshold_rule(self.threshold)(self.player_rsq_)

    @property
    def selection_frequency_(self) -> np.ndarray:
        """Fraction of bootstrap replicates in which each feature (its player) is selected by the same rule."""
        if not hasattr(self, "bootstrap_rsq_"):
            raise AttributeError("selection_frequency_ is only available after fitting with uncertainty='bootstrap'.")
        players = first_columns(self.player_of_feature_)
        kept = getattr(self, "bootstrap_screen_support_", None)
        kept = None if kept is None else kept[:, players]
        rule, limit = threshold_rule(self.threshold), self._limit()
        return selection_frequency(self.bootstrap_rsq_[:, players], kept, rule, limit)[self.player_of_feature_]

    def summary(self, input_features: Any = None) -> pd.DataFrame:
        """One row per feature (per player with ``feature_groups``), largest share first.

        Parameters
        ----------
        input_features : array-like of str, optional
            Names for the features, as in :meth:`get_feature_names_out`; by default the column
            names seen in ``fit``, or ``x0, x1, ...`` for arrays.  Groups keep their own names.

        Returns
        -------
        pandas.DataFrame
            Columns ``rsq``, ``se`` (with ``uncertainty``), ``selection_frequency`` (with the bootstrap),
            ``screen_rsq`` (with ``screen``), ``selected`` and, with ``feature_groups``, ``n_columns``,
            indexed by feature (or player) name.
        """
        check_is_fitted(self)
        return summary_table(self, _check_feature_names_in(self, input_features))
